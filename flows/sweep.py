"""The depth sweep: every (depth, seed) trained as a task, by successive halving when the sweep asks for it."""

from __future__ import annotations

from dataclasses import replace

from prefect import get_run_logger
from prefect.futures import PrefectFuture
from prefect.task_runners import ProcessPoolTaskRunner, TaskRunner, ThreadPoolTaskRunner

from encoder.selection.candidate import Candidate, still_rising
from encoder.selection.halving import Halving, Rung, halving_summary, kept_count, late_bloomers, rank_depths
from encoder.selection.learning_rate import RATE_FACTORS, RateCheck, RateTrial, judge_rates
from encoder.selection.rule import choose_depth
from encoder.selection.search import NOT_TIED, Search, first_guess, search, tied
from encoder.tracking.runs import SweepRun
from flows.config import SweepConfig
from runtime.interrupt import Interrupted
from tasks.tracking import mark_pruned, record_cached_candidate, tag_convergence
from tasks.train import Training, train_depth


def sweep_depths(
    sweep: SweepConfig, trainings: list[Training]
) -> tuple[list[Candidate], Halving | None, list[Search]]:
    """Train every (depth, seed) of every family, by successive halving within a family when it sweeps enough
    depths (each family has its own recipe, so its own rung budgets); or, with the `search` strategy, screen
    every depth 1..L of a family and confirm the depths the screen cannot rule out (encoder.selection.search).

    Returns the candidates in (family, depth, seed) order, pruned and screened ones marked, what halving did,
    and what each search did.
    """
    candidates: list[Candidate] = []
    rungs: list[Rung] = []
    searches: list[Search] = []
    with task_runner(sweep) as runner:
        for training in trainings:
            if sweep.strategy == "search":
                family_candidates, search = _search_family(sweep, training, runner)
                candidates += family_candidates
                searches.append(search)
                continue
            depths = depths_of(sweep, training)
            family_candidates, family_rungs = _sweep_family(sweep, training, depths, runner)
            candidates += family_candidates
            rungs += family_rungs
    return candidates, halving_summary(rungs, candidates) if rungs else None, searches


def _search_family(sweep: SweepConfig, training: Training, runner: TaskRunner) -> tuple[list[Candidate], Search]:
    """The screen (depth L with probes, the first seed), then separate fine-tunes of the depths it points to,
    until the cheapest depth tied with the best is found (encoder.selection.search)."""
    recipe, family, seeds = training.train, training.family.name, sweep.seeds
    layers = max(depths_of(sweep, training))
    confirmed: dict[tuple[int, int], Candidate] = {}
    _train(sweep, replace(training, probes=True), [(layers, seeds[0])], recipe.max_epochs, confirmed, runner)
    _train(sweep, training, [(layers, seed) for seed in seeds[1:]], recipe.max_epochs, confirmed, runner)
    screen = confirmed[layers, seeds[0]]

    def confirm(depth: int) -> bool | None:
        _train(sweep, training, [(depth, seed) for seed in seeds], recipe.max_epochs, confirmed, runner)
        if not all(confirmed[depth, seed].usable for seed in seeds):
            return None
        verdict = tied(choose_depth([c for c in confirmed.values() if c.usable], sweep), family, depth)
        get_run_logger().info("search: %s depth %d %s", family, depth, "tied with the best" if verdict else
                              NOT_TIED)
        return verdict

    steps = []
    if screen.usable:
        _, steps = search(layers, first_guess(screen.screen, screen, sweep.metric, sweep.tolerance), confirm)
    tag_convergence(training.sweep, [c for c in confirmed.values() if c.usable])
    trained = sorted({depth for depth, _ in confirmed})
    screened = [c for c in screen.screen if c.depth not in trained]
    seconds = sum(c.cost.train_seconds or 0.0 for c in confirmed.values() if c.cost)
    record = Search(family=family, layers=layers, screened=[c.depth for c in screened], confirmed=trained,
                    steps=steps, seconds=seconds,
                    full_seconds=screen.cost.train_seconds if screen.cost and screen.cost.train_seconds else 0.0)
    ordered = sorted([*confirmed.values(), *screened], key=lambda c: (c.depth, c.seed))
    return ordered, record


def _sweep_family(
    sweep: SweepConfig, training: Training, all_depths: list[int], runner: TaskRunner
) -> tuple[list[Candidate], list[Rung]]:
    recipe = training.train
    latest: dict[tuple[int, int], Candidate] = {}
    rungs: list[Rung] = []
    depths = all_depths
    for epochs in [*sweep.rung_budgets(len(all_depths), recipe), recipe.max_epochs]:
        grids = [(d, s) for d in depths for s in sweep.seeds if not (latest.get((d, s)) and latest[d, s].finished)]
        _train(sweep, training, grids, epochs, latest, runner)
        if epochs == recipe.max_epochs:
            break
        rung = _halve(sweep, training.family.name, epochs, depths, latest, training.sweep, recipe.patience)
        rungs.append(rung)
        depths = rung.kept
    if extra := sweep.extension(recipe):
        rising = [(d, s) for d in depths for s in sweep.seeds if latest[d, s].usable and latest[d, s].not_converged]
        if rising:
            get_run_logger().info("%s still improving at the end of the budget: %d epochs more",
                                  ", ".join(latest[grid].name for grid in rising), extra)
        _train(sweep, training, rising, recipe.max_epochs + extra, latest, runner)
    tag_convergence(training.sweep, [c for c in latest.values() if c.usable])
    return [latest[d, s] for d in all_depths for s in sweep.seeds], rungs


def _train(
    sweep: SweepConfig, training: Training, grids: list[tuple[int, int]], epochs: int,
    latest: dict[tuple[int, int], Candidate], runner: TaskRunner,
) -> None:
    """Train each (depth, seed) of `grids` to `epochs` at once, continuing from `latest`; record the results
    there, flagged when still improving at the end (`Candidate.not_converged`)."""
    futures = {
        grid: runner.submit(train_depth, {"training": training, "depth": grid[0], "seed": grid[1],
                                          "epochs": epochs, "previous": latest.get(grid)})
        for grid in grids
    }
    for grid, future in futures.items():
        candidate = _collect(training.family.name, grid, future, latest.get(grid), training.sweep)
        if candidate.status == "failed" and epochs > training.train.max_epochs:  # an extension: keep what it had
            get_run_logger().warning("%s keeps its result at %d epochs", candidate.name, training.train.max_epochs)
            continue
        rising = candidate.usable and still_rising(candidate.history, training.train.patience, sweep.tolerance)
        latest[grid] = candidate.model_copy(update={"not_converged": rising})


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


def _halve(
    sweep: SweepConfig, family: str, epochs: int, depths: list[int], latest: dict[tuple[int, int], Candidate],
    run: SweepRun, window: int,
) -> Rung:
    """Keep the better half of `depths` by the rule, and the late bloomers; mark the rest pruned, in `latest`
    and in MLflow."""
    candidates = [latest[d, s] for d in depths for s in sweep.seeds]
    ranking = rank_depths(candidates, sweep)
    better = ranking[: kept_count(len(depths))]
    bloomers = late_bloomers(candidates, better, window, sweep.tolerance)
    kept = sorted(better + bloomers)
    pruned = [c for c in candidates if c.usable and c.depth not in kept]
    mark_pruned(run, pruned)
    latest |= {(c.depth, c.seed): c.model_copy(update={"status": "pruned"}) for c in pruned}
    if bloomers:
        get_run_logger().info("successive halving keeps depths %s still rising fast enough to catch up", bloomers)
    if pruned:
        get_run_logger().info("successive halving keeps depths %s, prunes %s", kept, sorted({c.depth for c in pruned}))
    return Rung(family=family, epochs=epochs, depths=list(depths), kept=kept, late_bloomers=bloomers)
