"""The retrain flow: audit -> tokenizer -> one training task per depth -> rule -> registry."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.futures import PrefectFuture
from prefect.states import Completed, Failed, State
from prefect.task_runners import ProcessPoolTaskRunner, TaskRunner, ThreadPoolTaskRunner

from encoder.config import ModelConfig, TrainConfig
from encoder.interrupt import Interrupted
from encoder.selection.halving import compute_saved, kept_count, rank_depths, rung_budgets
from encoder.selection.rule import choose_depth
from encoder.tracking.runs import (
    SweepRun,
    close_abandoned_runs,
    code_version,
    ending,
    flatten,
    record_cached_candidate,
    resolve_tracking_uri,
    set_tags,
    start_sweep_run,
)
from expectations.audit.config import AuditConfig
from expectations.table.config import DataConfig
from flows.audit import audit_and_log, audit_informs, blocking_checks
from flows.config import RegistryConfig, RunConfig, SweepConfig
from flows.lock import one_retrain_at_a_time
from flows.preflight import check_run
from flows.report import decision_markdown
from flows.signals import stop_on_signals
from tasks.data import PreparedData, drop_flagged_rows, prepare_dataset
from tasks.registry import find_unchanged_model, register_model
from tasks.train import fit_tokenizer, train_depth

# What a candidate carries between tasks but the summary does not show.
INTERNAL_KEYS = ("bundle", "checkpoint", "finished")


@flow(name="retrain", task_runner=ThreadPoolTaskRunner(max_workers=1))
def retrain(
    data: DataConfig,
    audit: AuditConfig = AuditConfig(),
    model: ModelConfig = ModelConfig(),
    train: TrainConfig = TrainConfig(),
    sweep: SweepConfig = SweepConfig(),
    registry: RegistryConfig = RegistryConfig(),
    force: bool = False,
) -> dict | State:
    """Audit the data, sweep depth, choose by accuracy per cost and register the winner.

    Skipped (a completed state named Skipped) when the registered champion, or a challenger
    that lost to it, was trained on the same data, settings and code, unless `force`. One
    retrain of a registered model name runs at a time; a second waits for the first. SIGINT
    or SIGTERM stops it within a training step: its MLflow runs end KILLED, nothing is
    registered, and a rerun continues from what was finished.
    """
    config = RunConfig(data=data, audit=audit, model=model, train=train, sweep=sweep, registry=registry)
    with stop_on_signals():
        check_run(config)
        dataset = drop_flagged_rows(prepare_dataset(data, registry.workdir), audit, registry.workdir)
        with one_retrain_at_a_time(registry.model_name, registry.workdir):
            tracking_uri = resolve_tracking_uri(registry.tracking_uri)
            if closed := close_abandoned_runs(tracking_uri, registry.experiment, registry.model_name):
                get_run_logger().warning("ended %d MLflow runs left RUNNING by a retrain that died", len(closed))
            fingerprint = fingerprint_of(config, dataset)
            wanted = fingerprint | {"sweep": "complete"}
            if not force and (unchanged := find_unchanged_model(tracking_uri, registry.model_name, wanted)):
                return _skipped(config, fingerprint, unchanged)
            return _retrain(config, dataset)


def _skipped(config: RunConfig, fingerprint: dict[str, str], unchanged: dict) -> State:
    """The completed state of a run with nothing new to learn, and its summary."""
    model = config.registry.model_name
    reason = (
        f"{model} version {unchanged['version']} ({unchanged['alias']}, depth {unchanged['depth']}) was trained on "
        f"the same data ({fingerprint['data_hash']}), settings ({fingerprint['config_hash']}) and code "
        f"({fingerprint['code_version']}); pass --force (the flow's force parameter) to retrain anyway"
    )
    get_run_logger().info("Skipped: %s", reason)
    summary = {"skipped": True, "reason": reason, "data_hash": fingerprint["data_hash"], "candidates": [],
               "selected_depth": None, "model": {"name": model, "version": unchanged["version"],
                                                 "uri": f"models:/{model}/{unchanged['version']}"}}
    return Completed(name="Skipped", message=reason, data=summary)


class AuditBlocked(Exception):
    """The audit stopped the run before training; `summary` says why."""

    def __init__(self, summary: dict) -> None:
        super().__init__("the audit blocks training")
        self.summary = summary


def _retrain(config: RunConfig, dataset: PreparedData) -> dict | State:
    """Audit, sweep and register under a new MLflow parent run, which ends FINISHED, FAILED or KILLED."""
    registry = config.registry
    run = start_sweep_run(
        registry.tracking_uri,
        registry.experiment,
        registry.model_name,
        f"sweep-{dataset.data_hash[:8]}",
        params=flatten("", config.model_dump(mode="json")),
        tags={"depthfinder.data_hash": dataset.data_hash},
    )
    try:
        with ending(run.client, run.run_id):
            summary = _audit_then_sweep(config, dataset, run)
            run.client.log_dict(run.run_id, summary, "summary.json")
            if summary["selected_depth"] is None:
                raise AuditBlocked(summary)
    except AuditBlocked as blocked:
        blocking = ", ".join(blocking_checks(blocked.summary["audit"], config.audit.strict))
        return Failed(message=f"the audit blocks training: {blocking}", data=blocked.summary)
    return summary


def _audit_then_sweep(config: RunConfig, dataset: PreparedData, run: SweepRun) -> dict:
    logger = get_run_logger()
    report = audit_and_log(config, dataset, run)
    audit = {k: report[k] for k in ("success", "blocking_failures", "warnings", "checks", "dropped")}
    audit["informs"] = audit_informs(config, report)
    summary = {
        "skipped": False,
        "audit": audit,
        "candidates": [],
        "selected_depth": None,
        "mlflow_run_id": run.run_id,
        "data_hash": dataset.data_hash,
    }
    set_tags(run.client, run.run_id, {"depthfinder.audit": "passed" if report["success"] else "failed"})
    if blocking_checks(report, config.audit.strict):
        logger.error("The audit blocks training: %s", ", ".join(blocking_checks(report, config.audit.strict)))
        return summary

    class_weights = config.train.class_weights == "on" or (
        config.train.class_weights == "auto" and "class_imbalance" in report["warnings"]
    )
    workdir = config.registry.workdir
    tokenizer_path = fit_tokenizer(dataset, config.model, workdir)
    shared = {
        "dataset": dataset,
        "tokenizer_path": tokenizer_path,
        "model": config.model,
        "train": config.train,
        "class_weights": class_weights,
        "sweep": run,
        "workdir": workdir,
    }
    candidates, rungs = _sweep_depths(config, shared, run)
    result = _decide_and_register(config, dataset, run, candidates, report, rungs, workdir / "runs" / run.run_id)
    return summary | result


def _sweep_depths(config: RunConfig, shared: dict, run: SweepRun) -> tuple[list[dict], list[dict]]:
    """Train every (depth, seed), by successive halving when the sweep asks for it.

    Returns the candidates in (depth, seed) order, pruned ones marked, and the rungs.
    """
    sweep, recipe = config.sweep, config.train
    budgets = halving_plan(sweep, recipe)
    latest: dict[tuple[int, int], dict] = {}
    rungs = []
    depths = sweep.depths
    with task_runner(sweep) as runner:
        for epochs in [*budgets, recipe.max_epochs]:
            grids = [(d, s) for d in depths for s in sweep.seeds if not latest.get((d, s), {}).get("finished")]
            arguments = {
                grid: shared | {"depth": grid[0], "seed": grid[1], "epochs": epochs, "previous": latest.get(grid)}
                for grid in grids
            }
            futures = {grid: runner.submit(train_depth, parameters) for grid, parameters in arguments.items()}
            latest |= {grid: _collect(grid, future, arguments[grid], run) for grid, future in futures.items()}
            if epochs == recipe.max_epochs:
                break
            kept = _halve(config, [latest[d, s] for d in depths for s in sweep.seeds], run)
            rungs.append({"epochs": epochs, "depths": list(depths), "kept": kept})
            depths = kept
    return [latest[d, s] for d in sweep.depths for s in sweep.seeds], rungs


def halving_plan(sweep: SweepConfig, recipe: TrainConfig) -> list[int]:
    """Epoch budgets of the halving rungs (empty without halving); the first is `halving_epochs`,
    by default the recipe's `min_epochs`: a depth may sit on its initial plateau until then."""
    if not sweep.halves:
        return []
    return rung_budgets(len(sweep.depths), sweep.halving_epochs or recipe.min_epochs, recipe.max_epochs)


def _halve(config: RunConfig, candidates: list[dict], run: SweepRun) -> list[int]:
    """Keep the better half of the depths by the rule; mark the rest pruned, here and in MLflow."""
    sweep = config.sweep
    ranking = rank_depths(candidates, **_rule_arguments(sweep))
    kept = sorted(ranking[: kept_count(len({c["depth"] for c in candidates}))])
    for candidate in candidates:
        if candidate["status"] in ("trained", "cached") and candidate["depth"] not in kept:
            candidate["status"] = "pruned"
            set_tags(run.client, candidate["mlflow_run_id"], {"depthfinder.status": "pruned"})
    pruned = sorted({c["depth"] for c in candidates if c["status"] == "pruned"} - set(kept))
    if pruned:
        get_run_logger().info("successive halving keeps depths %s, prunes %s", kept, pruned)
    return kept


def _rule_arguments(sweep: SweepConfig) -> dict:
    """The rule's settings, as `encoder.selection.rule.choose_depth` takes them."""
    names = ("rule", "metric", "tolerance", "alpha", "cost", "max_latency_ms", "max_params")
    return {name: getattr(sweep, name) for name in names}


def task_runner(sweep: SweepConfig) -> TaskRunner:
    """The runner the candidates train on, as configured."""
    if sweep.task_runner == "processes":
        return ProcessPoolTaskRunner(max_workers=sweep.workers)
    if sweep.task_runner == "dask":
        from prefect_dask import DaskTaskRunner

        if sweep.dask_address:
            return DaskTaskRunner(address=sweep.dask_address)
        local = {"n_workers": sweep.workers, "threads_per_worker": 1, "host": "127.0.0.1", "dashboard_address": None}
        return DaskTaskRunner(cluster_kwargs=local)
    return ThreadPoolTaskRunner(max_workers=sweep.workers)


def _collect(grid: tuple[int, int], future: PrefectFuture, parameters: dict, run: SweepRun) -> dict:
    """A trained or cached candidate, or a failed one that the rule will skip; an interrupt goes on up."""
    depth, seed = grid
    try:
        candidate = future.result()
    except Interrupted:
        raise
    except Exception as exc:  # a depth that fails must not sink the sweep
        get_run_logger().error("depth %d (seed %d) failed: %s", depth, seed, exc)
        return {"depth": depth, "seed": seed, "status": "failed", "error": str(exc)}
    if candidate["status"] != "cached":
        return candidate
    get_run_logger().info("depth %d (seed %d) reused from an earlier sweep", depth, seed)
    previous = parameters["previous"]
    return record_cached_candidate(run, candidate, previous["mlflow_run_id"] if previous else None)


def _decide_and_register(
    config: RunConfig,
    dataset: PreparedData,
    run: SweepRun,
    candidates: list[dict],
    report: dict,
    rungs: list[dict],
    out_dir: Path,
) -> dict:
    sweep = config.sweep
    decision = choose_depth(candidates, **_rule_arguments(sweep))
    plots = _plot_decision(decision, run, out_dir)
    selected = max(  # the chosen depth's best seed is the model that ships
        (c for c in candidates if c["depth"] == decision.selected_depth and c["status"] in ("trained", "cached")),
        key=lambda c: c["metrics"][sweep.metric],
    )
    failed = [f"depth {c['depth']} seed {c['seed']}" for c in candidates if c["status"] == "failed"]
    tags = fingerprint_of(config, dataset) | {
        "sweep": f"incomplete: {', '.join(failed)} failed" if failed else "complete",
        "depth": str(decision.selected_depth),
        "audit": "passed" if report["success"] else "warnings: " + ", ".join(report["warnings"]),
        "decision": decision.reason,
    }
    rule = {"metric": sweep.metric, "tolerance": sweep.tolerance, "cost": sweep.cost}
    registration = register_model(selected, dataset, run, config.registry.model_name, rule, tags)
    result = {
        "candidates": [{k: v for k, v in c.items() if k not in INTERNAL_KEYS} for c in candidates],
        "selected_depth": decision.selected_depth,
        "rule": decision.to_dict(),
        "halving": {"rungs": rungs, **(compute_saved(candidates) or {})} if rungs else None,
        **{k: registration[k] for k in ("model", "promoted", "promotion", "champion_version")},
    }
    set_tags(
        run.client,
        run.run_id,
        {"depthfinder.selected_depth": decision.selected_depth, "depthfinder.decision": decision.reason},
    )
    create_markdown_artifact(
        key="depth-decision", markdown=decision_markdown(result, plots), description="depthfinder decision"
    )
    get_run_logger().info("%s", decision.reason)
    return result


def _plot_decision(decision, run: SweepRun, out_dir: Path) -> list[Path]:
    """Both decision plots as PNGs, logged to the parent run under plots/."""
    from encoder.selection.plots import plot_metric_vs_cost, plot_metric_vs_depth

    plots = [
        plot_metric_vs_depth(decision, out_dir / "plots" / "metric_vs_depth.png"),
        plot_metric_vs_cost(decision, out_dir / "plots" / "metric_vs_cost.png"),
    ]
    for path in plots:
        run.client.log_artifact(run.run_id, str(path), "plots")
    return plots


def fingerprint_of(config: RunConfig, dataset: PreparedData) -> dict[str, str]:
    """The version tags that decide a model: what it learned from (every column the audit judged),
    with which settings and code."""
    return {
        "data_hash": dataset.data_hash,
        "table_hash": dataset.table_hash,
        "config_hash": config_hash(config),
        "code_version": code_version(),
    }


# Settings that do not decide the model: where the data comes from and how it is read and split
# (their effect is in the table's content hash, so another spelling of the same file is the same
# data), where results are recorded, and where candidates train.
UNDECIDING = {"data": True, "registry": True, "sweep": {"task_runner", "workers", "dask_address"}}


def config_hash(config: RunConfig) -> str:
    """What decides the model besides the data, as a short hash."""
    settings = config.model_dump(mode="json", exclude=UNDECIDING)
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]
