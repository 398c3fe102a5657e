"""The audit flow (prepare the table, drop what the user asked, run the GX checks, publish the report), and how the
audit informs training.

`depthfinder audit` and the audit deployment run it alone; the retrain flow runs it as a subflow, handing it the
table it prepared and its MLflow parent run (see `audit_data`).

How the audit informs training (the retrain flow calls `audit_informs`):
- rows the user asked to drop (`audit.drop`: conflicts, empty, leaks) are removed before
  the audit and counted in the report and the summary (`audit.dropped`);
- a row's split is keyed by its text before splitting (`data.group_near_duplicates`):
  exact duplicates never straddle splits, near-duplicates rarely, and the
  `cross_split_near_duplicates` check reports those that do (`--drop-leaks` drops them);
- a `class_imbalance` warning turns on class-weighted loss (`train.class_weights: auto`,
  encoder.config.TrainConfig.uses_class_weights);
- the selection metric is class-balanced unless the user chose another one: the default
  `sweep.metric: macro_f1` already is (and so is the early-stopping monitor,
  val/macro_f1), so the audit never has to override it and `rule.metric` is always the
  concrete metric used. A user who picks `accuracy` on imbalanced data keeps it, with a
  warning in the log and in the summary's `audit.informs.note`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import MarkdownArtifact, TableArtifact
from prefect.states import Failed, State
from pydantic.json_schema import SkipJsonSchema

from depthfinder.expectations.audit.config import AuditConfig
from depthfinder.expectations.audit.report import (
    EXAMPLE_WIDTH,
    FLAGGED_ROWS,
    LINES,
    AuditReport,
    CheckResult,
    audit_markdown,
    suspect_rows,
)
from depthfinder.expectations.table.config import DataConfig
from depthfinder.expectations.table.load import first_data_line
from depthfinder.flows.config import WORKDIR, RunConfig
from depthfinder.flows.review import BLOCKED
from depthfinder.flows.summary import AuditInforms
from depthfinder.runtime.guard import process_guard
from depthfinder.tasks.audit import audit_dataset
from depthfinder.tasks.data import PreparedData, drop_flagged_rows, prepare_dataset
from depthfinder.tasks.tracking import log_audit
from depthfinder.tracking.runs import SweepRun

BALANCED_METRICS = ("macro_f1", "balanced_accuracy")
# Suspect rows a Prefect table artifact lists; the MLflow parent run's CSV holds every one.
ROWS_SHOWN = 200


@flow(name="audit")
def audit_data(
    data: DataConfig, audit: AuditConfig = AuditConfig(), workdir: Path = WORKDIR,
    data_docs: Path | None = None,
    dataset: SkipJsonSchema[PreparedData | None] = None, parent_run: SkipJsonSchema[SweepRun | None] = None,
) -> AuditReport | State:
    """Audit a labelled table (GX Data Docs under `data_docs`, if given) and publish the report as the artifacts
    `audit-report` and `flagged-rows`; the run fails, in a state named Blocked, when a check blocks training.

    The retrain flow runs it as a subflow and hands it the table it prepared (`dataset`: not prepared again) and
    its MLflow parent run (`parent_run`), which keeps the report, its flagged rows and Data Docs. Neither is a
    field of the UI's form (a run started there prepares its table). The artifacts go on the page of the flow run
    that runs it, where a reviewer reads the night, and on its own page when it runs alone.
    """
    with process_guard():  # as a subflow, inside the retrain's guard: takes SIGTERM back from Prefect's subflow engine
        if dataset is None:
            dataset = drop_flagged_rows(prepare_dataset(data, workdir), audit, workdir)
        docs, first_line = str(data_docs) if data_docs else None, first_data_line(data)
        report = audit_dataset(dataset, audit, docs)
        if parent_run is not None:
            log_audit(parent_run, report, docs, first_line)
        publish_audit(report, first_line, in_mlflow=parent_run is not None, page=caller_page())
        if blocking := report.blocking(audit.strict):  # on purpose: a state of its own, not the plain Failed of a crash
            return Failed(name=BLOCKED.capitalize(),
                          message=f"{BLOCKED}: the audit blocks training: {', '.join(blocking)}", data=report)
        return report


def audit_report(state: State) -> AuditReport:
    """The report of a finished audit flow run, passed or blocked; what else ended it (an error in a check, a fault
    of the store) is raised, as if the audit had run in the caller."""
    report = state.result(raise_on_failure=False)
    if isinstance(report, AuditReport):
        return report
    raise report if isinstance(report, BaseException) else RuntimeError(f"the audit ended {state.name}: "
                                                                        f"{state.message}")


def caller_page() -> str | None:
    """The flow run that runs this one as a subflow (the retrain's night), whose page shows the audit; None when it
    runs alone (its own page)."""
    from prefect.runtime import flow_run

    return flow_run.parent_flow_run_id


def publish_audit(report: AuditReport, first_line: int | None, in_mlflow: bool = True, page: str | None = None) -> None:
    """The audit as the Prefect artifact `audit-report`, and the rows it flagged as `flagged-rows`, on the flow run
    `page` (None: this one)."""
    named = report.blocking_failures or report.warnings
    MarkdownArtifact(key="audit-report", markdown=audit_markdown(report), flow_run_id=page,
                     description=f"{report.verdict.capitalize()}" + (f": {', '.join(named)}" if named else "")).create()
    publish_rows("flagged-rows", "rows the audit flagged", report.checks, first_line, FLAGGED_ROWS if in_mlflow
                 else None, page=page)


def publish_rows(key: str, what: str, checks: list[CheckResult], first_line: int | None, csv: str | None,
                 note: str = "", page: str | None = None) -> None:
    """The checks' suspect rows as a Prefect table artifact (shown_rows: the first ROWS_SHOWN) on the flow run `page`
    (None: this one), described count first, with where the CSV of every one is (`csv` on the MLflow parent run);
    nothing when none."""
    rows = suspect_rows(checks, first_line)
    if not rows:
        return
    shown = shown_rows(rows[:ROWS_SHOWN])
    which = (f"the first {len(shown)} shown" if len(rows) > len(shown) else "all shown") + f"; {by_check(rows)}"
    where = f"; every one is in `{csv}` on the MLflow parent run" if csv else ""
    TableArtifact(key=key, table=shown, flow_run_id=page, description=f"{len(rows)} {what} ({which}){where}"
                  + (f" ({note})" if note else "") + f". {LINES}.").create()


# The columns of a Prefect table of suspect rows, in the order a reader needs them: which check, where the row is,
# its label (and the one the check expects), then its text, last and shortened (the Prefect UI never wraps a cell,
# so a long text would push every column after it off the page; the CSV holds it whole).
SHOWN_COLUMNS = ("check", "line", "row", "label", "likely_label", "text", "pair")  # pair: a pairs table's second text


def shown_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Suspect rows as a Prefect table shows them: SHOWN_COLUMNS without those empty on every row (`likely_label`
    where no check knows one, `line` without file lines) and without `check` when one check flagged them all."""
    columns = [column for column in SHOWN_COLUMNS if any(row[column] not in (None, "") for row in rows)]
    if len({row["check"] for row in rows}) == 1:
        columns.remove("check")
    return [{column: shortened(row[column]) if column in ("text", "pair") else row[column] for column in columns}
            for row in rows]


def shortened(text: str | None) -> str | None:
    """A text of at most EXAMPLE_WIDTH characters, `...` where it was cut (as the audit's examples are)."""
    return text if text is None or len(text) <= EXAMPLE_WIDTH else text[: EXAMPLE_WIDTH - 3] + "..."


def by_check(rows: list[dict]) -> str:
    """`cross_split_near_duplicates 3, suspected_label_noise 2`: the rows each check flagged (a row two checks flag
    is listed once for each), as each check's headline counts them (foreign_rows: the rows it flagged, before the
    rows flagged by chance are subtracted)."""
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["check"]] = counts.get(row["check"], 0) + 1
    return ", ".join(f"{check} {count}" for check, count in counts.items())


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
        class_weights=config.train.uses_class_weights(report.warnings),
        metric=config.sweep.metric,
        near_duplicates_grouped=config.data.split_col is None and config.data.group_near_duplicates,
        dropped_rows=sum(report.dropped.values()),
        note=note,
    )
