"""The depth sweep: each family's strategy says what to train next (encoder.selection.strategies); every (depth,
seed) it asks for trains as a task, and the results go back to it."""

from __future__ import annotations

from dataclasses import replace

from prefect import get_run_logger
from prefect.futures import PrefectFuture
from prefect.task_runners import ProcessPoolTaskRunner, TaskRunner, ThreadPoolTaskRunner

from encoder.selection.candidate import Candidate
from encoder.selection.halving import Halving, Rung, halving_summary
from encoder.selection.learning_rate import RATE_FACTORS, RateCheck, RateTrial, judge_rates
from encoder.selection.search import Search
from encoder.selection.strategies import DepthSeed, Step, Strategy, SweepPlan, strategy_named
from encoder.tracking.runs import SweepRun
from flows.config import SweepConfig
from runtime.interrupt import Interrupted
from tasks.tracking import mark_pruned, record_cached_candidate, tag_convergence
from tasks.train import Training, train_depth


def sweep_depths(
    sweep: SweepConfig, trainings: list[Training]
) -> tuple[list[Candidate], Halving | None, list[Search]]:
    """Train what each family's strategy asks for (`sweep.strategy`): the grid, by successive halving within a
    family when it sweeps enough depths (each family has its own recipe, so its own rung budgets); or the search,
    which screens every depth 1..L of a family and confirms the depths the screen cannot rule out.

    Returns the candidates in (family, depth, seed) order, pruned and screened ones marked, what halving did,
    and what each search did.
    """
    candidates: list[Candidate] = []
    rungs: list[Rung] = []
    searches: list[Search] = []
    with task_runner(sweep) as runner:
        for training in trainings:
            strategy = strategy_of(sweep, training)
            while (step := strategy.next_step()) is not None:
                strategy.record(_take(step, training, runner))
            tag_convergence(training.sweep, [c for c in strategy.latest.values() if c.usable])
            candidates += strategy.candidates()
            rungs += strategy.rungs
            searches += [strategy.search] if strategy.search is not None else []
    return candidates, halving_summary(rungs, candidates, sweep.halving_margin) if rungs else None, searches


def strategy_of(sweep: SweepConfig, training: Training) -> Strategy:
    """The strategy that sweeps `training`'s family, with what its recipe and the sweep let it spend."""
    depths, recipe = depths_of(sweep, training), training.train
    plan = SweepPlan(seeds=list(sweep.seeds), rungs=sweep.rung_budgets(len(depths), recipe),
                     max_epochs=recipe.max_epochs, extension=sweep.extension(recipe), window=recipe.patience,
                     halving_margin=sweep.halving_margin, convergence_gain=sweep.convergence_gain)
    return strategy_named(sweep.strategy)(sweep, training.family.name, depths, plan)


def _take(step: Step, training: Training, runner: TaskRunner) -> dict[DepthSeed, Candidate]:
    """Do what `step` asks: record its pruned candidates, log what the strategy decided, and train each (depth,
    seed) of it to its epochs at once, continuing from its previous result; the results."""
    if step.pruned:
        mark_pruned(training.sweep, step.pruned)
    for note in step.notes:
        get_run_logger().info("%s", note)
    for warning in step.warnings:
        get_run_logger().warning("%s", warning)
    training = replace(training, probes=True) if step.probes else training
    futures = {
        grid: runner.submit(train_depth, {"training": training, "depth": grid[0], "seed": grid[1],
                                          "epochs": step.epochs, "previous": step.previous.get(grid)})
        for grid in step.grids
    }
    return {grid: _collect(training.family.name, grid, future, step.previous.get(grid), training.sweep)
            for grid, future in futures.items()}


def check_learning_rates(sweep: SweepConfig, trainings: list[Training]) -> list[RateCheck]:
    """Train each family's shallowest and deepest depth for its first halving budget at 1/3, 1 and 3 times its
    peak rate (the first seed); whether the best rate moved with depth, per family."""
    checks = []
    with task_runner(sweep) as runner:
        for training in trainings:
            recipe, seed = training.train, sweep.seeds[0]
            depths = depths_of(sweep, training)
            epochs = min(sweep.halving_epochs or recipe.min_epochs, recipe.max_epochs)
            rates = [factor * recipe.learning_rate for factor in RATE_FACTORS]
            futures = {
                (depth, rate): runner.submit(train_depth, {
                    "training": replace(training, train=recipe.model_copy(update={"learning_rate": rate})),
                    "depth": depth, "seed": seed, "epochs": epochs})
                for depth in sorted({min(depths), max(depths)}) for rate in rates
            }
            trials = []
            for (depth, rate), future in futures.items():
                trial = _collect(training.family.name, (depth, seed), future, None, training.sweep)
                trials.append(RateTrial(depth=depth, learning_rate=rate,
                                        metric=trial.metrics.get("macro_f1") if trial.usable else None))
            checks.append(judge_rates(training.family.name, epochs, recipe.learning_rate, trials))
            get_run_logger().info(checks[-1].sentence)
    return checks


def depths_of(sweep: SweepConfig, training: Training) -> list[int]:
    """The depths a family sweeps (a pretrained family's default depends on its checkpoint's layers)."""
    return training.family.depths(sweep.depths)


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


def _collect(
    family: str, grid: tuple[int, int], future: PrefectFuture, previous: Candidate | None, run: SweepRun
) -> Candidate:
    """A trained or cached candidate, or a failed one that the rule will skip; an interrupt goes on up."""
    depth, seed = grid
    try:
        candidate = future.result()
    except Interrupted:
        raise
    except Exception as exc:  # a depth that fails must not sink the sweep
        failed = Candidate(depth=depth, family=family, seed=seed, status="failed", error=str(exc))
        get_run_logger().error("%s failed: %s", failed.name, exc, exc_info=exc)
        return failed
    if candidate.status != "cached":
        return candidate
    get_run_logger().info("%s reused from an earlier sweep", candidate.name)
    return record_cached_candidate(run, candidate, previous.mlflow_run_id if previous else None)

