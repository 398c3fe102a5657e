"""The audit task: Great Expectations checks over the prepared table."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from prefect import task
from prefect.cache_policies import NONE

from depthfinder.expectations.audit.config import AuditConfig
from depthfinder.expectations.audit.report import AuditReport
from depthfinder.tasks.data import PreparedData


@task(cache_policy=NONE)
def audit_dataset(dataset: PreparedData, audit: AuditConfig, docs_dir: str | None = None) -> AuditReport:
    """Run every registered check (and build the GX Data Docs under `docs_dir`); the report also counts
    the rows dropped before the audit (`dropped`, per reason) and the labels normalised when the table was
    loaded (`normalized_labels`)."""
    from depthfinder.expectations.audit.run import run_audit

    report = run_audit(pd.read_parquet(dataset.path), audit, docs_dir=Path(docs_dir) if docs_dir else None)
    return report.model_copy(update={"dropped": dict(dataset.dropped), "normalized_labels": dataset.normalized_labels})
