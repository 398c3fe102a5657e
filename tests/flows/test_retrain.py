"""End to end: the retrain flow on a tiny built-in dataset with a tiny encoder at two depths."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mlflow import MlflowClient

from depthfinder.cli.main import main

TINY = """
data: {dataset: topics, dataset_rows: 600}
model: {d_model: 16, n_heads: 2, d_ff: 32, vocab_size: 300, max_len: 32}
train: {max_epochs: 3, patience: 2, batch_size: 32, learning_rate: 0.003}
sweep: {depths: [1, 2], crossfit: off}
"""


@pytest.fixture(scope="module")
def sweep(prefect_server, tmp_path_factory):
    """Two runs in one folder: a normal one, then one whose model is left untrained."""
    folder = tmp_path_factory.mktemp("sweep")
    (folder / "tiny.yaml").write_text(TINY)
    untrained = TINY.replace("learning_rate: 0.003", "learning_rate: 1.0e-9").replace(
        "sweep: {depths: [1, 2], crossfit: off}", "sweep: {depths: [1, 2], crossfit: off, seeds: [1, 2], rule: pareto}"
    )
    (folder / "untrained.yaml").write_text(untrained)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        codes = [
            main(["run", "--config", f"{name}.yaml", "--summary-json", f"{name}.json"])
            for name in ("tiny", "untrained")
        ]
        yield folder, codes, MlflowClient(tracking_uri=f"sqlite:///{folder / 'mlflow.db'}")


def _summary(folder: Path, name: str) -> dict:
    return json.loads((folder / f"{name}.json").read_text())


def test_summary_reports_every_depth_and_the_decision(sweep) -> None:
    folder, codes, _ = sweep
    summary = _summary(folder, "tiny")

    assert codes[0] == 0
    assert summary["audit"]["success"] in (True, False) and summary["audit"]["blocking_failures"] == []
    assert [c["depth"] for c in summary["candidates"]] == [1, 2]
    for candidate in summary["candidates"]:
        assert candidate["status"] == "trained"
        assert (
            set(candidate["metrics"]) == set(candidate["test_metrics"]) == {"accuracy", "balanced_accuracy", "macro_f1"}
        )
        assert {"params", "flops_per_example", "latency_ms_p50", "latency_ms_p95", "train_seconds"} <= set(
            candidate["cost"]
        )
    assert summary["candidates"][1]["cost"]["flops_per_example"] > summary["candidates"][0]["cost"]["flops_per_example"]
    for cost in (candidate["cost"] for candidate in summary["candidates"]):  # pruned to the train split
        assert set(cost["sizes_mb"]) == {"torch", "torch-pruned"} and cost["size_mb"] == min(cost["sizes_mb"].values())
    assert summary["selected_depth"] in (1, 2)
    assert summary["rule"]["name"] == "tolerance" and summary["rule"]["metric"] == "macro_f1"
    assert f"depth {summary['selected_depth']}" in summary["rule"]["reason"]
    size = next(c["cost"]["bundle_mb"] for c in summary["candidates"] if c["depth"] == summary["selected_depth"])
    if served := summary["deployment"]["pruning"] and summary["deployment"]["pruning"]["bundle"]:  # the gate shipped it
        size = sum(path.stat().st_size for path in Path(served).iterdir()) / 2**20
        assert size < next(c["cost"]["bundle_mb"] for c in summary["candidates"]
                           if c["depth"] == summary["selected_depth"])
    assert summary["model"] == {"name": "depthfinder", "version": "1", "uri": "models:/depthfinder/1",
                                "family": "scratch", "depth": summary["selected_depth"], "size_mb": size,
                                "inputs": ["text"], "outputs": ["label", "confidence", "proba_<label>"]}
    assert summary["promoted"] is True and summary["champion_version"] == "1"
    assert len(summary["data_hash"]) == 16


def test_mlflow_has_a_parent_run_with_one_child_per_depth(sweep) -> None:
    folder, _, client = sweep
    summary = _summary(folder, "tiny")
    parent = client.get_run(summary["mlflow_run_id"])
    children = client.search_runs(
        [parent.info.experiment_id], filter_string=f"tags.mlflow.parentRunId = '{parent.info.run_id}'"
    )

    assert parent.info.status == "FINISHED"
    assert parent.data.tags["depthfinder.data_hash"] == summary["data_hash"]
    assert parent.data.params["sweep.depths"] == "[1, 2]"
    # A built-in dataset's generated rows are the rows used, in the params and the summary alike.
    assert parent.data.params["data.dataset_rows"] == parent.data.params["data.rows"] == "600"
    assert summary["rows"]["total"] == 600 == sum(summary["rows"][split] for split in ("train", "val", "test"))
    inputs = {next(t.value for t in i.tags if t.key == "mlflow.data.context"): i.dataset
              for i in parent.inputs.dataset_inputs}  # MLflow's Dataset column: the data, one per split
    assert set(inputs) == {"train", "val", "test"}
    for split, dataset in inputs.items():
        assert dataset.name == "topics" and dataset.digest == f"{summary['data_hash'][:10]}-{split}"
        assert json.loads(dataset.profile)["num_rows"] == summary["rows"][split]
    assert sorted(run.data.tags["depthfinder.depth"] for run in children) == ["1", "2"]
    by_run = {c["mlflow_run_id"]: c for c in summary["candidates"]}
    for child in children:
        assert child.info.status == "FINISHED"
        curve = [m.value for m in client.get_metric_history(child.info.run_id, "by_epoch/val/macro_f1")]
        candidate = by_run[child.info.run_id]
        assert len(curve) == candidate["epochs"] == int(child.data.tags["depthfinder.epochs"])  # one per epoch
        assert child.data.metrics["cost.flops_per_example"] > 0
        # The run's own figures are the best epoch's, the ones the decision used, and its epoch count the tag's.
        assert child.data.metrics["val/macro_f1"] == pytest.approx(candidate["metrics"]["macro_f1"])
        assert child.data.metrics["best_epoch"] == curve.index(max(curve)) + 1
        assert child.data.metrics["epoch"] == candidate["epochs"]
    assert {c["mlflow_run_id"] for c in summary["candidates"]} == {run.info.run_id for run in children}
    assert {child.data.tags["depthfinder.status"] for child in children} == {"trained"}
    plots = {artifact.path for artifact in client.list_artifacts(parent.info.run_id, "plots")}
    assert plots == {"plots/metric_vs_depth.png", "plots/metric_vs_cost.png"}


def test_registry_aliases_and_predict(sweep, capsys) -> None:
    folder, _, client = sweep
    version = client.get_model_version_by_alias("depthfinder", "champion")

    assert str(version.version) == "1"
    assert version.tags["data_hash"] == _summary(folder, "tiny")["data_hash"]
    assert version.tags["depth"] == str(_summary(folder, "tiny")["selected_depth"])
    assert len(version.tags["config_hash"]) == 16 and version.tags["family"] == "scratch"
    assert _summary(folder, "tiny")["rule"]["reason"] in version.description  # the model card, not a tag
    capsys.readouterr()
    code = main(
        [
            "predict",
            "--model",
            "models:/depthfinder@champion",
            "--text",
            "the striker scored a late goal",
            "--tracking-uri",
            f"sqlite:///{folder / 'mlflow.db'}",
        ]
    )
    assert code == 0
    labels = set(__import__("pandas").read_parquet(next((folder / ".depthfinder" / "data").glob("*.parquet")))["label"])
    assert capsys.readouterr().out.strip() in labels


def test_a_worse_challenger_is_registered_but_not_promoted(sweep) -> None:
    folder, codes, client = sweep
    second = _summary(folder, "untrained")

    assert codes[1] == 0
    assert [(c["depth"], c["seed"]) for c in second["candidates"]] == [(1, 1), (1, 2), (2, 1), (2, 2)]
    assert "over 2 seeds" in second["rule"]["reason"] and second["rule"]["name"] == "pareto"
    assert second["model"]["version"] == "2"
    assert second["promoted"] is False and second["champion_version"] == "1"
    assert str(client.get_model_version_by_alias("depthfinder", "challenger").version) == "2"
    assert str(client.get_model_version_by_alias("depthfinder", "champion").version) == "1"


def test_the_audit_gate_blocks_a_cross_split_duplicate(prefect_server, tmp_path, monkeypatch, capsys) -> None:
    rows = ["text,label,split"]
    rows += [f"match report {i} with goals,sport,train" for i in range(30)]
    rows += [f"stock market {i} fell sharply,finance,train" for i in range(30)]
    rows += [f"the keeper saved {i} shots,sport,val" for i in range(5)] + [
        f"bond yields {i} rose,finance,val" for i in range(5)
    ]
    rows += [f"a derby {i} ended level,sport,test" for i in range(5)] + [
        f"shares {i} rallied,finance,test" for i in range(5)
    ]
    rows.append("Stock market 3 fell  sharply!,finance,test")  # planted: row 80 repeats train row 33
    (tmp_path / "leaky.csv").write_text("\n".join(rows) + "\n")
    monkeypatch.chdir(tmp_path)

    code = main(["run", "--data", "leaky.csv", "--split-col", "split", "--depths", "1", "--summary-json", "s.json"])

    summary = json.loads((tmp_path / "s.json").read_text())
    assert code == 1
    assert summary["audit"]["blocking_failures"] == ["cross_split_duplicates"]
    assert summary["candidates"] == [] and summary["selected_depth"] is None
    check = next(c for c in summary["audit"]["checks"] if c["name"] == "cross_split_duplicates")
    assert sorted(e["row"] for e in check["examples"]) in ([33, 80], [80])
    printed = capsys.readouterr()
    assert "row 80" in (out := printed.out)
    (headline,) = [line for line in printed.out.splitlines() if line.startswith("Audit:")]
    warned = "; warnings: " + ", ".join(summary["audit"]["warnings"]) if summary["audit"]["warnings"] else ""
    assert headline == f"Audit: blocked by cross_split_duplicates{warned}"  # what blocked first, warnings as such
    assert "error(s) were logged" not in printed.err  # an audit that blocks is an outcome, not a fault
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert client.search_registered_models() == []
    run = client.get_run(summary["mlflow_run_id"])
    assert run.info.status == "FINISHED"  # an outcome: MLflow's lists mark FAILED as a crash
    assert run.data.tags["depthfinder.outcome"] == "blocked"
    assert_the_blocking_rows_are_listed_with_their_file_lines(client, run, tmp_path)
    assert_the_rows_used_are_the_files(summary, run, out)


def assert_the_rows_used_are_the_files(summary: dict, run, terminal: str) -> None:
    """`data.dataset_rows 3000` (a built-in dataset's default) was logged on runs of a file of other
    sizes, and the rows trained on were shown nowhere. The file's 81 rows (60 train, 10 val, 11 test) are what the
    summary, the MLflow params and the terminal say, and no param claims another count."""
    assert summary["rows"] == {"total": 81, "train": 60, "val": 10, "test": 11}
    params = run.data.params
    assert "data.dataset_rows" not in params
    assert {key: params[key] for key in ("data.rows", "data.rows.train", "data.rows.val", "data.rows.test")} == {
        "data.rows": "81", "data.rows.train": "60", "data.rows.val": "10", "data.rows.test": "11"}
    assert "Data: 81 rows: train 60, validation 10, test 11" in terminal


def assert_the_blocking_rows_are_listed_with_their_file_lines(client: MlflowClient, run, folder: Path) -> None:
    """The planted row is in audit/flagged_rows.csv and the Prefect table `flagged-rows` at its file line, with its
    text and label; the run's MLflow description says what blocked it and what to do next."""
    import pandas as pd

    from depthfinder.expectations.audit.report import SUSPECT_COLUMNS
    from tests.flows.prefect_api import artifact, flow_runs_named, table_rows

    flagged = pd.read_csv(client.download_artifacts(run.info.run_id, "audit/flagged_rows.csv", str(folder)))
    lines = (folder / "leaky.csv").read_text().splitlines()
    planted = flagged[(flagged["row"] == 80) & (flagged["check"] == "cross_split_duplicates")].iloc[0]
    assert tuple(flagged.columns) == SUSPECT_COLUMNS
    assert planted["line"] == 82 and lines[planted["line"] - 1] == f"{planted['text']},finance,test"
    assert planted["label"] == "finance"
    note = run.data.tags["mlflow.note.content"]
    assert note.startswith("# Stopped before training: the audit blocks it")
    assert "cross_split_duplicates" in note and "audit/flagged_rows.csv" in note and "--drop-leaks" in note
    (flow_run,) = flow_runs_named(run.info.run_name)
    rows = table_rows(found := artifact(flow_run.id, "flagged-rows"))
    # The label before the text, which is last; likely_label only where a check knows one (none of these does).
    assert {"check": "cross_split_duplicates", "line": 82, "row": 80, "label": "finance", "text": planted["text"]} in [
        {key: row[key] for key in ("check", "line", "row", "label", "text")} for row in rows]
    assert all(list(row)[-2:] == ["label", "text"] for row in rows)
    counts = ", ".join(f"{check} {n}" for check, n in flagged["check"].value_counts(sort=False).items())
    assert found.description.startswith(f"{len(flagged)} rows the audit flagged (all shown; {counts}); every one is "
                                        "in ")
    assert "header line counted" in found.description and "audit-blocked" in flow_run.tags
    # Blocked on purpose, said above the fold: the state's name and message, the name's first word, a tag.
    assert flow_run.state.type.value == "FAILED" and flow_run.state.name == "Blocked"
    assert flow_run.state.message == "blocked: the audit blocks training: cross_split_duplicates"
    assert flow_run.name.startswith("blocked · depthfinder · leaky.csv · ")
    assert "blocked: cross_split_duplicates" in flow_run.tags


def test_audit_command_passes_a_clean_table(prefect_server, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)

    code = main(["audit", "--dataset", "topics", "--report-json", "report.json"])

    report = json.loads((tmp_path / "report.json").read_text())
    assert code == 0
    assert report["success"] is True or report["blocking_failures"] == []
    assert {c["name"] for c in report["checks"]} >= {
        "schema",
        "empty_text",
        "cross_split_duplicates",
        "conflicting_labels",
        "class_imbalance",
    }


def test_the_audit_report_and_data_docs_are_logged_to_the_parent_run(sweep) -> None:
    from depthfinder.expectations.audit.registry import REGISTRY

    folder, _, client = sweep
    summary = _summary(folder, "tiny")
    run_id = summary["mlflow_run_id"]
    assert {"audit/report.json", "audit/data_docs"} <= {a.path for a in client.list_artifacts(run_id, "audit")}
    assert "audit/data_docs/index.html" in {a.path for a in client.list_artifacts(run_id, "audit/data_docs")}
    report = json.loads(Path(client.download_artifacts(run_id, "audit/report.json", str(folder))).read_text())
    assert [check["name"] for check in report["checks"]] == REGISTRY.names() and report["dropped"] == {}
    assert summary["audit"]["dropped"] == {}
    assert summary["audit"]["informs"] == {
        "class_weights": False, "metric": "macro_f1", "near_duplicates_grouped": True, "dropped_rows": 0, "note": None,
    }
    assert client.get_run(run_id).data.metrics["audit.dropped_rows"] == 0


def test_the_decision_replays_from_summary_json(sweep) -> None:
    from depthfinder.flows.summary import RunSummary
    from depthfinder.selection.rule import choose_depth

    folder, _, _ = sweep
    written = _summary(folder, "tiny")
    summary = RunSummary.from_dict(written)

    assert summary.to_dict() == written
    assert choose_depth(summary.candidates, summary.rule.settings) == summary.rule
    assert summary.selected_depth == summary.rule.selected_depth
