"""The retrain flow: prepare → what changed (skip? stop?) → audit → tokenizer → sweep → decide on the validation rows →
students → cross-fitting → the pool (the rule judging again with each step's evidence) → deployable forms → register,
read top to bottom in `retrain`'s body.

The flow only orchestrates: every step is a task (tasks/) or, for the audit, the audit flow run as a subflow
(flows/audit.py), every decision a plain function (selection, expectations/audit), and the MLflow parent run is a
context manager that ends FINISHED (also when the audit blocked or the comparison stopped the night: an outcome, so
MLflow's lists do not mark it as a crash), FAILED (a step failed) or KILLED (a signal).
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow, get_run_logger
from prefect.states import Completed, State
from prefect.task_runners import ThreadPoolTaskRunner

from depthfinder.encoder.config import ModelConfig, TrainConfig
from depthfinder.encoder.families import Family, unapplied_settings
from depthfinder.expectations.audit.config import AuditConfig
from depthfinder.expectations.audit.report import AuditReport
from depthfinder.expectations.changes.config import ChangesConfig
from depthfinder.expectations.changes.report import (
    ChangeReport,
)
from depthfinder.expectations.table.config import DataConfig
from depthfinder.flows.audit import audit_data, audit_informs, audit_report
from depthfinder.flows.card import model_card
from depthfinder.flows.config import RegistryConfig, RunConfig, SweepConfig, without_credentials
from depthfinder.flows.crossfit import cross_fit
from depthfinder.flows.distill import distill
from depthfinder.flows.forms import LimitUnmet, deploy_chosen, every_depth_over, form_check
from depthfinder.flows.pool import pool_evidence, pool_use, split_pool, texts_to_label
from depthfinder.flows.preflight import check_run
from depthfinder.flows.records import (
    Blocked,
    conclude,
    end_unmet,
    fingerprint_of,
    forced_marks,
    night_tags,
    record_decision,
    rows_used,
    run_folder,
    skip_night,
    stop,
    stop_if_changes_say_so,
    sweep_run,
    tidy_store,
    unchanged_reason,
    version_tags,
    what_changed,
)
from depthfinder.flows.report import outcome
from depthfinder.flows.review import (
    flow_run_name,
    label_flow_run,
    run_title,
)
from depthfinder.flows.summary import RunAudit, RunSummary
from depthfinder.flows.sweep import check_learning_rates, sweep_depths
from depthfinder.runtime.guard import process_guard
from depthfinder.runtime.lock import one_retrain_at_a_time
from depthfinder.selection.budget import Budget
from depthfinder.selection.decision import Decision
from depthfinder.selection.pool import ROWS_TO_LABEL
from depthfinder.selection.rule import choose_depth
from depthfinder.tasks.data import PreparedData, drop_flagged_rows, prepare_dataset
from depthfinder.tasks.pool import prepare_pool, write_rows_to_label
from depthfinder.tasks.registry import find_unchanged_model, register_model
from depthfinder.tasks.tracking import (
    describe_model,
)
from depthfinder.tasks.train import Training, open_families, prepare_tokenizer
from depthfinder.tracking.runs import SweepRun


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
        unlabeled = prepare_pool(sweep.pool.unlabeled, sweep.pool.labels, sweep.pool.rows, data, dataset, workdir,
                                 audit.near_duplicate_threshold) if sweep.pool.unlabeled else None
        label_flow_run(name=run_title(registry.model_name, data, dataset.data_hash))
        with one_retrain_at_a_time(registry.model_name, workdir):
            tracking_uri = tidy_store(registry)
            families = open_families(config.families, model)
            fingerprint = fingerprint_of(config, dataset, families)
            unchanged = None if force else find_unchanged_model(tracking_uri, registry.model_name,
                                                                fingerprint | {"sweep": "complete"})
            changed = what_changed(config, dataset, tracking_uri, fingerprint, unchanged, force)
            marks = forced_marks(config, dataset, changed)
            if unchanged:
                return skip_night(config, dataset, unchanged.version, unchanged_reason(config, fingerprint, unchanged),
                               changed)
            if changed is not None and changed.policy.decision == "skip":
                return skip_night(config, dataset, changed.champion_version, changed.policy.reason, changed)
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
                        return conclude(config, *end_unmet(config, run, summary.model_copy(update={
                            "candidates": candidates, "halving": halving, "search": searches, "budget": budget,
                            "unmet": over})))
                    decision = choose_depth(candidates, config.sweep)  # on the validation rows
                    teaching, evidence = split_pool(config.sweep, unlabeled, dataset, workdir)
                    if students := distill(config.sweep, trainings, candidates, decision, teaching):
                        candidates += students  # each judged beside the plain depths
                        decision = choose_depth(candidates, config.sweep)
                    used = pool_use(config.sweep, unlabeled, teaching if students else None)
                    pool = evidence if students else unlabeled  # a student agrees with its teacher where it was taught
                    out_of_fold, crossfit = cross_fit(config.sweep, trainings, candidates, decision)
                    if out_of_fold is not None:
                        decision = choose_depth(candidates, config.sweep, out_of_fold)
                    bounds = pool_evidence(config.sweep, pool, candidates, decision, dataset, workdir)
                    if bounds is not None:
                        decision = choose_depth(candidates, config.sweep, out_of_fold, bounds)
                    to_label = texts_to_label(decision, bounds, config.sweep.metric)
                    decision = decision_with_budget(decision, budget)
                    try:
                        chosen, deployment, decision = deploy_chosen(candidates, decision, dataset, config.sweep,
                                                                     folder, unlabeled)
                    except LimitUnmet as verdict:
                        return conclude(config, *end_unmet(config, run, summary.model_copy(update={
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
                        "rows_to_label": str(write_rows_to_label(pool, to_label, folder / ROWS_TO_LABEL,
                                                                 data).resolve()) if to_label else None,
                        **dict(registration)})  # the summary has each field of the registration
                    record_decision(config, run, summary)
                    describe_model(run, registration.model.name, registration.model.version,
                                   model_card(summary, fingerprint))
            except Blocked as blocked:
                return conclude(config, blocked.summary, blocked.state())
            return conclude(config, summary, Completed(message=outcome(summary), data=summary))


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
                     onnx_cost=config.sweep.cost == "onnx_latency_ms_p50", concurrent=config.sweep.runner.per_machine,
                     onnx_size=config.sweep.asks_size, vocabulary_min_count=config.sweep.vocabulary_min_count,
                     form_check=form_check(config.sweep))
            for family in families]


def decision_with_budget(decision: Decision, budget: Budget | None) -> Decision:
    """The decision, its reason saying what the sweep's budget left untried: the sweep's, not the rule's, so a replay
    of the rule gives the same choice without it."""
    if budget is None:
        return decision
    return decision.model_copy(update={"reason": f"{decision.reason}; {budget.sentence}"})
