"""Tasks that write a sweep to MLflow: its parent run, reused and pruned candidates, what changed, the audit
and the decision.

Thin wrappers around encoder.tracking (runs, reports), which does the writing; each task is named for its step
(as the Prefect UI shows it) and never like the function it wraps. Their
work is I/O against the tracking server, which can fail for a moment (a restart, a locked SQLite file): they
retry with backoff. A ValueError or TypeError is a bug or bad input, not a passing fault, and is not retried.
"""

from __future__ import annotations

import errno
from typing import Any

from prefect import task
from prefect.cache_policies import NONE
from prefect.tasks import exponential_backoff

from encoder.interrupt import Interrupted
from encoder.selection.candidate import Candidate
from encoder.tracking import reports, runs
from encoder.tracking.runs import SweepRun
from expectations.audit.report import AuditReport
from expectations.changes.report import ChangeReport

NOT_PASSING = (ValueError, TypeError, KeyError, Interrupted)
# A disk that is full, over quota or read-only stays so for the seconds between retries.
DISK_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)
SQLITE_FULL = "database or disk is full"


def passing_fault(task: Any, task_run: Any, state: Any) -> bool:
    """Whether a failed attempt is worth another: not for bad input, bugs, a stop request, a full disk or a file
    at the process's file-size limit."""
    try:
        state.result()
    except NOT_PASSING:
        return False
    except Exception as exc:
        return full_disk(exc) is None and cause_with(exc, (errno.EFBIG,)) is None
    return False


def full_disk(exc: BaseException | None) -> BaseException | None:
    """The error in `exc` or its causes that says a disk is full (an OSError, or SQLite's own words), or None."""
    return cause_with(exc, DISK_ERRNOS, SQLITE_FULL)


def cause_with(exc: BaseException | None, errnos: tuple[int, ...], words: str | None = None) -> BaseException | None:
    """The error in `exc` or its causes that is an OSError with one of `errnos` (or whose message holds `words`)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if (isinstance(exc, OSError) and exc.errno in errnos) or (words is not None and words in str(exc)):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


# Retries of tasks whose work is I/O against MLflow or the Prefect API: 2, 4, 8 s apart.
RETRIES: dict[str, Any] = {
    "retries": 3, "retry_delay_seconds": exponential_backoff(backoff_factor=2), "retry_condition_fn": passing_fault,
    "cache_policy": NONE,
}


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
def record_cached_candidate(sweep: SweepRun, candidate: Candidate, run_id: str | None = None) -> Candidate:
    """Record a candidate reused from an earlier sweep as a child run of this one."""
    return runs.log_cached_candidate(sweep, candidate, run_id)


@task(**RETRIES)
def mark_pruned(sweep: SweepRun, candidates: list[Candidate]) -> None:
    """Tag the child runs of candidates that successive halving pruned."""
    runs.tag_pruned(sweep, candidates)


@task(**RETRIES)
def tag_convergence(sweep: SweepRun, candidates: list[Candidate]) -> None:
    """Tag each candidate's child run with whether its validation metric had stopped rising."""
    runs.log_convergence(sweep, candidates)


@task(**RETRIES)
def log_audit(sweep: SweepRun, report: AuditReport, docs_dir: str) -> None:
    """The audit's JSON report, its GX Data Docs and the dropped-row count, on the parent run."""
    reports.log_audit_report(sweep, report, docs_dir)


@task(**RETRIES)
def log_changes(sweep: SweepRun, report: ChangeReport) -> None:
    """What changed since the champion on the parent run: its figures, the policy, the report, its Data Docs."""
    reports.log_change_report(sweep, report)


@task(**RETRIES)
def log_summary(sweep: SweepRun, summary: dict[str, Any], tags: dict[str, Any], plots: list[str],
                metrics: dict[str, float] | None = None) -> None:
    """The run summary (summary.json), the decision's tags, metrics and plots, on the parent run."""
    reports.log_run_summary(sweep, summary, tags, plots, metrics)


@task(**RETRIES)
def describe_model(sweep: SweepRun, model_name: str, version: str, card: str) -> None:
    """The model card on the version, the sweep's run note and the registered model (with the promotion history)."""
    reports.describe_version(sweep, model_name, version, card)
