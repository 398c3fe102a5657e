"""Tasks that write a sweep to MLflow: its parent run, reused and pruned candidates, what changed, the audit
and the decision.

Thin wrappers around tracking (runs, reports), which does the writing; each task is named for its step
(as the Prefect UI shows it) and never like the function it wraps. Their
work is I/O against the tracking server, which can fail for a moment (a restart, a locked SQLite file): they
retry with backoff (runtime.retries). A ValueError or TypeError is a bug or bad input, not a passing fault, and is
not retried.
"""

from __future__ import annotations

from typing import Any

from prefect import task

from depthfinder.expectations.audit.report import AuditReport
from depthfinder.expectations.changes.report import ChangeReport
from depthfinder.runtime.retries import RETRIES
from depthfinder.selection.candidate import Candidate
from depthfinder.tracking import reports, runs
from depthfinder.tracking.runs import SweepRun


@task(**RETRIES)
def close_abandoned_runs(tracking_uri: str, experiment: str, model_name: str) -> list[str]:
    """End as KILLED the runs of `model_name` a dead process on this host left RUNNING; their ids."""
    return runs.end_abandoned_runs(tracking_uri, experiment, model_name)


@task(**RETRIES)
def start_sweep_run(
    tracking_uri: str, experiment: str, model_name: str, run_name: str, params: dict[str, Any], tags: dict[str, str],
    night: str = "",
) -> SweepRun:
    """Create the sweep's parent run, with the flattened config as params."""
    return runs.create_sweep_run(tracking_uri, experiment, model_name, run_name, params, tags, night)


@task(**RETRIES)
def log_dataset(parent_run: SweepRun, table_path: str, name: str, digest: str) -> None:
    """The run's data, one MLflow dataset per split (tracking.runs.log_dataset)."""
    runs.log_dataset(parent_run, table_path, name, digest)


@task(**RETRIES)
def record_cached_candidate(parent_run: SweepRun, candidate: Candidate, run_id: str | None = None) -> Candidate:
    """Record a candidate reused from an earlier sweep as a child run of this one."""
    return runs.log_cached_candidate(parent_run, candidate, run_id)


@task(**RETRIES)
def mark_pruned(parent_run: SweepRun, candidates: list[Candidate]) -> None:
    """Tag the child runs of candidates that successive halving pruned."""
    runs.tag_pruned(parent_run, candidates)


@task(**RETRIES)
def tag_convergence(parent_run: SweepRun, candidates: list[Candidate]) -> None:
    """Tag each candidate's child run with whether its validation metric had stopped rising."""
    runs.log_convergence(parent_run, candidates)


@task(**RETRIES)
def log_audit(parent_run: SweepRun, report: AuditReport, docs_dir: str | None, first_line: int | None = None) -> None:
    """The audit's JSON report, its flagged rows, its GX Data Docs and the dropped-row count, on the parent run."""
    reports.log_audit_report(parent_run, report, docs_dir, first_line)


@task(**RETRIES)
def log_changes(parent_run: SweepRun, report: ChangeReport, first_line: int | None = None) -> None:
    """What changed since the champion on the parent run: its figures, the policy, the report, the foreign rows,
    its Data Docs."""
    reports.log_change_report(parent_run, report, first_line)


@task(**RETRIES)
def log_summary(parent_run: SweepRun, summary: dict[str, Any], tags: dict[str, Any], plots: list[str],
                metrics: dict[str, float] | None = None, files: list[str] = ()) -> None:
    """The run summary (summary.json), the decision's tags, metrics and plots, and other files, on the parent run."""
    reports.log_run_summary(parent_run, summary, tags, plots, metrics, files)


@task(**RETRIES)
def describe_stop(parent_run: SweepRun, note: str, name: str | None = None) -> None:
    """What stopped the night before training, and what to do next, as the parent run's description; the run
    renamed `name` (`stopped · ...`), as the runs list shows it."""
    reports.describe_run(parent_run, note, name)


@task(**RETRIES)
def describe_model(parent_run: SweepRun, model_name: str, version: str, card: str) -> None:
    """The model card on the version, the sweep's run note and the registered model (with the promotion history)."""
    reports.describe_version(parent_run, model_name, version, card)
