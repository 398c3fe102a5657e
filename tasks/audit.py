"""The audit task: Great Expectations checks over the prepared table."""

from __future__ import annotations

import pandas as pd
from prefect import task
from prefect.cache_policies import NONE

from expectations.config import AuditConfig
from tasks.data import PreparedData


@task(name="run_audit", cache_policy=NONE)
def audit_dataset(dataset: PreparedData, audit: AuditConfig) -> dict:
    """Run every registered check; return the report as DESIGN.md's JSON shape."""
    from expectations.audit import run_audit

    return run_audit(pd.read_parquet(dataset.path), audit).to_dict()
