"""Cross-fitting, after the sweep's decision, when its validation rows could not settle a cheaper depth
(selection.crossfit): the depths to settle and the best trained on folds of the train and validation rows, each fold
a task like a candidate (kept, resumed, spread over the task runner), and the rule judging again on every row."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
from prefect import get_run_logger

from depthfinder.evidence.bootstrap import Predictions
from depthfinder.flows.config import SweepConfig
from depthfinder.flows.sweep import task_runner
from depthfinder.runtime.interrupt import Interrupted
from depthfinder.selection.candidate import Candidate, arm_label, teacher_of
from depthfinder.selection.crossfit import (
    CrossFit,
    OutOfFold,
    arms_to_settle,
    judges_every_depth,
    out_of_fold,
    plan_cross_fit,
    save_out_of_fold,
)
from depthfinder.selection.decision import Decision
from depthfinder.tasks.crossfit import fold_tables
from depthfinder.tasks.train import Fold, Training, train_depth

FoldKey = tuple[str, int, int, int]  # (family, depth, seed, fold)


def cross_fit(sweep: SweepConfig, trainings: list[Training], candidates: list[Candidate],
              decision: Decision) -> tuple[OutOfFold | None, CrossFit | None]:
    """Out-of-fold predictions of the best and the depths `sweep.crossfit.mode` asks to judge on them (auto: every depth
    `decision`, the sweep's on the validation rows, did not show worse), as far as its budget allows, and what
    cross-fitting did; (None, None) when there is nothing to judge, (None, why) when it did not run or its folds did
    not finish."""
    # Students are left to the validation rows: their teacher learnt from the rows a fold holds out, so their
    # out-of-fold predictions would not be out of fold.
    settle = [arm for arm in arms_to_settle(decision, sweep.crossfit.mode) if teacher_of(arm[0]) is None]
    if not settle or teacher_of(decision.best_family) is not None:
        return None, None
    best = (decision.best_family, decision.best_depth)
    plan = plan_cross_fit(settle, best, candidates, sweep.crossfit.folds, sweep.crossfit.budget)
    named = len({family for family, _ in [best, *settle]}) > 1 or best[0] != "scratch"
    label = lambda arm: arm_label(*arm, named=named)  # noqa: E731
    left_out = [label(arm) for arm in plan.left_out]
    record = CrossFit(ran=False, reason="", folds=plan.folds, left_out=left_out,
                      estimated_seconds=plan.estimated_seconds, budget_seconds=plan.budget_seconds)
    if not plan.arms:
        reason = (f"not run: settling {', '.join(label(arm) for arm in settle)} would take about "
                  f"{plan.wanted_seconds:.0f} s of training, over its budget of "
                  f"{plan.budget_seconds:.0f} s ({sweep.crossfit.budget:g}x the sweep's; --crossfit-budget)")
        get_run_logger().info("Cross-fitting %s", reason)
        return None, record.model_copy(update={"reason": reason})
    folds = fold_tables(trainings[0].dataset, plan.folds, trainings[0].workdir)
    get_run_logger().info("Cross-fitting %s on %d folds of %d train and validation rows, so that they are judged on "
                          "the same rows", ", ".join(label(arm) for arm in plan.arms), plan.folds, len(folds.ids))
    trained = _train_folds(sweep, trainings, candidates, plan.arms, folds.tables)
    held_out = _held_out(trained, plan.folds)
    if not any(key[:2] == best for key in held_out) or len({key[:2] for key in held_out}) < 2:
        reason = "not used: the best's folds or every other depth's did not all finish (the log says why)"
        return None, record.model_copy(update={"reason": reason})
    arms = sorted({key[:2] for key in held_out}, key=lambda arm: (arm[1], arm[0]))
    evidence = OutOfFold(predictions=out_of_fold(folds.ids, held_out), folds=plan.folds,
                         chooses_best=judges_every_depth(sweep.crossfit.mode, decision, arms))
    kept = save_out_of_fold(trainings[0].workdir / "crossfit" / f"{trainings[0].dataset.data_hash}-"
                            f"{_digest(sorted(held_out))}.npz", evidence)
    spent = sum(c.cost.train_seconds for c in trained.values() if c.cost and c.cost.train_seconds)
    return evidence, record.model_copy(update={
        "ran": True, "rows": len(folds.ids), "chooses_best": evidence.chooses_best,
        "reason": "every depth the validation rows did not show worse, the best chosen on the out-of-fold rows"
        if evidence.chooses_best else f"the validation rows could not settle {label(settle[0])}",
        "depths": [depth for _, depth in arms], "families": [family for family, _ in arms], "seconds": spent,
        "predictions": str(Path(kept).resolve())})


def _digest(keys: list) -> str:
    """A short name for the (family, depth, seed)s cross-fitted."""
    return hashlib.sha256(json.dumps(keys).encode()).hexdigest()[:12]


def _train_folds(sweep: SweepConfig, trainings: list[Training], candidates: list[Candidate], arms: list,
                 tables: list) -> dict[FoldKey, Candidate]:
    """Train every seed of every arm on every fold, each a task on the sweep's task runner (deepest first when
    several train at once); the finished ones, failed folds logged and left out."""
    by_family = {training.family.name: training for training in trainings}
    seeds = {arm: sorted(c.seed for c in candidates if c.usable and (c.family, c.depth) == arm) for arm in arms}
    keys = sorted(((family, depth, seed, fold) for (family, depth) in arms for seed in seeds[family, depth]
                   for fold in range(len(tables))), key=lambda key: (-key[1], key[3]))
    finished = {}
    with task_runner(sweep) as runner:
        futures = {key: runner.submit(train_depth, {
            "training": replace(by_family[key[0]], dataset=tables[key[3]], fold=Fold(key[3] + 1, len(tables)),
                                probes=False, form_check=None),
            "depth": key[1], "seed": key[2]}) for key in keys}
        for key, future in futures.items():
            try:
                finished[key] = future.result()
            except Interrupted:
                raise
            except Exception as exc:  # a fold that fails leaves its depth to the validation rows
                get_run_logger().error("cross-fitting %s seed %d fold %d failed: %s", arm_label(*key[:2]), key[2],
                                       key[3] + 1, exc, exc_info=exc)
    return finished


def _held_out(trained: dict[FoldKey, Candidate], folds: int) -> dict[tuple[str, int, int], list[Predictions]]:
    """Per (family, depth, seed) whose every fold finished, each fold's predictions of the rows it held out."""
    held_out = {}
    for family, depth, seed in {key[:3] for key in trained}:
        runs = [trained.get((family, depth, seed, fold)) for fold in range(folds)]
        if any(run is None or run.test_predictions is None for run in runs):
            continue
        held_out[family, depth, seed] = [_predictions(run.test_predictions, (family, depth, seed)) for run in runs]
    return held_out


def _predictions(path: str, key: tuple[str, int, int]) -> Predictions:
    with np.load(path, allow_pickle=False) as saved:
        return Predictions(saved["true"], {key: saved["predicted"]})
