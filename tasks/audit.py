"""The audit task: Great Expectations checks over the prepared table."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from prefect import task
from prefect.cache_policies import NONE

from expectations.audit.config import AuditConfig
from tasks.data import PreparedData


@task(name="run_audit", cache_policy=NONE)
def audit_dataset(dataset: PreparedData, audit: AuditConfig, docs_dir: str | None = None) -> dict:
    """Run every registered check (and build the GX Data Docs under `docs_dir`); return DESIGN.md's JSON report.

    The report also says which rows were dropped before the audit (`dropped`, per reason).
    """
    from expectations.audit.run import run_audit

    report = run_audit(pd.read_parquet(dataset.path), audit, docs_dir=Path(docs_dir) if docs_dir else None)
    return report.to_dict() | {"dropped": dict(dataset.dropped)}
