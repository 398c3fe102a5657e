"""The retrain flow: prepare → what changed (skip? stop?) → audit → tokenizer → sweep → decide → deployable forms →
register, read top to bottom in `retrain`'s body.

The flow only orchestrates: every step is a task (tasks/) or, for the audit, the audit flow run as a subflow
(flows/audit.py), every decision a plain function (selection, expectations/audit), and the MLflow parent run is a
context manager that ends FINISHED (also when the audit blocked or the comparison stopped the night: an outcome, so
MLflow's lists do not mark it as a crash), FAILED (a step failed) or KILLED (a signal).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.states import Completed, Failed, State
from prefect.task_runners import ThreadPoolTaskRunner

from depthfinder.encoder.config import ModelConfig, TrainConfig
from depthfinder.encoder.deployment import Deployment, TriedDepth, UnmetLimit
from depthfinder.encoder.families import Family, unapplied_settings
from depthfinder.expectations.audit.config import AuditConfig
from depthfinder.expectations.audit.report import FOREIGN_ROWS, AuditReport
from depthfinder.expectations.changes.config import ChangesConfig
from depthfinder.expectations.changes.report import (
    FORCED,
    ChangeReport,
    Policy,
    changes_description,
    changes_lines,
    changes_markdown,
)
from depthfinder.expectations.table.config import DataConfig
from depthfinder.expectations.table.load import first_data_line
from depthfinder.flows.audit import audit_data, audit_informs, audit_report, publish_rows
from depthfinder.flows.card import model_card, stopped_note, unmet_note
from depthfinder.flows.config import RegistryConfig, RunConfig, SweepConfig, settings_used, without_credentials
from depthfinder.flows.crossfit import cross_fit
from depthfinder.flows.distill import distill
from depthfinder.flows.pool import pool_evidence
from depthfinder.flows.preflight import check_run
from depthfinder.flows.report import decision_markdown, outcome, short_outcome
from depthfinder.flows.review import (
    UNMET_STATE,
    data_source,
    flow_run_name,
    label_flow_run,
    night,
    night_marks,
    outcome_tags,
    run_title,
)
from depthfinder.flows.summary import RowsUsed, RunAudit, RunSummary
from depthfinder.flows.sweep import check_learning_rates, sweep_depths
from depthfinder.runtime.guard import process_guard
from depthfinder.runtime.interrupt import StoppedOnPurpose
from depthfinder.runtime.lock import one_retrain_at_a_time
from depthfinder.selection.budget import Budget
from depthfinder.selection.candidate import Candidate, arm_label, base_family, teacher_of
from depthfinder.selection.crossfit import CrossFit
from depthfinder.selection.decision import Decision
from depthfinder.selection.pool import ROWS_TO_LABEL, PoolUse, rows_to_label
from depthfinder.selection.rule import choose_depth, limit_violations, limits_text
from depthfinder.tasks.changes import compare_with_champion, find_champion_table
from depthfinder.tasks.data import PreparedData, drop_flagged_rows, prepare_dataset
from depthfinder.tasks.pool import PoolTexts, prepare_pool, teaching_texts, write_rows_to_label
from depthfinder.tasks.registry import find_unchanged_model, prepare_deployment, register_model, settle_registrations
from depthfinder.tasks.tracking import (
    close_abandoned_runs,
    describe_model,
    describe_stop,
    log_changes,
    log_dataset,
    log_summary,
    start_sweep_run,
)
from depthfinder.tasks.train import FormCheck, Training, open_families, prepare_tokenizer
from depthfinder.tracking.records import KnownVersion, ModelVersionRef
from depthfinder.tracking.runs import SweepRun, code_version, ending, flatten, resolve_tracking_uri


@flow(name="retrain", flow_run_name=flow_run_name, task_runner=ThreadPoolTaskRunner(max_workers=1))
def retrain(
    data: DataConfig,
    audit: AuditConfig = AuditConfig(),
    model: ModelConfig = ModelConfig(),
    train: TrainConfig = TrainConfig(),
    sweep: SweepConfig = SweepConfig(),
    registry: RegistryConfig = RegistryConfig(),
    changes: ChangesConfig = ChangesConfig(),
    force: bool = False,
) -> RunSummary | State:
    """Prepare the table, compare it with the champion's (skip? stop?), audit it (the audit flow, as a subflow),
    get each family's tokenizer, sweep depth, choose by accuracy per cost, measure the deployable forms and
    register the winner.

    Skipped (a completed state named Skipped) when the registered champion, or a challenger
    that lost to it, was trained on the same data, settings and code, or when the comparison
    with the champion's table finds nothing worth a retrain (`changes.skip_minor`); failed, in a
    state named Stopped before any training, when it finds data that looks like another task
    (`changes`), or Blocked when the audit blocks training; `force` retrains whatever it
    finds. One retrain of a registered model name runs at a time; a second waits for the first.
    SIGINT or SIGTERM stops it within a training step: its MLflow runs end KILLED, nothing is
    registered, and a rerun continues from what was finished.
    """
    config = RunConfig(data=data, audit=audit, changes=changes, model=model, train=train, sweep=sweep,
                       registry=registry)
    with process_guard() as guard:
        if guard.outermost:  # a worker or a deployment started it: the CLI did not check it or take its credentials
            config = without_credentials(config)
            check_run(config)
        registry, workdir = config.registry, Path(config.registry.workdir)
        dataset = drop_flagged_rows(prepare_dataset(data, workdir), audit, workdir)
        unlabeled = prepare_pool(sweep.unlabeled, sweep.labels, sweep.unlabeled_rows, data, dataset, workdir,
                                 audit.near_duplicate_threshold) if sweep.unlabeled else None
        label_flow_run(name=run_title(registry.model_name, data, dataset.data_hash))
        with one_retrain_at_a_time(registry.model_name, workdir):
            tracking_uri = tidied_store(registry)
            families = open_families(config.families, model)
            fingerprint = fingerprint_of(config, dataset, families)
            unchanged = None if force else find_unchanged_model(tracking_uri, registry.model_name,
                                                                fingerprint | {"sweep": "complete"})
            changed = what_changed(config, dataset, tracking_uri, fingerprint, unchanged, force)
            marks = forced_marks(config, dataset, changed)
            if unchanged:
                return skipped(config, dataset, unchanged.version, unchanged_reason(config, fingerprint, unchanged),
                               changed)
            if changed is not None and changed.policy.decision == "skip":
                return skipped(config, dataset, changed.champion_version, changed.policy.reason, changed)
            try:
                with sweep_run(config, dataset, marks) as run:
                    folder = run_folder(config, run)
                    stop_if_changes_say_so(config, dataset, run, changed)
                    report = audit_report(audit_data(config.data, config.audit, workdir, folder / "data_docs",
                                                     dataset=dataset, parent_run=run, return_state=True))
                    summary = audit_summary(config, dataset, run, changed, report)
                    trainings = trainings_of(config, dataset, families, summary.audit.informs.class_weights, run)
                    lr_check = check_learning_rates(config.sweep, trainings) if config.sweep.check_lr else []
                    candidates, halving, searches, budget = sweep_depths(config.sweep, trainings)
                    if (over := every_depth_over(candidates, config.sweep)) is not None:
                        return concluded(config, *unmet_night(config, run, summary.model_copy(update={
                            "candidates": candidates, "halving": halving, "search": searches, "budget": budget,
                            "unmet": over})))
                    teaching, evidence = taught_apart(config.sweep, unlabeled, dataset, workdir)
                    students = distill(config.sweep, trainings, candidates, teaching)
                    candidates += students
                    used = pool_use(unlabeled, teaching if students else None)
                    pool = evidence if students else unlabeled  # a student agrees with its teacher where it was taught
                    decision, crossfit, to_label = decided(candidates, config.sweep, budget, trainings, pool)
                    try:
                        chosen, deployment, decision = deployed(candidates, decision, dataset, config.sweep, folder,
                                                                unlabeled)
                    except LimitUnmet as verdict:
                        return concluded(config, *unmet_night(config, run, summary.model_copy(update={
                            "candidates": candidates, "selected_depth": None, "rule": decision, "halving": halving,
                            "search": searches, "budget": budget, "crossfit": crossfit, "pool": used,
                            "unmet": verdict.verdict})))
                    tags = night_tags(changed) | fingerprint | version_tags(candidates, decision, report, families)
                    registration = register_model(chosen, dataset, run, registry.model_name, config.sweep, tags,
                                                  deployment, changed)
                    summary = summary.model_copy(update={
                        "candidates": candidates, "selected_depth": decision.selected_depth, "rule": decision,
                        "halving": halving, "lr_check": lr_check, "deployment": deployment, "search": searches,
                        "budget": budget, "crossfit": crossfit, "pool": used,
                        "rows_to_label": str(write_rows_to_label(pool, to_label, folder / ROWS_TO_LABEL).resolve())
                        if to_label else None,
                        **dict(registration)})  # the summary has each field of the registration
                    record_decision(config, run, summary)
                    describe_model(run, registration.model.name, registration.model.version,
                                   model_card(summary, fingerprint))
            except Blocked as blocked:
                return concluded(config, blocked.summary, blocked.state())
            return concluded(config, summary, Completed(message=outcome(summary), data=summary))


def tidied_store(registry: RegistryConfig) -> str:
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


def audit_summary(config: RunConfig, dataset: PreparedData, run: SweepRun, changes: ChangeReport | None,
                  report: AuditReport) -> RunSummary:
    """The summary so far, with the audit's report and what it changes in training; Blocked when a check blocks
    training."""
    summary = RunSummary(
        audit=RunAudit(**dict(report), informs=audit_informs(config, report)),
        mlflow_run_id=run.run_id, data_hash=dataset.data_hash, changes=changes, rows=rows_used(dataset),
    )
    if blocking := report.blocking(config.audit.strict):
        # The product's verdict on the data, not a fault: a warning (an error would count as one, runtime.faults).
        get_run_logger().warning("The audit blocks training: %s", ", ".join(blocking))
        stop(config, run, summary, f"the audit blocks training: {', '.join(blocking)}")
    return summary


def trainings_of(config: RunConfig, dataset: PreparedData, families: list[Family], class_weights: bool,
                 run: SweepRun) -> list[Training]:
    """What each family's candidates train with: its tokenizer and its recipe (the settings a family does not use
    named in the log)."""
    if unapplied := unapplied_settings(families, config.model, config.train):
        get_run_logger().warning("%s", unapplied)
    workdir = Path(config.registry.workdir)
    return [Training(family, dataset, prepare_tokenizer(family, dataset, config.model, workdir), config.model,
                     family.recipe(config.train), class_weights, run, workdir,
                     onnx_cost=config.sweep.cost == "onnx_latency_ms_p50", concurrent=config.sweep.workers_per_machine,
                     onnx_size=config.sweep.asks_size, vocabulary_min_count=config.sweep.vocabulary_min_count,
                     form_check=form_check(config.sweep))
            for family in families]


def form_check(sweep: SweepConfig) -> FormCheck | None:
    """Under a size limit, the check each candidate's forms pass on its validation rows, so that the rule knows
    which depth can ship within the limit (the deployment gate judges the chosen depth's on the test split); None
    without one."""
    if sweep.max_size_mb is None:
        return None
    return FormCheck(metric=sweep.metric, margin=sweep.deployment_margin)


def decided(candidates: list[Candidate], sweep: SweepConfig, budget: Budget | None, trainings: list[Training],
            pool: PoolTexts | None) -> tuple[Decision, CrossFit | None, list[int]]:
    """The rule's choice among the candidates, judged again on out-of-fold rows when the validation rows cannot
    settle a cheaper depth (flows.crossfit), and on the unlabelled pool when they still cannot (flows.pool), its
    reason saying what the budget left untried; what cross-fitting did (None when not needed); and the pool's rows
    whose labels could settle what is left (selection.pool.rows_to_label)."""
    decision = choose_depth(candidates, sweep)
    out_of_fold, crossfit = cross_fit(sweep, trainings, candidates, decision)
    if out_of_fold is not None:
        decision = choose_depth(candidates, sweep, out_of_fold)
    to_label = []
    dataset, workdir = trainings[0].dataset, trainings[0].workdir
    if (bounds := pool_evidence(sweep, pool, candidates, decision, dataset, workdir)) is not None:
        decision = choose_depth(candidates, sweep, out_of_fold, bounds)
        if decision.rows_to_label:  # the rule counted them; the flow writes them
            to_label = rows_to_label(decision.scores, (decision.best_family, decision.best_depth),
                                     (decision.selected_family, decision.selected_depth), bounds, sweep.metric)
    if budget is not None:  # the sweep's, not the rule's: a replay of the rule gives the same choice without it
        decision = decision.model_copy(update={"reason": f"{decision.reason}; {budget.sentence}"})
    return decision, crossfit, to_label


def pool_use(prepared: PoolTexts | None, taught: PoolTexts | None) -> PoolUse | None:
    """What the run made of its unlabelled texts (None without any): the copies left out, the new texts used and how
    many of them students were taught on."""
    if prepared is None:
        return None
    return PoolUse(texts=prepared.read, of_held_out=prepared.of_held_out, of_train=prepared.of_train,
                   used=prepared.rows, taught=taught.rows if taught is not None else 0, labelled=prepared.labelled)


def taught_apart(sweep: SweepConfig, pool: PoolTexts | None, dataset: PreparedData,
                 workdir: Path) -> tuple[PoolTexts | None, PoolTexts | None]:
    """The unlabelled texts students learn from (sweep.distill_unlabeled per train row) and the pool left as evidence;
    (None, pool) when nothing is distilled on it."""
    if pool is None or sweep.distill == "off" or not sweep.distill_unlabeled:
        return None, pool
    return teaching_texts(pool, round(sweep.distill_unlabeled * dataset.split_rows.get("train", 0)), workdir)


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


def skipped(
    config: RunConfig, dataset: PreparedData, version: str, reason: str, changes: ChangeReport | None,
) -> State:
    """The completed state of a run that keeps `version`, and its summary."""
    model = config.registry.model_name
    summary = RunSummary(
        skipped=True, reason=reason, data_hash=dataset.data_hash, changes=changes, rows=rows_used(dataset),
        model=ModelVersionRef(name=model, version=version, uri=f"models:/{model}/{version}"),
    )
    return concluded(config, summary, Completed(name="Skipped", message=reason, data=summary))


def concluded(config: RunConfig, summary: RunSummary, state: State) -> State:
    """The run's final state, with its outcome as the last log line, and the flow run named with the night's marks
    and tagged with its outcome."""
    get_run_logger().info("Outcome: %s", outcome(summary))
    label_flow_run(name=run_title(config.registry.model_name, config.data, summary.data_hash, night_marks(summary)),
                   tags=outcome_tags(summary, config.registry.model_name))
    return state


def shipped(candidates: list[Candidate], decision: Decision) -> Candidate:
    """The model that ships: the chosen (family, depth)'s best seed."""
    chosen = [c for c in candidates if c.usable and (c.family, c.depth) == (decision.selected_family,
                                                                           decision.selected_depth)]
    return max(chosen, key=lambda c: c.metrics[decision.metric])


def deployed(candidates: list[Candidate], decision: Decision, dataset: PreparedData, sweep: SweepConfig,
             folder: Path, pool: PoolTexts | None = None) -> tuple[Candidate, Deployment, Decision]:
    """The model that ships, its deployable forms, and the decision: the chosen depth's, unless under a size limit
    (max_size_mb) the gate refused every form of it within the limit (the rule held it to its pruned size): then the
    next depth the rule lets ship whose shipped forms fit, the reason saying why; LimitUnmet, with every form tried,
    when none does (a verdict: nothing is registered)."""
    limit = sweep.max_size_mb
    arms = [(decision.selected_family, decision.selected_depth)]
    if limit is not None:
        arms += sorted(((s.family, s.depth) for s in decision.scores if s.may_ship and (s.family, s.depth) not in arms),
                       key=lambda arm: next(s.cost for s in decision.scores if (s.family, s.depth) == arm))
    refused, tried = [], []
    for family, depth in arms:
        at = decision.model_copy(update={"selected_family": family, "selected_depth": depth})
        chosen = shipped(candidates, at)
        deployment = prepare_deployment(chosen, dataset, sweep, str(folder / "deployment"), pool)
        smallest = min(v.size_mb for v in deployment.variants if v.shipped)  # torch always ships
        if limit is None or smallest <= limit:
            why = "; ".join(refused)
            return chosen, deployment, at if not refused else at.model_copy(update={
                "reason": f"{decision.reason}; {at.selected_label} ships instead: {why}"})
        refused.append(f"{arm_label(family, depth)}'s smallest form the gate shipped weighs {smallest:.2f} MiB, over "
                       f"max_size_mb {limit:g}")
        tried.append(_tried(at.selected_label, chosen, deployment=deployment))
    raise LimitUnmet(UnmetLimit(limit_mb=limit, limits=limits_text(sweep), tried=tried))


def every_depth_over(candidates: list[Candidate], sweep: SweepConfig) -> UnmetLimit | None:
    """The verdict when every depth that trained exceeds a hard limit (max_size_mb, max_latency_ms, max_params) before
    the gate, so the rule could choose none: each depth's best seed's sizes and the limits it exceeds (a depth is out
    when any seed is, as the rule has it); None otherwise."""
    usable = [c for c in candidates if c.usable and not c.kept_twin]
    over = {(c.family, c.depth): why for c in usable if (why := limit_violations(c, sweep))}
    arms = sorted({(c.family, c.depth) for c in usable}, key=lambda arm: (arm[1], arm[0]))
    if not arms or any(arm not in over for arm in arms):
        return None
    named = {base_family(family) for family, _ in arms} != {"scratch"}
    best = {arm: max((c for c in usable if (c.family, c.depth) == arm), key=lambda c: c.metrics.get(sweep.metric, 0))
            for arm in arms}
    return UnmetLimit(limit_mb=sweep.max_size_mb, limits=limits_text(sweep), tried=[
        _tried(arm_label(*arm, named=named), best[arm], over=over[arm]) for arm in arms])


def _tried(label: str, candidate: Candidate, **verdict: object) -> TriedDepth:
    """A depth the verdict records under `label`: its candidate's weighed forms and those the gate passed on the
    validation rows, with what became of it (`over`, the limits it exceeds; or `deployment`, the test split's gate)."""
    cost = candidate.cost
    return TriedDepth(depth=label, sizes_mb=cost.sizes_mb if cost else {}, passed_mb=cost.passed_mb if cost else {},
                      **verdict)


class LimitUnmet(Exception):
    """No form the deployment gate ships meets the size limit, at any depth the rule lets ship: the verdict."""

    def __init__(self, verdict: UnmetLimit) -> None:
        super().__init__(verdict.sentence())
        self.verdict = verdict


def unmet_night(config: RunConfig, run: SweepRun, summary: RunSummary) -> tuple[RunSummary, State]:
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
              "sweep": {"task_runner", "workers", "dask_address"}}


def config_hash(config: RunConfig) -> str:
    """What decides the model besides the data, as a short hash."""
    settings = config.model_dump(mode="json", exclude=UNDECIDING)
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]
