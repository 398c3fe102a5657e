"""The audit flow: prepare the table and run the Great Expectations checks, nothing else."""

from __future__ import annotations

from pathlib import Path

from prefect import flow
from prefect.artifacts import create_markdown_artifact
from prefect.states import Failed

from expectations.config import AuditConfig, DataConfig
from flows.report import audit_markdown
from tasks.audit import audit_dataset
from tasks.data import prepare_dataset


def blocking_checks(report: dict, strict: bool) -> list[str]:
    """Checks that stop training: errors always, warnings too when strict."""
    return list(report["blocking_failures"]) + (list(report["warnings"]) if strict else [])


@flow(name="audit")
def audit_data(data: DataConfig, audit: AuditConfig = AuditConfig(), workdir: Path = Path(".depthfinder")) -> dict:
    """Audit a labelled table; the run fails when a check blocks training."""
    dataset = prepare_dataset(data, workdir)
    report = audit_dataset(dataset, audit)
    create_markdown_artifact(key="audit-report", markdown=audit_markdown(report), description="depthfinder audit")
    blocking = blocking_checks(report, audit.strict)
    if blocking:
        return Failed(message=f"the audit blocks training: {', '.join(blocking)}", data=report)
    return report
