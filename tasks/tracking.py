"""Tasks that write a sweep to MLflow: its parent run, reused and pruned candidates, what changed, the audit
and the decision.

Their work is I/O against the tracking server, which can fail for a moment (a restart, a
locked SQLite file): they retry with backoff (runtime.retries). A ValueError or TypeError is a bug or bad
input, not a passing fault, and is not retried.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from prefect import task

from encoder.selection.candidate import Candidate
from encoder.tracking import runs
from encoder.tracking.runs import SweepRun, log_folder, set_tags
from expectations.audit.report import FLAGGED_ROWS, AuditReport
from expectations.changes.report import ChangeReport
from runtime.retries import RETRIES


@task(**RETRIES)
def close_abandoned_runs(tracking_uri: str, experiment: str, model_name: str) -> list[str]:
    """End as KILLED the runs of `model_name` a dead process on this host left RUNNING; their ids."""
    return runs.close_abandoned_runs(tracking_uri, experiment, model_name)


@task(**RETRIES)
def start_sweep_run(
    tracking_uri: str, experiment: str, model_name: str, run_name: str, params: dict[str, Any], tags: dict[str, str],
    night: str = "",
) -> SweepRun:
    """Create the sweep's parent run, with the flattened config as params."""
    return runs.start_sweep_run(tracking_uri, experiment, model_name, run_name, params, tags, night)


@task(**RETRIES)
def record_cached_candidate(sweep: SweepRun, candidate: Candidate, run_id: str | None = None) -> Candidate:
    """Record a candidate reused from an earlier sweep as a child run of this one."""
    return runs.record_cached_candidate(sweep, candidate, run_id)


@task(**RETRIES)
def mark_pruned(sweep: SweepRun, candidates: list[Candidate]) -> None:
    """Tag the child runs of candidates that successive halving pruned."""
    for candidate in candidates:
        set_tags(sweep.client, candidate.mlflow_run_id, {"depthfinder.status": "pruned"})


@task(**RETRIES)
def tag_convergence(sweep: SweepRun, candidates: list[Candidate]) -> None:
    """Tag each candidate's child run with whether its validation metric had stopped rising."""
    for candidate in candidates:
        converged = "false" if candidate.not_converged else "true"
        set_tags(sweep.client, candidate.mlflow_run_id, {"depthfinder.converged": converged})


@task(**RETRIES)
def log_audit(sweep: SweepRun, report: AuditReport, docs_dir: str) -> None:
    """The audit's JSON report, its GX Data Docs and the dropped-row count, on the parent run."""
    from mlflow.entities import Metric

    client = sweep.client
    client.log_dict(sweep.run_id, report.to_dict(), "audit/report.json")
    flagged = "".join(f"{check.name},{row}\n" for check in report.checks for row in check.failing_rows)
    client.log_text(sweep.run_id, "check,row\n" + flagged, FLAGGED_ROWS)
    if Path(docs_dir).is_dir():
        log_folder(client, sweep.run_id, docs_dir, "audit/data_docs")
    dropped = float(sum(report.dropped.values()))
    client.log_batch(sweep.run_id, metrics=[Metric("audit.dropped_rows", dropped, int(time.time() * 1000), 0)])
    set_tags(client, sweep.run_id, {"depthfinder.audit": "passed" if report.success else "failed"})


@task(**RETRIES)
def log_changes(sweep: SweepRun, report: ChangeReport) -> None:
    """What changed since the champion on the parent run: its figures as metrics, the policy as tags, the JSON
    report and its GX Data Docs."""
    from mlflow.entities import Metric

    figures = {"rows_added": report.rows_added, "rows_removed": report.rows_removed,
               "relabelled": report.relabelled, "drift_auc": report.drift_auc, "length_shift": report.length_shift,
               "label_psi": report.label_shift.psi if report.label_shift else None,
               "champion_on_new": report.champion_on_new.on_new if report.champion_on_new else None}
    now = int(time.time() * 1000)
    metrics = [Metric(f"changes.{name}", float(value), now, 0) for name, value in figures.items() if value is not None]
    client = sweep.client
    client.log_batch(sweep.run_id, metrics=metrics)
    client.log_dict(sweep.run_id, report.to_dict(), "changes/what_changed.json")
    if report.data_docs:
        log_folder(client, sweep.run_id, str(Path(report.data_docs).parent), "changes/data_docs")
    set_tags(client, sweep.run_id, {"depthfinder.changes": report.policy.decision,
                                    "depthfinder.champion_compared": report.champion_version})


@task(**RETRIES)
def log_summary(sweep: SweepRun, summary: dict[str, Any], tags: dict[str, Any], plots: list[str],
                metrics: dict[str, float] | None = None) -> None:
    """The run summary (summary.json), the decision's tags, metrics and plots, on the parent run."""
    client = sweep.client
    client.log_dict(sweep.run_id, summary, "summary.json")
    for path in plots:
        client.log_artifact(sweep.run_id, path, "plots")
    set_tags(client, sweep.run_id, tags)
    runs.log_metrics(client, sweep.run_id, metrics or {})



# MLflow keeps at most this many characters of a tag's value (the run note is a tag).
NOTE_LIMIT = 8000


@task(**RETRIES)
def describe_model(sweep: SweepRun, model_name: str, version: str, card: str) -> None:
    """The model card as the version's description, the sweep's run note, and, with the promotion history as a
    table, the registered model's description (the champion's card: the new version's if it was promoted)."""
    from encoder.tracking.history import alias_history, history_table
    from encoder.tracking.registry import current_champion

    client = sweep.client
    client.update_model_version(model_name, version, description=card)
    set_tags(client, sweep.run_id, {"mlflow.note.content": card[:NOTE_LIMIT]})
    champion = current_champion(client, model_name)
    head = card if champion is None or str(champion.version) == str(version) else (champion.description or "")
    history = history_table(alias_history(client, model_name))
    client.update_registered_model(model_name, description=f"{head}\n## Promotion history\n\n{history}\n")
