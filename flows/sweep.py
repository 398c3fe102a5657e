"""The depth sweep: every (depth, seed) trained as a task, by successive halving when the sweep asks for it."""

from __future__ import annotations

from prefect import get_run_logger
from prefect.futures import PrefectFuture
from prefect.task_runners import ProcessPoolTaskRunner, TaskRunner, ThreadPoolTaskRunner

from encoder.interrupt import Interrupted
from encoder.selection.candidate import Candidate
from encoder.selection.halving import Halving, Rung, halving_summary, kept_count, rank_depths
from encoder.tracking.runs import SweepRun
from flows.config import SweepConfig
from tasks.tracking import mark_pruned, record_cached_candidate
from tasks.train import Training, train_depth


def sweep_depths(sweep: SweepConfig, trainings: list[Training]) -> tuple[list[Candidate], Halving | None]:
    """Train every (depth, seed) of every family, by successive halving within a family when it sweeps enough
    depths (each family has its own recipe, so its own rung budgets).

    Returns the candidates in (family, depth, seed) order, pruned ones marked, and what halving did.
    """
    candidates: list[Candidate] = []
    rungs: list[Rung] = []
    with task_runner(sweep) as runner:
        for training in trainings:
            depths = sweep.depths_of(training.family, training.checkpoint.layers if training.checkpoint else None)
            family_candidates, family_rungs = _sweep_family(sweep, training, depths, runner)
            candidates += family_candidates
            rungs += family_rungs
    return candidates, halving_summary(rungs, candidates) if rungs else None


def _sweep_family(
    sweep: SweepConfig, training: Training, all_depths: list[int], runner: TaskRunner
) -> tuple[list[Candidate], list[Rung]]:
    recipe = training.train
    latest: dict[tuple[int, int], Candidate] = {}
    rungs: list[Rung] = []
    depths = all_depths
    for epochs in [*sweep.rung_budgets(len(all_depths), recipe), recipe.max_epochs]:
        grids = [(d, s) for d in depths for s in sweep.seeds if not (latest.get((d, s)) and latest[d, s].finished)]
        futures = {
            grid: runner.submit(train_depth, {"training": training, "depth": grid[0], "seed": grid[1],
                                              "epochs": epochs, "previous": latest.get(grid)})
            for grid in grids
        }
        for grid, future in futures.items():
            latest[grid] = _collect(training.family, grid, future, latest.get(grid), training.sweep)
        if epochs == recipe.max_epochs:
            break
        kept = _halve(sweep, depths, latest, training.sweep)
        rungs.append(Rung(family=training.family, epochs=epochs, depths=list(depths), kept=kept))
        depths = kept
    return [latest[d, s] for d in all_depths for s in sweep.seeds], rungs


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
        get_run_logger().error("%s failed: %s", failed.name, exc)
        return failed
    if candidate.status != "cached":
        return candidate
    get_run_logger().info("%s reused from an earlier sweep", candidate.name)
    return record_cached_candidate(run, candidate, previous.mlflow_run_id if previous else None)


def _halve(sweep: SweepConfig, depths: list[int], latest: dict[tuple[int, int], Candidate], run: SweepRun) -> list[int]:
    """Keep the better half of `depths` by the rule; mark the rest pruned, in `latest` and in MLflow."""
    candidates = [latest[d, s] for d in depths for s in sweep.seeds]
    ranking = rank_depths(candidates, sweep)
    kept = sorted(ranking[: kept_count(len(depths))])
    pruned = [c for c in candidates if c.usable and c.depth not in kept]
    mark_pruned(run, pruned)
    latest |= {(c.depth, c.seed): c.model_copy(update={"status": "pruned"}) for c in pruned}
    if pruned:
        get_run_logger().info("successive halving keeps depths %s, prunes %s", kept, sorted({c.depth for c in pruned}))
    return kept
