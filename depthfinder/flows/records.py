"""What a night leaves: the MLflow parent run (its params, dataset, summary, tags, metrics and plots, ended FINISHED
on an outcome, FAILED or KILLED), the Prefect artifacts and the flow run's final state and name, the fingerprint that
tells a night with nothing new to learn, and the nights that end before training (skipped, stopped, blocked) or
with a limit unmet."""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

from prefect import get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.states import Completed, Failed, State

from depthfinder.encoder.families import Family
from depthfinder.expectations.audit.report import FOREIGN_ROWS, AuditReport
from depthfinder.expectations.changes.report import (
    FORCED,
    ChangeReport,
    Policy,
    changes_description,
    changes_lines,
    changes_markdown,
)
from depthfinder.expectations.table.load import first_data_line
from depthfinder.flows.audit import publish_rows
from depthfinder.flows.card import stopped_note, unmet_note
from depthfinder.flows.config import RegistryConfig, RunConfig, settings_used
from depthfinder.flows.report import decision_markdown, outcome, short_outcome
from depthfinder.flows.review import (
    UNMET_STATE,
    data_source,
    label_flow_run,
    night,
    night_marks,
    outcome_tags,
    run_title,
)
from depthfinder.flows.summary import RowsUsed, RunSummary
from depthfinder.runtime.interrupt import StoppedOnPurpose
from depthfinder.selection.candidate import Candidate, base_family, teacher_of
from depthfinder.selection.decision import Decision
from depthfinder.tasks.changes import compare_with_champion, find_champion_table
from depthfinder.tasks.data import PreparedData
from depthfinder.tasks.registry import settle_registrations
from depthfinder.tasks.tracking import (
    close_abandoned_runs,
    describe_stop,
    log_changes,
    log_dataset,
    log_summary,
    start_sweep_run,
)
from depthfinder.tracking.records import KnownVersion, ModelVersionRef
from depthfinder.tracking.runs import SweepRun, code_version, ending, flatten
from depthfinder.tracking.store import resolve_tracking_uri


def tidy_store(registry: RegistryConfig) -> str:
    """The tracking URI, once what a retrain that died left behind is tidied: its MLflow runs left RUNNING ended,
    and the versions it registered and never judged settled."""
    tracking_uri = resolve_tracking_uri(registry.tracking_uri)
    if closed := close_abandoned_runs(tracking_uri, registry.experiment, registry.model_name):
        get_run_logger().warning("ended %d MLflow runs left RUNNING by a retrain that died", len(closed))
    for settled in settle_registrations(tracking_uri, registry.model_name):
        get_run_logger().warning("%s %s", registry.model_name, settled)
    return tracking_uri


def forced_marks(config: RunConfig, dataset: PreparedData, changes: ChangeReport | None) -> list[str]:
    """`forced` when --force overrode what the comparison said (else none); the flow run is renamed with it at
    once, so the runs list shows it before the night ends."""
    marks = [FORCED] if changes is not None and changes.policy.overridden is not None else []
    if marks:
        label_flow_run(name=run_title(config.registry.model_name, config.data, dataset.data_hash, marks), tags=marks)
    return marks


def stop_if_changes_say_so(config: RunConfig, dataset: PreparedData, run: SweepRun,
                           changes: ChangeReport | None) -> None:
    """What changed, on the parent run; Blocked (Stopped) before the audit when the comparison says stop."""
    if changes is None:
        return
    log_changes(run, changes, first_data_line(config.data))
    if changes.policy.decision == "stop":
        stop(config, run, RunSummary(changes=changes, mlflow_run_id=run.run_id, data_hash=dataset.data_hash,
                                     rows=rows_used(dataset)), changes.policy.reason)


def stop(config: RunConfig, run: SweepRun, summary: RunSummary, reason: str) -> NoReturn:
    """End a night before training on purpose: its summary so far on the parent run, renamed with its mark
    (`stopped · ...`, `blocked · ...`), with what stopped it and what to do next as its description; raises
    Blocked."""
    marks = night_marks(summary)
    log_summary(run, summary.to_dict(), {"depthfinder.outcome": marks[-1]}, [])
    describe_stop(run, stopped_note(summary, data_source(config.data)),
                  run_title(config.registry.model_name, config.data, summary.data_hash, marks))
    raise Blocked(marks[-1], reason, summary)


class Blocked(StoppedOnPurpose):
    """The run stopped before training on purpose (`stopped`: the comparison with the champion; `blocked`: the
    audit), why, and its summary so far."""

    def __init__(self, mark: str, reason: str, summary: RunSummary) -> None:
        super().__init__(f"{mark}: {reason}")
        self.mark, self.summary = mark, summary

    def state(self) -> State:
        """A failed state (the CLI exits 1) named for the stop, Stopped or Blocked, the reason its message: the
        Prefect UI shows it where a crash shows Failed."""
        return Failed(name=self.mark.capitalize(), message=str(self), data=self.summary)


def what_changed(
    config: RunConfig, dataset: PreparedData, tracking_uri: str, fingerprint: dict[str, str],
    unchanged: KnownVersion | None, force: bool,
) -> ChangeReport | None:
    """Tonight's table against the champion's (None without a champion, or when its table is not kept), with the
    night's policy: skip when unchanged, retrain when forced; published as the `what-changed` artifact."""
    registry = config.registry
    champion = find_champion_table(tracking_uri, registry.model_name, Path(registry.workdir))
    if champion is None:
        return None
    if champion.path is None:
        get_run_logger().warning("version %s (champion) was registered without its training table; nothing to "
                                 "compare tonight's with (this run's winner keeps it)", champion.version)
        return None
    docs = Path(registry.workdir) / "changes" / f"{champion.version}-{dataset.table_hash}" / "data_docs"
    changed = [key for key in SETTINGS if champion.tags.get(key) != fingerprint[key]]
    if (own := champion.tags.get("checkpoint")) and own not in fingerprint["pretrained"].split("+"):
        changed.append(f"the champion's checkpoint ({champion.tags.get('family')}) is not among tonight's")
    report = compare_with_champion(dataset, champion, f"models:/{registry.model_name}/{champion.version}",
                                   config.changes, config.sweep.metric, changed, str(docs))
    said = report.policy
    if force:
        report = report.model_copy(update={"policy": Policy(
            decision="retrain", reason=f"forced (--force); the comparison said {said.decision}: {said.reason}",
            overridden=None if said.decision == "retrain" else said.decision)})
    elif unchanged:
        report = report.model_copy(update={"policy": Policy(
            decision="skip", reason=unchanged_reason(config, fingerprint, unchanged))})
    create_markdown_artifact(key="what-changed", markdown=changes_markdown(report),
                             description=changes_description(report))
    publish_rows("foreign-rows", "rows added flagged foreign", report.foreign, first_data_line(config.data),
                 FOREIGN_ROWS, "changes.foreign_rows counts those beyond the rows of the same task flagged by chance")
    get_run_logger().info("What changed since version %s:\n%s", champion.version, "\n".join(changes_lines(report)))
    return report


@contextlib.contextmanager
def sweep_run(config: RunConfig, dataset: PreparedData, marks: Sequence[str] = ()) -> Iterator[SweepRun]:
    """The sweep's MLflow parent run (named `forced · ...` when --force overrode the comparison), ended FINISHED
    (also when the night stopped or was blocked on purpose), FAILED or KILLED by how the block ends."""
    registry = config.registry
    run = start_sweep_run(
        registry.tracking_uri, registry.experiment, registry.model_name,
        run_title(registry.model_name, config.data, dataset.data_hash, marks),
        params=run_params(config, dataset), tags={"depthfinder.data_hash": dataset.data_hash},
        night=night(dataset.data_hash),
    )
    with ending(run.client, run.run_id):
        log_dataset(run, dataset.path, data_source(config.data), dataset.data_hash)
        yield run


def run_params(config: RunConfig, dataset: PreparedData) -> dict[str, Any]:
    """The parent run's params: the settings as the run applied them (flows.config.settings_used), but a built-in
    dataset's row count when the data is a file (a default the run never used), and the rows the run used, in all
    and per split (`data.rows`, `data.rows.train`, ...)."""
    unused = {"data": {"dataset_rows"}} if config.data.path is not None else None
    rows = rows_used(dataset)
    return flatten("", settings_used(config).model_dump(mode="json", exclude=unused)) | {
        "data.rows": rows.total, **{f"data.rows.{split}": getattr(rows, split) for split in ("train", "val", "test")}}


def rows_used(dataset: PreparedData) -> RowsUsed:
    return RowsUsed.of(dataset.rows, dataset.split_rows)


def run_folder(config: RunConfig, run: SweepRun) -> Path:
    """Where this run's own files go (Data Docs, plots)."""
    return Path(config.registry.workdir) / "runs" / run.run_id


def unchanged_reason(config: RunConfig, fingerprint: dict[str, str], unchanged: KnownVersion) -> str:
    """Why a run with nothing new to learn is skipped."""
    return (
        f"{config.registry.model_name} version {unchanged.version} ({unchanged.alias}, depth {unchanged.depth}) was "
        f"trained on the same data ({fingerprint['data_hash']}), settings ({fingerprint['config_hash']}) and code "
        f"({fingerprint['code_version']}); pass --force (the flow's force parameter) to retrain anyway"
    )


def skip_night(
    config: RunConfig, dataset: PreparedData, version: str, reason: str, changes: ChangeReport | None,
) -> State:
    """The completed state of a run that keeps `version`, and its summary."""
    model = config.registry.model_name
    summary = RunSummary(
        skipped=True, reason=reason, data_hash=dataset.data_hash, changes=changes, rows=rows_used(dataset),
        model=ModelVersionRef(name=model, version=version, uri=f"models:/{model}/{version}"),
    )
    return conclude(config, summary, Completed(name="Skipped", message=reason, data=summary))


def conclude(config: RunConfig, summary: RunSummary, state: State) -> State:
    """The run's final state, with its outcome as the last log line, and the flow run named with the night's marks
    and tagged with its outcome."""
    get_run_logger().info("Outcome: %s", outcome(summary))
    label_flow_run(name=run_title(config.registry.model_name, config.data, summary.data_hash, night_marks(summary)),
                   tags=outcome_tags(summary, config.registry.model_name))
    return state


def end_unmet(config: RunConfig, run: SweepRun, summary: RunSummary) -> tuple[RunSummary, State]:
    """A night whose hard limits no depth met: its summary (every form or depth tried) on the parent run, which ends
    FINISHED, and as the `depth-decision` artifact; nothing registered; a completed state of its own, Unmet (the CLI
    exits 3)."""
    note = unmet_note(summary)
    log_summary(run, summary.to_dict(), {"depthfinder.outcome": "limit unmet"}, [], {})
    describe_stop(run, note, run_title(config.registry.model_name, config.data, summary.data_hash,
                                       night_marks(summary)))
    create_markdown_artifact(key="depth-decision", markdown=note, description=short_outcome(summary))
    get_run_logger().warning("%s", summary.unmet.sentence())
    return summary, Completed(name=UNMET_STATE, message=outcome(summary), data=summary)


def night_tags(changes: ChangeReport | None) -> dict[str, str]:
    """The version's first tag, where the versions table shows it: what the night's comparison with the champion
    decided (`retrain`, or `forced past stop` when --force overrode it); none for a first version."""
    return {} if changes is None else {"changes": changes.policy.tag}


def version_tags(candidates: list[Candidate], decision: Decision, report: AuditReport,
                 families: list[Family] = ()) -> dict[str, str]:
    """Tags of the registered version besides its fingerprint, each a short value (the model card says the rest):
    sweep completeness, family (with the chosen checkpoint's content hash) and depth, audit."""
    failed = [c for c in candidates if c.status == "failed"]
    chosen = next((f.identity() for f in families if f.name == base_family(decision.selected_family)), None)
    teacher = teacher_of(decision.selected_family)
    return {
        "sweep": f"incomplete: {len(failed)} failed" if failed else "complete",
        "family": decision.selected_family,
        **({"checkpoint": chosen} if chosen else {}),
        **({"teacher": teacher} if teacher else {}),
        "depth": str(decision.selected_depth),
        "audit": report.verdict,
    }


def record_decision(config: RunConfig, run: SweepRun, summary: RunSummary) -> None:
    """The decision's plots, summary.json and tags on the parent run, and the `depth-decision` artifact."""
    from depthfinder.selection.plots import plot_metric_vs_cost, plot_metric_vs_depth

    folder = run_folder(config, run) / "plots"
    pruned = [c for c in summary.candidates if c.status in ("pruned", "screened")]
    plots = [plot_metric_vs_depth(summary.rule, folder / "metric_vs_depth.png", pruned),
             plot_metric_vs_cost(summary.rule, folder / "metric_vs_cost.png")]
    tags = {"depthfinder.selected_depth": summary.selected_depth, "depthfinder.family": summary.rule.selected_family,
            "depthfinder.promoted": "promoted" if summary.promoted else "not promoted"}
    log_summary(run, summary.to_dict(), tags, [str(path) for path in plots], decision_metrics(summary),
                [summary.rows_to_label] if summary.rows_to_label else [])
    create_markdown_artifact(key="depth-decision", markdown=decision_markdown(summary, plots),
                             description=short_outcome(summary))
    get_run_logger().info("%s", summary.rule.reason)


def decision_metrics(summary: RunSummary) -> dict[str, float]:
    """The parent run's metrics: the chosen candidate's validation and test scores, its depth, what cross-fitting
    spent on how many rows, the unlabelled texts the rule bounded depths on (and those to label), and the champion
    comparison on the test rows promotion judged on (the challenger's scores, and the champion's when there was one),
    and both models' scores on the rows it reported apart."""
    chosen = next(c for c in summary.candidates if c.usable and c.depth == summary.selected_depth
                  and c.family == summary.rule.selected_family)
    figures = {"chosen.depth": summary.selected_depth, **{f"chosen.val.{k}": v for k, v in chosen.metrics.items()},
               **{f"chosen.test.{k}": v for k, v in chosen.test_metrics.items()}}
    for side, metrics in (("challenger", summary.challenger_test_metrics), ("champion", summary.champion_test_metrics)):
        figures |= {f"{side}.test.{key}": value for key, value in (metrics or {}).items()}
    if summary.crossfit is not None and summary.crossfit.ran:
        fit = summary.crossfit
        figures |= {"crossfit.rows": fit.rows, "crossfit.folds": fit.folds, "crossfit.seconds": fit.seconds,
                    "crossfit.budget_seconds": fit.budget_seconds}
    rule = summary.rule
    if rule.unlabeled_rows:
        figures |= {"pool.rows": rule.unlabeled_rows, "pool.labelled": rule.labelled_texts or 0,
                    "pool.to_label": rule.rows_to_label or 0}
    if summary.pool is not None:
        figures |= {"pool.texts": summary.pool.texts, "pool.of_held_out": summary.pool.of_held_out,
                    "pool.of_train": summary.pool.of_train, "pool.used": summary.pool.used,
                    "pool.taught": summary.pool.taught}
    for rows in summary.rows_apart:  # the test rows promotion reported apart, by standing
        figures |= {f"apart.{rows.standing}.rows": rows.rows, f"apart.{rows.standing}.challenger": rows.challenger,
                    f"apart.{rows.standing}.champion": rows.champion}
    return figures


def fingerprint_of(config: RunConfig, dataset: PreparedData, families: list[Family]) -> dict[str, str]:
    """The version tags that decide a model: what it learned from (every column the audit judged, the
    pretrained checkpoint's content), with which settings and code."""
    identities = [identity for family in families if (identity := family.identity()) is not None]
    return {
        "data_hash": dataset.data_hash,
        "table_hash": dataset.table_hash,
        "pretrained": "+".join(sorted(identities)) or "none",  # the checkpoints given, in any order
        "config_hash": config_hash(config),
        "code_version": code_version(),
    }


# The fingerprint's parts that are settings: when one differs from the champion's, the night retrains.
SETTINGS = ("config_hash", "code_version", "pretrained")


# Settings that do not decide the model: where the data comes from and how it is read and split
# (their effect is in the table's content hash, so another spelling of the same file is the same
# data), where the checkpoint is (its content hash is in the fingerprint), where results are
# recorded, when a change is worth a retrain, and where candidates train.
UNDECIDING = {"data": True, "changes": True, "model": {"pretrained"}, "registry": True,
              "sweep": {"runner": True}}


def config_hash(config: RunConfig) -> str:
    """What decides the model besides the data, as a short hash."""
    settings = config.model_dump(mode="json", exclude=UNDECIDING)
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]
