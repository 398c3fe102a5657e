"""The audit flow (prepare the table, drop what the user asked, run the GX checks), and the audit steps of retrain.

How the audit informs training (the retrain flow calls `audit_and_log` and `audit_informs`):
- rows the user asked to drop (`audit.drop`: conflicts, empty, leaks) are removed before
  the audit and counted in the report and the summary (`audit.dropped`);
- a row's split is keyed by its text before splitting (`data.group_near_duplicates`):
  exact duplicates never straddle splits, near-duplicates rarely, and the
  `cross_split_near_duplicates` check reports those that do (`--drop-leaks` drops them);
- a `class_imbalance` warning turns on class-weighted loss (`train.class_weights: auto`);
- the selection metric is class-balanced unless the user chose another one: the default
  `sweep.metric: macro_f1` already is (and so is the early-stopping monitor,
  val/macro_f1), so the audit never has to override it and `rule.metric` is always the
  concrete metric used. A user who picks `accuracy` on imbalanced data keeps it, with a
  warning in the log and in `summary["audit"]["informs"]["note"]`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.states import Failed

from expectations.audit.config import AuditConfig
from expectations.table.config import DataConfig
from flows.report import audit_markdown
from flows.signals import stop_on_signals
from tasks.audit import audit_dataset
from tasks.data import PreparedData, drop_flagged_rows, prepare_dataset

if TYPE_CHECKING:
    from encoder.tracking.runs import SweepRun
    from flows.config import RunConfig

BALANCED_METRICS = ("macro_f1", "balanced_accuracy")


def blocking_checks(report: dict, strict: bool) -> list[str]:
    """Checks that stop training: errors always, warnings too when strict."""
    return list(report["blocking_failures"]) + (list(report["warnings"]) if strict else [])


@flow(name="audit")
def audit_data(
    data: DataConfig, audit: AuditConfig = AuditConfig(), workdir: Path = Path(".depthfinder"),
    data_docs: Path | None = None,
) -> dict:
    """Audit a labelled table (GX Data Docs under `data_docs`, if given); the run fails when a check blocks training."""
    with stop_on_signals():
        dataset = drop_flagged_rows(prepare_dataset(data, workdir), audit, workdir)
        report = audit_dataset(dataset, audit, str(data_docs) if data_docs else None)
    create_markdown_artifact(key="audit-report", markdown=audit_markdown(report), description="depthfinder audit")
    blocking = blocking_checks(report, audit.strict)
    if blocking:
        return Failed(message=f"the audit blocks training: {', '.join(blocking)}", data=report)
    return report


def audit_and_log(config: RunConfig, dataset: PreparedData, run: SweepRun) -> dict:
    """Run the audit; log the JSON report, the GX Data Docs and the dropped-row count to the parent run,
    and the markdown summary to Prefect."""
    from mlflow.entities import Metric

    docs_dir = Path(config.registry.workdir) / "runs" / run.run_id / "data_docs"
    report = audit_dataset(dataset, config.audit, str(docs_dir))
    client = run.client
    client.log_dict(run.run_id, report, "audit/report.json")
    if docs_dir.is_dir():
        client.log_artifacts(run.run_id, str(docs_dir), "audit/data_docs")
    dropped = float(sum(report["dropped"].values()))
    client.log_batch(run.run_id, metrics=[Metric("audit.dropped_rows", dropped, int(time.time() * 1000), 0)])
    create_markdown_artifact(key="audit-report", markdown=audit_markdown(report), description="depthfinder audit")
    return report


def audit_informs(config: RunConfig, report: dict) -> dict:
    """What the audit changed in training (see the module docstring), for the summary; logs a metric warning."""
    imbalanced = "class_imbalance" in report["warnings"]
    informs: dict = {
        "class_weights": config.train.class_weights == "on" or (config.train.class_weights == "auto" and imbalanced),
        "metric": config.sweep.metric,
        "near_duplicates_grouped": config.data.split_col is None and config.data.group_near_duplicates,
        "dropped_rows": sum(report["dropped"].values()),
    }
    if imbalanced and config.sweep.metric not in BALANCED_METRICS:
        informs["note"] = (
            f"the audit reports class imbalance but the selection metric is {config.sweep.metric}, which a "
            "majority-class model scores well on; consider --metric macro_f1 or balanced_accuracy"
        )
        get_run_logger().warning("%s", informs["note"])
    return informs
