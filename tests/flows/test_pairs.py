"""A pairs task end to end: a table of two texts and the pair's label trains scratch and pretrained depths (a BERT
whose token types tell the two texts apart), registers the chosen one, and the registered model labels pairs from
raw text where depthfinder cannot be imported; `depthfinder predict` takes a pair per --text and --pair; an
unlabelled pool of pairs is audited like a split (a pair sharing a text with a validation or test pair, or copying a
train pair in either order, left out); a pool without the pair column is one line and exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from depthfinder.cli.main import main
from depthfinder.expectations.table.datasets import DATASETS
from depthfinder.flows.summary import RunSummary
from tests.encoder.tiny_checkpoint import tiny_checkpoint

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")
CONFIG = """
data: {{path: pairs.csv, task: pairs, text_col: first, pair_col: second}}
model: {{d_model: 16, n_heads: 2, d_ff: 32, vocab_size: 300, max_len: 40, pretrained: {checkpoint}}}
train: {{max_epochs: 1, min_epochs: 1, patience: 1, batch_size: 16, learning_rate: 0.003, finetune_max_epochs: 1,
        finetune_min_epochs: 1, finetune_patience: 1}}
sweep: {{depths: [1, 2], families: [scratch, pretrained], crossfit: off, halving: off, distill: off}}
"""
# Load the registered model with depthfinder made unimportable, and label the pairs given as JSON.
ALONE = """
import json, sys
sys.modules["depthfinder"] = None
import mlflow, pandas as pd
mlflow.set_tracking_uri(sys.argv[1])
model = mlflow.pyfunc.load_model(sys.argv[2])
pairs = json.loads(sys.argv[3])
labels = model.predict(pd.DataFrame(pairs, columns=["text", "pair"]))["label"].tolist()
try:
    model.predict(pd.DataFrame({"text": [first for first, _ in pairs]}))
    refused = ""
except Exception as error:
    refused = str(error)
print(json.dumps({"labels": labels, "inputs": [c["name"] for c in model.metadata.get_input_schema().to_dict()],
                  "refused": refused}))
"""
PAIRS = [["the chef baked a chocolate cake", "the baker roasted the garlic"],
         ["the pilot booked the night bus", "the sysadmin updated the kernel"]]


PLANTED = 30  # labelled pairs planted in the pool, swapped and shouted


@pytest.fixture(scope="module")
def run(prefect_server, tmp_path_factory) -> tuple[Path, RunSummary]:
    folder = tmp_path_factory.mktemp("pairs")
    table = DATASETS["same-topic"].generate(240, 1).rename(columns={"text": "first", "pair": "second"})
    table.to_csv(folder / "pairs.csv", index=False)
    fresh = DATASETS["same-topic"].generate(150, 2)  # other draws: some share a text with a labelled pair
    planted = pd.DataFrame({"first": table["second"][:PLANTED].str.upper(), "second": table["first"][:PLANTED]})
    pd.concat([fresh.rename(columns={"text": "first", "pair": "second"})[["first", "second"]], planted]).to_csv(
        folder / "pool.csv", index=False)
    texts = [*table["first"], *table["second"]]
    checkpoint = tiny_checkpoint(folder / "bert", texts, layers=2, type_vocab_size=2)
    (folder / "run.yaml").write_text(CONFIG.format(checkpoint=checkpoint))
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        assert main(["run", "--config", "run.yaml", "--unlabeled", "pool.csv", "--summary-json", "summary.json"]) == 0
    return folder, RunSummary.from_dict(json.loads((folder / "summary.json").read_text()))


def test_pairs_train_scratch_and_pretrained_depths_and_register_the_choice(run) -> None:
    _, summary = run
    assert sorted((c.family, c.depth) for c in summary.candidates) == [
        ("bert", 1), ("bert", 2), ("scratch", 1), ("scratch", 2)]
    assert all(c.status == "trained" for c in summary.candidates)
    assert summary.model is not None and summary.model.version == "1" and summary.model.inputs == ["text", "pair"]


def test_the_model_card_shows_how_to_give_it_a_pair(run) -> None:
    from mlflow import MlflowClient

    folder, summary = run
    card = MlflowClient(tracking_uri=f"sqlite:///{folder / 'mlflow.db'}").get_model_version(
        "depthfinder", summary.model.version).description
    assert 'model.predict(pd.DataFrame({"text": ["..."], "pair": ["..."]}))' in card
    assert '--text "..." --pair "..."' in card


def test_the_registered_pair_model_labels_pairs_where_depthfinder_is_not_installed(run) -> None:
    folder, _ = run
    served = subprocess.run(
        [sys.executable, "-c", ALONE, f"sqlite:///{folder / 'mlflow.db'}", "models:/depthfinder@champion",
         json.dumps(PAIRS)], capture_output=True, text=True, cwd=folder, timeout=300, check=True)
    result = json.loads(served.stdout.strip().splitlines()[-1])
    assert result["inputs"] == ["text", "pair"]
    assert len(result["labels"]) == 2 and set(result["labels"]) <= {"same", "different"}
    assert "pair" in result["refused"]  # one column is not a pair


def test_predict_takes_a_pair_per_text_and_refuses_a_lone_text(run, capsys, monkeypatch) -> None:
    folder, _ = run
    monkeypatch.chdir(folder)
    command = ["predict", "--model", "models:/depthfinder@champion", "--text", PAIRS[0][0]]
    assert main([*command, "--pair", PAIRS[0][1]]) == 0
    assert capsys.readouterr().out.strip() in {"same", "different"}
    assert main(command) == 2
    assert "reads pairs: give --pair with each --text" in capsys.readouterr().err


def test_the_pool_of_pairs_leaves_out_every_pair_sharing_a_text_with_a_held_out_pair_and_copies_of_train_pairs(
        run) -> None:
    from depthfinder.expectations.table.normalize import normalize_text

    folder, summary = run
    assert summary.pool.texts == 150 + PLANTED
    assert summary.pool.of_held_out + summary.pool.of_train >= PLANTED
    assert summary.pool.used == summary.pool.texts - summary.pool.of_held_out - summary.pool.of_train > 0
    (prepared,) = (folder / ".depthfinder" / "data").glob("*.parquet")
    labelled = pd.read_parquet(prepared)
    held_out = {normalize_text(text) for column in ("text", "pair")
                for text in labelled.loc[labelled["split"] != "train", column]}
    train = {frozenset(map(normalize_text, pair)) for pair in zip(labelled["text"], labelled["pair"], strict=True)}
    (used,) = [path for path in (folder / ".depthfinder" / "pool").glob("*.parquet")]
    pool = pd.read_parquet(used)
    assert len(pool) == summary.pool.used
    for pair in zip(pool["text"], pool["pair"], strict=True):
        sides = frozenset(map(normalize_text, pair))
        assert not sides & held_out and sides not in train


def test_an_unlabelled_pool_without_the_pair_column_is_one_line_and_exit_2(run, capsys, monkeypatch) -> None:
    folder, _ = run
    monkeypatch.chdir(folder)
    (folder / "lone.csv").write_text("first\nthe chef baked\n")
    assert main(["run", "--config", "run.yaml", "--unlabeled", "lone.csv"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].endswith("lone.csv: no column 'second' (columns: first); set --pair-col")
