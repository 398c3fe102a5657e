"""End to end: unlabelled texts as evidence, the texts to label, and their labels given back; the pool audited like a
split.

nested-ops-1 with a tiny encoder trained for a few epochs, tolerance 0.05: depth 1's mean on 63 validation rows is
within it and its interval is not (unsettled), and the two tiny depths disagree on most texts, so the pool cannot
bound it either: the run writes the texts to label. The second run is given their true labels (the built-in
generator's) and must reuse every candidate: labels are evidence, never training.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from mlflow import MlflowClient

from depthfinder.cli.main import main
from depthfinder.expectations.table.config import DataConfig
from depthfinder.expectations.table.datasets import get_dataset
from depthfinder.expectations.table.load import load_table
from depthfinder.expectations.table.normalize import normalize_text

# The labelled table the runs below read (CONFIG's data), whose texts a pool may copy.
LABELLED = DataConfig(dataset="nested-ops-1", dataset_rows=600)
PLANTED = 100  # texts of the labelled table planted in the pool, with other case and spacing

CONFIG = """
data: {dataset: nested-ops-1, dataset_rows: 600}
audit: {strict: false}
model: {d_model: 16, n_heads: 2, d_ff: 32, vocab_size: 300, max_len: 32}
train: {max_epochs: 6, patience: 2, batch_size: 32, learning_rate: 0.003}
sweep: {depths: [1, 2], tolerance: 0.05, metric: accuracy, distill: off, crossfit: off}
"""  # the pool as evidence alone; what distillation makes of a pool: tests/flows/test_distill.py


@pytest.fixture(scope="module")
def pooled(prefect_server, tmp_path_factory):
    """A run with a pool of 2,600 texts, then the same run given the labels of the texts it asked for (a half-written
    prediction left between them): (folder, exit codes, the pool's truth, the pool's predictions by file and
    modification time after the first run, and after the second)."""
    folder = tmp_path_factory.mktemp("pool")
    (folder / "tiny.yaml").write_text(CONFIG)
    truth = get_dataset("nested-ops-1").generate(2600, 7)  # other draws of the same source
    copies = [f"  {text.upper()} " for text in load_table(LABELLED)["text"][:PLANTED]]
    pd.DataFrame({"text": [*truth["text"], *copies]}).to_csv(folder / "pool.csv", index=False)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        codes = [main(["run", "--config", "tiny.yaml", "--unlabeled", "pool.csv", "--summary-json", "first.json"])]
        predicted = {path.name: path.stat().st_mtime_ns for path in (folder / ".depthfinder" / "pool").glob("*.npy")}
        (folder / ".depthfinder" / "pool" / "predicted-0.npy.partial").write_bytes(b"a run killed mid-write")
        asked = pd.read_csv(_summary(folder, "first")["rows_to_label"], keep_default_na=False)
        labels = truth.drop_duplicates("text").set_index("text")["label"]
        asked.assign(label=asked["text"].map(labels)).to_csv(folder / "labelled.csv", index=False)
        codes.append(main(["run", "--config", "tiny.yaml", "--unlabeled", "pool.csv", "--labels", "labelled.csv",
                           "--summary-json", "second.json"]))
    again = {path.name: path.stat().st_mtime_ns for path in (folder / ".depthfinder" / "pool").glob("*.npy")}
    yield folder, codes, truth, predicted, again


def _summary(folder: Path, name: str) -> dict:
    return json.loads((folder / f"{name}.json").read_text())


def _depth_1(summary: dict) -> dict:
    return next(s for s in summary["rule"]["scores"] if s["depth"] == 1)


def test_an_unsettled_depth_is_bounded_on_the_pool_and_the_texts_to_label_are_written(pooled) -> None:
    folder, codes, truth, _, _ = pooled
    summary = _summary(folder, "first")
    rule, cheap = summary["rule"], _depth_1(summary)
    labelled_table = set(pd.read_parquet(next((folder / ".depthfinder" / "data").glob("*.parquet")))["text"])

    assert codes == [0, 0]
    assert cheap["pool"] is not None and cheap["pool"]["rows"] == rule["unlabeled_rows"]
    pool = summary["pool"]
    assert pool["texts"] == len(truth) + PLANTED and pool["used"] == rule["unlabeled_rows"]
    assert pool["used"] == pool["texts"] - pool["of_held_out"] - pool["of_train"]
    assert pool["of_held_out"] + pool["of_train"] >= PLANTED  # every planted copy left out, and counted
    used = pd.read_parquet(next(p for p in (folder / ".depthfinder" / "pool").glob("*.parquet")
                                if len(pd.read_parquet(p)) == pool["used"]))["text"]
    assert not {normalize_text(text) for text in used} & {normalize_text(text) for text in labelled_table}
    asked = pd.read_csv(summary["rows_to_label"], keep_default_na=False)
    assert list(asked.columns) == ["text", "label"] and (asked["label"] == "").all()
    assert len(asked) == rule["rows_to_label"] == cheap["pool"]["unlabelled_disagreements"] > 0
    assert set(asked["text"]) <= set(truth["text"]) and not set(asked["text"]) & labelled_table
    assert f"label the {len(asked):,} texts of rows_to_label.csv" in rule["reason"]
    client = MlflowClient(tracking_uri=f"sqlite:///{folder / 'mlflow.db'}")
    run = client.get_run(summary["mlflow_run_id"])
    assert run.data.metrics["pool.to_label"] == len(asked)
    assert "rows_to_label.csv" in [artifact.path for artifact in client.list_artifacts(run.info.run_id)]
    assert run.data.metrics["pool.of_held_out"] == pool["of_held_out"]
    card = client.download_artifacts(run.info.run_id, "model_card.md")
    assert f"**Unlabelled pool.** {pool['texts']:,} texts; left out" in Path(card).read_text()
    assert f"**Unlabelled texts.** {rule['unlabeled_rows']:,}; depth 1 disagreement" in Path(card).read_text()
    assert f"texts to label: {summary['rows_to_label']} ({len(asked):,})" in Path(card).read_text()


def test_labels_given_back_tighten_the_bound_and_nothing_is_retrained(pooled) -> None:
    folder, _, _, predicted, again = pooled
    first, second = _summary(folder, "first"), _summary(folder, "second")

    assert len(predicted) == 2 and again == predicted  # each depth predicted the pool once: the rerun read them back

    assert {c["status"] for c in second["candidates"]} == {"cached"}
    assert second["data_hash"] == first["data_hash"]  # the labelled texts never joined the training table
    assert second["rows"] == first["rows"]
    assert second["rule"]["labelled_texts"] == first["rule"]["rows_to_label"]
    assert _depth_1(second)["pool"]["labelled"] == first["rule"]["rows_to_label"]
    assert _depth_1(second)["pool"]["worse_by_at_most"] < _depth_1(first)["pool"]["worse_by_at_most"]
    assert second["rows_to_label"] is None  # every disagreement labelled: nothing left to ask


@pytest.mark.parametrize(("flags", "says"), [
    (["--labels", "labels.csv"], "--labels needs --unlabeled"),
    (["--unlabeled", "missing.csv"], "missing.csv: no such file"),
    (["--unlabeled", "empty.csv"], "empty.csv: column 'text' holds no texts"),
    (["--unlabeled", "labels.csv", "--labels", "labels.csv"], "label 'banana' is not a class of the labelled table"),
    (["--unlabeled", "own.csv"], "own.csv: every one of its 600 texts is a copy or near-copy of a labelled text"),
])
def test_bad_pool_files_are_one_line_and_exit_2_before_anything_runs(tmp_path: Path, monkeypatch, capsys,
                                                                     flags: list[str], says: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tiny.yaml").write_text(CONFIG)
    (tmp_path / "labels.csv").write_text("text,label\nlast ( 1 2 ),banana\n")
    (tmp_path / "empty.csv").write_text("text\n\"\"\n")
    load_table(LABELLED).assign(text=lambda t: t["text"].str.upper()).to_csv(tmp_path / "own.csv", index=False)

    code = main(["run", "--config", "tiny.yaml", *flags])

    err = capsys.readouterr().err.strip()
    assert code == 2 and says in err and len(err.splitlines()) == 1
    assert not (tmp_path / "mlflow.db").exists() and not (tmp_path / ".depthfinder" / "runs").exists()
