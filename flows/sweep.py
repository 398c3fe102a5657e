"""The depth sweep: every (depth, seed) trained as a task, by successive halving when the sweep asks for it."""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

from prefect import get_run_logger
from prefect.futures import PrefectFuture
from prefect.task_runners import ProcessPoolTaskRunner, TaskRunner, ThreadPoolTaskRunner

from encoder.config import ModelConfig, TrainConfig
from encoder.interrupt import Interrupted
from encoder.selection.candidate import Candidate
from encoder.selection.halving import Halving, Rung, halving_summary, kept_count, rank_depths
from encoder.tracking.runs import SweepRun
from flows.config import SweepConfig
from tasks.data import PreparedData
from tasks.tracking import mark_pruned, record_cached_candidate
from tasks.train import train_depth


@dataclass(frozen=True)
class Training:
    """What every candidate of a sweep trains with: the data, its tokenizer, the recipe, and where it goes."""

    dataset: PreparedData
    tokenizer_path: str
    model: ModelConfig
    train: TrainConfig
    class_weights: bool
    sweep: SweepRun
    workdir: Path


def sweep_depths(sweep: SweepConfig, training: Training) -> tuple[list[Candidate], Halving | None]:
    """Train every (depth, seed), by successive halving when the sweep asks for it.

    Returns the candidates in (depth, seed) order, pruned ones marked, and what halving did.
    """
    recipe = training.train
    latest: dict[tuple[int, int], Candidate] = {}
    rungs: list[Rung] = []
    depths = sweep.depths
    with task_runner(sweep) as runner:
        for epochs in [*sweep.rung_budgets(recipe), recipe.max_epochs]:
            grids = [(d, s) for d in depths for s in sweep.seeds if not (latest.get((d, s)) and latest[d, s].finished)]
            futures = {grid: runner.submit(train_depth, _arguments(training, grid, epochs, latest)) for grid in grids}
            for grid, future in futures.items():
                latest[grid] = _collect(grid, future, latest.get(grid), training.sweep)
            if epochs == recipe.max_epochs:
                break
            kept = _halve(sweep, depths, latest, training.sweep)
            rungs.append(Rung(epochs=epochs, depths=list(depths), kept=kept))
            depths = kept
    candidates = [latest[d, s] for d in sweep.depths for s in sweep.seeds]
    return candidates, halving_summary(rungs, candidates) if rungs else None


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


def _arguments(training: Training, grid: tuple[int, int], epochs: int, latest: dict) -> dict:
    """train_depth's parameters for one (depth, seed) at a budget, continuing its result at the last rung."""
    depth, seed = grid
    shared = {field.name: getattr(training, field.name) for field in fields(training)}
    return shared | {"depth": depth, "seed": seed, "epochs": epochs, "previous": latest.get(grid)}


def _collect(grid: tuple[int, int], future: PrefectFuture, previous: Candidate | None, run: SweepRun) -> Candidate:
    """A trained or cached candidate, or a failed one that the rule will skip; an interrupt goes on up."""
    depth, seed = grid
    try:
        candidate = future.result()
    except Interrupted:
        raise
    except Exception as exc:  # a depth that fails must not sink the sweep
        get_run_logger().error("depth %d (seed %d) failed: %s", depth, seed, exc)
        return Candidate(depth=depth, seed=seed, status="failed", error=str(exc))
    if candidate.status != "cached":
        return candidate
    get_run_logger().info("depth %d (seed %d) reused from an earlier sweep", depth, seed)
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
