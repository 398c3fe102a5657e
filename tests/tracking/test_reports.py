"""What a sweep writes to MLflow besides its candidates, as plain functions against a throwaway SQLite store (no
Prefect): the audit, what changed, the run summary, the model card, and the tags of pruned and converged
candidates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mlflow import MlflowClient

from depthfinder.expectations.audit.report import FLAGGED_ROWS, AuditReport, CheckResult
from depthfinder.expectations.changes.report import ChangeReport, LabelShift, Policy
from depthfinder.selection.candidate import Candidate
from depthfinder.tracking.registry import CHAMPION, find_unchanged_version
from depthfinder.tracking.reports import (
    DESCRIPTION_LIMIT,
    describe_version,
    log_audit_report,
    log_change_report,
    log_run_summary,
)
from depthfinder.tracking.runs import SweepRun, create_sweep_run, log_convergence, start_child_run, tag_pruned


@pytest.fixture
def sweep(tmp_path: Path) -> SweepRun:
    return create_sweep_run(f"sqlite:///{tmp_path / 'mlflow.db'}", "exp", "m", "sweep", params={}, tags={})


def _artifact(client: MlflowClient, run_id: str, path: str, folder: Path) -> str:
    return Path(client.download_artifacts(run_id, path, str(folder))).read_text(encoding="utf-8")


def test_the_audit_report_its_flagged_rows_and_dropped_count_go_on_the_parent_run(sweep: SweepRun,
                                                                                     tmp_path: Path) -> None:
    check = CheckResult(name="conflicting_labels", category="noise", severity="error", success=False,
                        observed={"rows": 2}, examples=[], failing_rows=[3, 17],
                        suspects=[{"row": 3, "text": "a", "label": "x"},
                                  {"row": 17, "text": "b, c", "label": "y", "likely_label": "x"}])
    report = AuditReport.from_checks([check], rows=20).model_copy(update={"dropped": {"conflicts": 2, "leaks": 1}})
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.html").write_text("<html></html>")

    log_audit_report(sweep, report, str(docs), first_line=2)

    client, run = sweep.client, sweep.client.get_run(sweep.run_id)
    assert run.data.metrics["audit.dropped_rows"] == 3
    assert run.data.tags["depthfinder.audit"] == "blocked"
    assert json.loads(_artifact(client, sweep.run_id, "audit/report.json", tmp_path / "a")) == report.to_dict()
    assert _artifact(client, sweep.run_id, FLAGGED_ROWS, tmp_path / "b") == (  # line: the file's, header counted
        'check,line,row,text,label,likely_label\nconflicting_labels,5,3,a,x,\nconflicting_labels,19,17,"b, c",y,x\n')
    assert [f.path for f in client.list_artifacts(sweep.run_id, "audit/data_docs")] == ["audit/data_docs/index.html"]


def test_what_changed_goes_on_the_parent_run_as_metrics_tags_and_the_report(sweep: SweepRun, tmp_path: Path) -> None:
    report = ChangeReport(champion_version="3", rows_before=100, rows_now=120, rows_added=25, rows_removed=5,
                          relabelled=2, label_shift=LabelShift(psi=0.02, p_value=0.5), checks=[],
                          policy=Policy(decision="retrain", reason="25 rows added"))

    log_change_report(sweep, report)

    run = sweep.client.get_run(sweep.run_id)
    assert run.data.metrics == {"changes.rows_added": 25, "changes.rows_removed": 5, "changes.relabelled": 2,
                                "changes.label_psi": 0.02}  # figures not measured are not metrics
    assert run.data.tags["depthfinder.changes"] == "retrain"
    assert run.data.tags["depthfinder.champion_compared"] == "3"
    assert json.loads(_artifact(sweep.client, sweep.run_id, "changes/what_changed.json", tmp_path)) == \
        report.to_dict()


def test_a_forced_night_is_tagged_forced_and_the_foreign_rows_are_metrics_and_a_csv(sweep: SweepRun,
                                                                                      tmp_path: Path) -> None:
    foreign = CheckResult(name="foreign_rows", category="drift", severity="error", success=False,
                          observed={"rows": 1}, examples=[], suspects=[{"row": 7, "text": "news", "label": "pos"}])
    report = ChangeReport(champion_version="3", rows_before=100, rows_now=120, rows_added=20, rows_removed=0,
                          relabelled=0, foreign_rows=1, foreign_share=0.01, foreign_share_of_added=0.05,
                          checks=[foreign],
                          policy=Policy(decision="retrain", reason="forced (--force); ...", overridden="stop"))

    log_change_report(sweep, report, first_line=1)

    run = sweep.client.get_run(sweep.run_id)
    assert run.data.tags["depthfinder.changes"] == "forced past stop"
    assert run.data.metrics["changes.foreign_rows"] == 1 and run.data.metrics["changes.foreign_share"] == 0.01
    assert run.data.metrics["changes.foreign_share_of_added"] == 0.05  # 1 of the 20 rows added; 0.01: of the 100
    assert _artifact(sweep.client, sweep.run_id, "changes/foreign_rows.csv", tmp_path) == \
        "check,line,row,text,label,likely_label\nforeign_rows,8,7,news,pos,\n"


def test_the_summary_its_tags_metrics_and_plots_go_on_the_parent_run(sweep: SweepRun, tmp_path: Path) -> None:
    plot = tmp_path / "metric_vs_depth.png"
    plot.write_bytes(b"png")

    log_run_summary(sweep, {"selected_depth": 2}, {"depthfinder.selected_depth": 2}, [str(plot)],
                    {"chosen.depth": 2.0, "champion.test.accuracy": None})

    client, run = sweep.client, sweep.client.get_run(sweep.run_id)
    assert json.loads(_artifact(client, sweep.run_id, "summary.json", tmp_path / "s")) == {"selected_depth": 2}
    assert run.data.tags["depthfinder.selected_depth"] == "2"
    assert run.data.metrics == {"chosen.depth": 2.0}
    assert [f.path for f in client.list_artifacts(sweep.run_id, "plots")] == ["plots/metric_vs_depth.png"]


def test_the_model_card_describes_the_version_the_run_and_the_champions_registered_model(sweep: SweepRun) -> None:
    client = sweep.client
    client.create_registered_model("m")
    first = client.create_model_version("m", "file:///nowhere", run_id=sweep.run_id)
    second = client.create_model_version("m", "file:///nowhere", run_id=sweep.run_id)
    client.set_registered_model_alias("m", CHAMPION, first.version)
    client.update_model_version("m", first.version, description="card of version 1")
    card = "# depthfinder version 2\n" + "x" * 1000

    describe_version(sweep, "m", second.version, card)

    assert client.get_model_version("m", second.version).description == card
    assert client.get_run(sweep.run_id).data.tags["mlflow.note.content"] == card
    model = client.get_registered_model("m").description
    assert model.startswith("card of version 1\n## Promotion history")  # the champion's card, not the loser's


def test_a_card_longer_than_a_description_may_be_is_cut_at_a_line_and_kept_whole_as_an_artifact(
    sweep: SweepRun, tmp_path: Path
) -> None:
    """MLflow's SQL stores hold 5,000 characters of a description (PostgreSQL refuses more): a forced night's card,
    with what changed, is longer."""
    client = sweep.client
    client.create_registered_model("m")
    version = client.create_model_version("m", "file:///nowhere", run_id=sweep.run_id).version
    client.set_registered_model_alias("m", CHAMPION, version)
    card = "# depthfinder version 1\n" + "".join(f"line {n}: {'y' * 60}\n" for n in range(100))  # ~7,000

    describe_version(sweep, "m", version, card)

    described = client.get_model_version("m", version).description
    model = client.get_registered_model("m").description
    assert len(described) <= DESCRIPTION_LIMIT and len(model) <= DESCRIPTION_LIMIT
    assert described.startswith(card[:1000]) and "cut to MLflow's 5,000 characters" in described
    assert all(line in card.splitlines() for line in described.split("\n\n*…")[0].splitlines())  # whole lines
    assert "## Promotion history" in model
    assert client.get_run(sweep.run_id).data.tags["mlflow.note.content"] == card  # a tag holds 8,000: all of it
    assert _artifact(client, sweep.run_id, "model_card.md", tmp_path / "card") == card


def test_pruned_and_converged_candidates_are_tagged_on_their_child_runs(sweep: SweepRun) -> None:
    runs = [start_child_run(sweep, f"depth-{depth}", {}) for depth in (1, 2)]
    candidates = [Candidate(depth=depth, status="trained", mlflow_run_id=run, not_converged=depth == 2)
                  for depth, run in zip((1, 2), runs, strict=True)]

    tag_pruned(sweep, candidates[:1])
    log_convergence(sweep, candidates)

    tags = [sweep.client.get_run(run).data.tags for run in runs]
    assert tags[0]["depthfinder.status"] == "pruned" and "depthfinder.status" not in tags[1]
    assert [t["depthfinder.converged"] for t in tags] == ["true", "false"]


def test_the_unchanged_version_is_the_champion_or_challenger_whose_tags_match(sweep: SweepRun) -> None:
    client = sweep.client
    assert find_unchanged_version(client, "m", {"data_hash": "a"}) is None  # nothing registered
    client.create_registered_model("m")
    for data_hash in ("a", "b"):
        version = client.create_model_version("m", "file:///nowhere", run_id=sweep.run_id,
                                              tags={"data_hash": data_hash, "depth": "2"})
    client.set_registered_model_alias("m", CHAMPION, "1")
    client.set_registered_model_alias("m", "challenger", version.version)

    champion = find_unchanged_version(client, "m", {"data_hash": "a"})
    challenger = find_unchanged_version(client, "m", {"data_hash": "b"})

    assert (champion.alias, champion.version, champion.depth) == ("champion", "1", "2")
    assert (challenger.alias, challenger.version) == ("challenger", "2")
    assert find_unchanged_version(client, "m", {"data_hash": "c"}) is None


def test_the_flagged_rows_of_a_pairs_table_hold_each_pairs_second_text() -> None:
    from depthfinder.expectations.audit.report import suspect_rows, suspects_csv
    from depthfinder.flows.audit import shown_rows

    check = CheckResult(name="swapped_pairs", category="leakage", severity="error", success=False,
                        observed={"rows": 1}, examples=[], failing_rows=[3],
                        suspects=[{"row": 3, "text": "a cat", "pair": "a hat", "label": "same"}])
    rows = suspect_rows([check], first_line=2)
    assert suspects_csv(rows) == "check,line,row,text,pair,label,likely_label\nswapped_pairs,5,3,a cat,a hat,same,\n"
    assert shown_rows(rows) == [{"line": 5, "row": 3, "label": "same", "text": "a cat", "pair": "a hat"}]
