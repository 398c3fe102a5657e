"""The audit flow (prepare the table, drop what the user asked, run the GX checks), and how the audit informs training.

How the audit informs training (the retrain flow calls `audit_informs`):
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
  warning in the log and in the summary's `audit.informs.note`.
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.states import Failed, State

from encoder.config import TrainConfig
from expectations.audit.config import AuditConfig
from expectations.audit.report import AuditReport, audit_markdown
from expectations.table.config import DataConfig
from flows.config import WORKDIR, RunConfig
from flows.summary import AuditInforms
from runtime.guard import process_guard
from tasks.audit import audit_dataset
from tasks.data import drop_flagged_rows, prepare_dataset

BALANCED_METRICS = ("macro_f1", "balanced_accuracy")


@flow(name="audit")
def audit_data(
    data: DataConfig, audit: AuditConfig = AuditConfig(), workdir: Path = WORKDIR,
    data_docs: Path | None = None,
) -> AuditReport | State:
    """Audit a labelled table (GX Data Docs under `data_docs`, if given); the run fails when a check blocks training."""
    with process_guard():
        dataset = drop_flagged_rows(prepare_dataset(data, workdir), audit, workdir)
        report = audit_dataset(dataset, audit, str(data_docs) if data_docs else None)
    publish_audit(report)
    if blocking := report.blocking(audit.strict):
        return Failed(message=f"the audit blocks training: {', '.join(blocking)}", data=report)
    return report


def publish_audit(report: AuditReport) -> None:
    """The audit as the Prefect artifact `audit-report`."""
    verdict = ("blocks training: " + ", ".join(report.blocking_failures) if report.blocking_failures
               else "passed" + (f" with warnings: {', '.join(report.warnings)}" if report.warnings else ""))
    create_markdown_artifact(key="audit-report", markdown=audit_markdown(report),
                             description=f"depthfinder data audit: {verdict}")


def uses_class_weights(train: TrainConfig, report: AuditReport) -> bool:
    """Whether the loss is weighted by inverse class frequency: asked for, or `auto` and the audit saw imbalance."""
    return train.class_weights == "on" or (train.class_weights == "auto" and "class_imbalance" in report.warnings)


def audit_informs(config: RunConfig, report: AuditReport) -> AuditInforms:
    """What the audit changed in training (see the module docstring), for the summary; logs a metric warning."""
    note = None
    if "class_imbalance" in report.warnings and config.sweep.metric not in BALANCED_METRICS:
        note = (
            f"the audit reports class imbalance but the selection metric is {config.sweep.metric}, which a "
            "majority-class model scores well on; consider --metric macro_f1 or balanced_accuracy"
        )
        get_run_logger().warning("%s", note)
    return AuditInforms(
        class_weights=uses_class_weights(config.train, report),
        metric=config.sweep.metric,
        near_duplicates_grouped=config.data.split_col is None and config.data.group_near_duplicates,
        dropped_rows=sum(report.dropped.values()),
        note=note,
    )
