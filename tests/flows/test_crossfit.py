"""End to end: cross-fitting a tiny sweep whose validation rows cannot settle the cheaper depth.

nested-ops-1 with a tiny encoder trained for a few epochs: depth 2 scores best on the validation rows by noise, and
depth 1's interval on 60-odd rows reaches far beyond the tolerance both ways; `crossfit: auto` (the product's
default, which the rest of the suite turns off), three folds: both depths judged, and the best chosen, out of fold.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from mlflow import MlflowClient

from depthfinder.cli.main import main
from depthfinder.flows.summary import RunSummary
from depthfinder.selection.rule import choose_depth

CONFIG = """
data: {dataset: nested-ops-1, dataset_rows: 600}
audit: {strict: false}
model: {d_model: 16, n_heads: 2, d_ff: 32, vocab_size: 300, max_len: 32}
train: {max_epochs: 6, patience: 2, batch_size: 32, learning_rate: 0.003}
sweep: {depths: [1, 2], crossfit: {mode: auto, folds: 3}}
"""


def _results(folder: Path) -> dict[str, float]:
    """Each fold candidate's result file, by folder name, with its modification time."""
    return {path.parent.name: path.stat().st_mtime_ns
            for path in (folder / ".depthfinder" / "candidates").glob("*-fold-*/result-epochs-*.json")}


@pytest.fixture(scope="module")
def crossfitted(prefect_server, tmp_path_factory):
    """A run that cross-fits, then the same run forced again after one fold's result was lost: (folder, codes,
    fold results after the first run, the one lost, fold results after the second)."""
    folder = tmp_path_factory.mktemp("crossfit")
    (folder / "tiny.yaml").write_text(CONFIG)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        codes = [main(["run", "--config", "tiny.yaml", "--summary-json", "first.json"])]
        first = _results(folder)
        lost = sorted(name for name in first if "depth-1-" in name)[0]
        for path in (folder / ".depthfinder" / "candidates" / lost).glob("result-epochs-*.json"):
            path.unlink()
        codes.append(main(["run", "--config", "tiny.yaml", "--force", "--summary-json", "second.json"]))
    yield folder, codes, first, lost, _results(folder)


def _summary(folder: Path, name: str) -> dict:
    return json.loads((folder / f"{name}.json").read_text())


def test_the_cheaper_depth_is_judged_on_every_train_and_validation_row_out_of_fold(crossfitted) -> None:
    folder, codes, _, _, _ = crossfitted
    summary = _summary(folder, "first")
    rows = summary["rows"]
    fit, rule = summary["crossfit"], summary["rule"]

    assert codes == [0, 0]
    assert fit["ran"] is True and fit["folds"] == 3 and fit["chooses_best"] is True
    assert fit["rows"] == rows["train"] + rows["val"] == rule["out_of_fold_rows"] and rule["folds"] == 3
    assert sorted(fit["depths"]) == [1, 2] and fit["seconds"] > 0 and fit["budget_seconds"] > 0
    best = (rule["best_family"], rule["best_depth"])
    cheaper = [s for s in rule["scores"] if (s["family"], s["depth"]) != best]
    assert [s["compared_on"] for s in cheaper] == ["out-of-fold"]
    assert "out-of-fold" in rule["evidence"] and f"{fit['rows']:,} out-of-fold rows" in rule["reason"]


def test_no_fold_holds_a_test_row_and_each_row_is_held_out_once(crossfitted) -> None:
    folder, _, first, _, _ = crossfitted
    summary = _summary(folder, "first")
    table = _prepared(folder, summary["data_hash"])
    prepared = pd.read_parquet(table)
    folds = [pd.read_parquet(path) for path in (folder / ".depthfinder" / "data").glob("*.parquet") if path != table]
    held_out = pd.concat([fold[fold["split"] == "test"] for fold in folds])
    labelled = prepared[prepared["split"] != "test"]

    assert len(folds) == 3 and len(first) == 3 * 2  # three folds of each of the two depths
    assert all(len(fold) == len(labelled) for fold in folds)  # the train and validation rows, no test row
    assert not set(prepared.loc[prepared["split"] == "test", "text"]) & set(pd.concat(folds)["text"])
    assert sorted(held_out["text"]) == sorted(labelled["text"])  # each held out by exactly one fold


def _prepared(folder: Path, data_hash: str) -> Path:
    """The run's prepared table: the one whose rows hold every split of the data the summary names."""
    from depthfinder.tasks.data import LABELLED_COLUMNS, table_hash

    for table in (folder / ".depthfinder" / "data").glob("*.parquet"):
        if table_hash(pd.read_parquet(table), ["text", *LABELLED_COLUMNS]) == data_hash:
            return table
    raise AssertionError("no prepared table has the run's data hash")


def test_each_fold_trains_in_a_child_run_named_and_tagged_as_a_fold(crossfitted) -> None:
    folder, _, _, _, _ = crossfitted
    summary = _summary(folder, "first")
    client = MlflowClient(tracking_uri=f"sqlite:///{folder / 'mlflow.db'}")
    parent = client.get_run(summary["mlflow_run_id"])
    children = client.search_runs([parent.info.experiment_id],
                                  filter_string=f"tags.mlflow.parentRunId = '{parent.info.run_id}'")
    folds = sorted(run.data.tags["depthfinder.fold"] for run in children if "depthfinder.fold" in run.data.tags)

    assert folds == ["1/3", "1/3", "2/3", "2/3", "3/3", "3/3"]
    assert all("fold" in run.data.tags["mlflow.runName"] for run in children if "depthfinder.fold" in run.data.tags)
    assert parent.data.metrics["crossfit.rows"] == summary["crossfit"]["rows"]


def test_a_lost_fold_retrains_alone_and_the_decision_replays(crossfitted) -> None:
    folder, _, first, lost, second = crossfitted

    assert set(second) == set(first)
    assert second[lost] != first[lost]  # trained again
    assert {name: when for name, when in second.items() if name != lost} == {
        name: when for name, when in first.items() if name != lost}  # the others reused
    one, two = _summary(folder, "first"), _summary(folder, "second")
    assert [s["vs_best"] for s in two["rule"]["scores"]] == [s["vs_best"] for s in one["rule"]["scores"]]
    assert two["selected_depth"] == one["selected_depth"]
    summary = RunSummary.from_dict(two)
    assert choose_depth(summary.candidates, summary.rule.settings, summary.crossfit.evidence()) == summary.rule
