"""The search strategy end to end: one fine-tune of depth L with probes screens every depth 1..L, a few separate
fine-tunes confirm, the rule decides among the confirmed only, the summary and the sentence say which depths were
screened and which confirmed, and a rerun reuses every one of them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from depthfinder.cli.main import main
from depthfinder.expectations.table.datasets import DATASETS
from depthfinder.selection.search import Search
from tests.encoder.tiny_checkpoint import tiny_checkpoint

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")
CONFIG = """
data: {dataset: topics, dataset_rows: 400}
model: {max_len: 32}
train: {batch_size: 32, finetune_learning_rate: 0.003, finetune_max_epochs: 2, finetune_min_epochs: 2}
sweep: {strategy: search, tolerance: 0.1, crossfit: off}  # wider than the 41 validation rows resolve (about ±0.05)
"""


@pytest.fixture(scope="module")
def searched(prefect_server, tmp_path_factory) -> tuple[Path, dict, dict]:
    folder = tmp_path_factory.mktemp("search")
    checkpoint = tiny_checkpoint(folder / "tinybert", DATASETS["topics"].generate(400, 1)["text"], layers=4)
    (folder / "run.yaml").write_text(CONFIG)
    summaries = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        for name in ("first", "again"):
            args = ["run", "--config", "run.yaml", "--pretrained", str(checkpoint), "--summary-json", f"{name}.json"]
            assert main([*args, *(["--force"] if name == "again" else [])]) == 0
            summaries[name] = json.loads((folder / f"{name}.json").read_text())
    return folder, summaries["first"], summaries["again"]


def test_every_depth_is_screened_or_confirmed_and_the_rule_decides_among_the_confirmed(searched) -> None:
    _, summary, _ = searched
    (search,) = summary["search"]
    by_depth = {c["depth"]: c for c in summary["candidates"]}

    assert sorted(by_depth) == [1, 2, 3, 4]
    assert sorted(search["confirmed"] + search["screened"]) == [1, 2, 3, 4] and 4 in search["confirmed"]
    assert all(by_depth[d]["status"] == "screened" and by_depth[d]["cost"] is None for d in search["screened"])
    assert all(by_depth[d]["status"] == "trained" for d in search["confirmed"])
    assert summary["selected_depth"] in search["confirmed"]
    assert {s["depth"] for s in summary["rule"]["scores"]} == set(search["confirmed"])
    assert len(search["steps"]) == len(search["confirmed"]) - 1 <= 3  # about log2(4) confirmations
    sentence = Search.from_dict(search).sentence()
    assert sentence.startswith("tinybert depths 1-4 screened by one fine-tune of depth 4 with a probe on each "
                               f"layer; confirmed by separate fine-tunes: {', '.join(map(str, search['confirmed']))}")
    assert "not considered" not in summary["rule"]["reason"]  # screened depths are never candidates


def test_the_screen_is_the_depth_l_fine_tune_itself_and_a_rerun_reuses_every_confirmed_depth(searched) -> None:
    _, first, again = searched
    screen = next(c for c in first["candidates"] if c["depth"] == 4)

    assert [c["depth"] for c in screen["screen"]] == [1, 2, 3]  # its probes' view of the depths below
    assert {c["status"] for c in again["candidates"] if c["status"] != "screened"} == {"cached"}
    assert again["selected_depth"] == first["selected_depth"]
