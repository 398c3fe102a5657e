"""The depth sweep: each family's strategy says what to train next (selection.strategies); every (depth,
seed) it asks for trains as a task, and the results go back to it."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
from prefect import get_run_logger
from prefect.futures import PrefectFuture
from prefect.task_runners import ProcessPoolTaskRunner, TaskRunner, ThreadPoolTaskRunner

from depthfinder.encoder.families import depth_caps
from depthfinder.flows.config import SweepConfig
from depthfinder.runtime.interrupt import Interrupted
from depthfinder.selection.budget import Budget, Spending
from depthfinder.selection.candidate import Candidate
from depthfinder.selection.halving import Halving, Rung, halving_summary
from depthfinder.selection.learning_rate import RATE_FACTORS, RateCheck, RateTrial, judge_rates
from depthfinder.selection.search import Search
from depthfinder.selection.strategies import DepthSeed, Step, Strategy, SweepPlan, strategy_named
from depthfinder.tasks.data import PreparedData
from depthfinder.tasks.tracking import mark_pruned, record_cached_candidate, tag_convergence
from depthfinder.tasks.train import Training, train_depth
from depthfinder.tracking.runs import SweepRun


def sweep_depths(
    sweep: SweepConfig, trainings: list[Training]
) -> tuple[list[Candidate], Halving | None, list[Search], Budget | None]:
    """Train what each family's strategy asks for (`sweep.strategy`): the grid, by successive halving within a
    family when it sweeps enough depths (each family has its own recipe, so its own rung budgets); or the search,
    which screens every depth 1..L of a family and confirms the depths the screen cannot rule out. Families go
    cheapest first; a costlier family's grid stops the depths the cheaper ones already outclass; with a budget
    (`sweep.budget_flops`), no step starts once it is spent.

    Returns the candidates in (family, depth, seed) order, pruned and screened ones marked, what halving did,
    what each search did, and the budget (None without one).
    """
    candidates: list[Candidate] = []
    rungs: list[Rung] = []
    searches: list[Search] = []
    trainings = cheapest_first(sweep, trainings)
    if capped := depth_caps([training.family for training in trainings], sweep.depths):
        get_run_logger().info("%s", capped)
    rows = train_rows(trainings[0].dataset) if sweep.budget_flops is not None and trainings else 0
    spending = Spending(sweep.budget_flops, rows)
    with task_runner(sweep) as runner:
        for training in trainings:
            if spending.spent(candidates):
                spending.untried += [(training.family.name, depth) for depth in depths_of(sweep, training)]
                continue
            strategy = strategy_of(sweep, training, [c for c in candidates if c.usable])
            while (step := strategy.next_step()) is not None:
                if step.grids and spending.spent(candidates + list(strategy.latest.values())):
                    _stop_for_budget(strategy, step, training, spending)
                    break
                strategy.record(_take(step, training, runner, sweep.runner.workers))
            tag_convergence(training.parent_run, [c for c in strategy.latest.values() if c.usable])
            candidates += strategy.candidates()
            rungs += strategy.rungs
            searches += [strategy.search] if strategy.search is not None else []
    halving = halving_summary(rungs, candidates, sweep.halving_margin) if rungs else None
    return candidates, halving, searches, spending.budget(candidates, len(trainings) > 1)


def _stop_for_budget(strategy: Strategy, step: Step, training: Training, spending: Spending) -> None:
    """End a family's sweep before `step`: what the step would have continued is pruned (stopped short), and its
    depths are untried."""
    stopped = [strategy.latest[grid] for grid in step.grids if grid in strategy.latest and strategy.latest[grid].usable]
    strategy.latest |= {(c.depth, c.seed): c.model_copy(update={"status": "pruned"}) for c in stopped}
    if pruned := [*step.pruned, *stopped]:
        mark_pruned(training.parent_run, pruned)
    spending.untried += [(training.family.name, depth) for depth, _ in step.grids]
    get_run_logger().warning("the budget of %.2g training FLOPs is spent: %s stops before %d more candidates",
                             spending.flops, training.family.name, len(step.grids))


def train_rows(dataset: PreparedData) -> int:
    """Rows of the train split."""
    return int((pd.read_parquet(dataset.path, columns=["split"])["split"] == "train").sum())


def cheapest_first(sweep: SweepConfig, trainings: list[Training]) -> list[Training]:
    """The families in order of their deepest candidate's estimated compute, cheapest first (parameters per layer,
    which a forward's FLOPs per token grow with, times its deepest depth): a cheaper family's finished candidates
    then stand beside a costlier one's rungs."""
    def estimate(training: Training) -> float:
        family, model, deepest = training.family, training.model, max(depths_of(sweep, training))
        if deepest == 1:  # one layer: nothing to take the embeddings' share from
            return family.fewest_params(1, model)
        per_layer = (family.fewest_params(deepest, model) - family.fewest_params(1, model)) / (deepest - 1)
        return per_layer * deepest

    return sorted(trainings, key=estimate) if len(trainings) > 1 else trainings


def strategy_of(sweep: SweepConfig, training: Training, reference: list[Candidate] = ()) -> Strategy:
    """The strategy that sweeps `training`'s family, with what its recipe and the sweep let it spend, beside the
    finished candidates of the cheaper families (`reference`)."""
    depths, recipe = depths_of(sweep, training), training.train
    plan = SweepPlan(seeds=list(sweep.seeds), rungs=sweep.halving.rung_budgets(len(depths), recipe),
                     checks=sweep.halving.checks(len(depths), recipe),
                     max_epochs=recipe.max_epochs, extension=sweep.extend.epochs_for(recipe), window=recipe.patience)
    return strategy_named(sweep.strategy)(sweep, training.family.name, depths, plan, reference)


def _take(step: Step, training: Training, runner: TaskRunner, workers: int = 1) -> dict[DepthSeed, Candidate]:
    """Do what `step` asks: record its pruned candidates, log what the strategy decided, and train each (depth,
    seed) of it to its epochs at once, continuing from its previous result; the results, in the step's order.

    With several workers the deepest start first: the last to start is then a short one, and no worker waits long
    for another at the step's end (longest first; shallowest first, depths 1, 2, 4 on two workers take depth 1 plus
    depth 4 in a row while the other worker idles after depth 2). One worker keeps the step's order."""
    if step.pruned:
        mark_pruned(training.parent_run, step.pruned)
    for note in step.notes:
        get_run_logger().info("%s", note)
    for warning in step.warnings:
        get_run_logger().warning("%s", warning)
    training = replace(training, probes=True) if step.probes else training
    order = sorted(step.grids, key=lambda grid: -grid[0]) if workers > 1 else step.grids
    futures = {
        grid: runner.submit(train_depth, {"training": training, "depth": grid[0], "seed": grid[1],
                                          "epochs": step.epochs, "previous": step.previous.get(grid)})
        for grid in order
    }
    return {grid: collect_candidate(training.family.name, grid, futures[grid], step.previous.get(grid),
                                    training.parent_run) for grid in step.grids}


def check_learning_rates(sweep: SweepConfig, trainings: list[Training]) -> list[RateCheck]:
    """Train each family's shallowest and deepest depth for its first halving budget at 1/3, 1 and 3 times its
    peak rate (the first seed); whether the best rate moved with depth, per family."""
    checks = []
    with task_runner(sweep) as runner:
        for training in trainings:
            recipe, seed = training.train, sweep.seeds[0]
            depths = depths_of(sweep, training)
            epochs = min(sweep.halving.epochs or recipe.min_epochs, recipe.max_epochs)
            rates = [factor * recipe.learning_rate for factor in RATE_FACTORS]
            futures = {
                (depth, rate): runner.submit(train_depth, {
                    "training": replace(training, train=recipe.model_copy(update={"learning_rate": rate})),
                    "depth": depth, "seed": seed, "epochs": epochs})
                for depth in sorted({min(depths), max(depths)}) for rate in rates
            }
            trials = []
            for (depth, rate), future in futures.items():
                trial = collect_candidate(training.family.name, (depth, seed), future, None, training.parent_run)
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
    if sweep.runner.kind == "processes":
        return ProcessPoolTaskRunner(max_workers=sweep.runner.workers)
    if sweep.runner.kind == "dask":
        from prefect_dask import DaskTaskRunner

        if sweep.runner.dask_address:
            return DaskTaskRunner(address=sweep.runner.dask_address)
        local = {"n_workers": sweep.runner.workers, "threads_per_worker": 1, "host": "127.0.0.1",
                 "dashboard_address": None}
        return DaskTaskRunner(cluster_kwargs=local)
    return ThreadPoolTaskRunner(max_workers=sweep.runner.workers)


def collect_candidate(
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

