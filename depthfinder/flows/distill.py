"""Distillation, after the sweep's decision (selection.distillation): the best candidate teaches the cheaper depths,
each trained again as a student from its trained plain twin (or its initialisation: sweep.distill.start), a task like
any candidate (its own MLflow
child run, kept and resumed by a key that holds its teacher's content), and a candidate of its own for the rule."""

from __future__ import annotations

from dataclasses import replace

from prefect import get_run_logger

from depthfinder.flows.config import SweepConfig
from depthfinder.flows.sweep import collect_candidate, task_runner
from depthfinder.selection.candidate import Candidate, arm_label
from depthfinder.selection.decision import Decision
from depthfinder.selection.distillation import arms_to_distill, teacher_candidate
from depthfinder.tasks.pool import PoolTexts
from depthfinder.tasks.train import Training, make_teacher, train_depth


def distill(sweep: SweepConfig, trainings: list[Training], candidates: list[Candidate], decision: Decision,
            unlabeled: PoolTexts | None = None) -> list[Candidate]:
    """The students `sweep.distill.mode` asks for after the rule's `decision` among `candidates` (on the validation
    rows), every seed of each cheaper arm that trained (none when distillation is off or not needed), taught on the
    train rows and the `unlabeled` texts (tasks.pool.teaching_texts); failed ones come back failed, like any
    candidate, and the rule skips them."""
    if sweep.distill.mode == "off":
        return []
    arms = arms_to_distill(decision, sweep.distill.mode, unlabeled is not None)
    by_family = {training.family.name: training for training in trainings}
    arms = [arm for arm in arms if arm[0] in by_family]
    if not arms:
        return []
    best = teacher_candidate(candidates, decision, sweep.metric)
    twins = [c for c in candidates if c.usable and (c.family, c.depth) in arms] if sweep.distill.start == "twin" else []
    teacher = make_teacher(best, arm_label(best.family, best.depth), sweep.distill.temperature, sweep.distill.alpha,
                           unlabeled, twins)
    get_run_logger().info("Distillation: %s seed %d teaches %s (T %g, alpha %g) on the train rows%s", teacher.label,
                          teacher.seed, ", ".join(arm_label(*arm) for arm in arms), teacher.temperature, teacher.alpha,
                          f" and {unlabeled.rows:,} unlabelled texts" if unlabeled else "")
    students = {}
    for family, depth in arms:
        training = by_family[family]
        recipe = training.train if sweep.distill.epochs is None else training.train.model_copy(
            update={"max_epochs": sweep.distill.epochs})
        students[family, depth] = replace(training, teacher=teacher, train=recipe, probes=False)
    seeds = {arm: sorted(c.seed for c in candidates if c.usable and (c.family, c.depth) == arm) for arm in arms}
    keys = [(arm, seed) for arm in arms for seed in seeds[arm]]
    with task_runner(sweep) as runner:
        futures = {(arm, seed): runner.submit(train_depth, {"training": students[arm], "depth": arm[1], "seed": seed})
                   for arm, seed in sorted(keys, key=lambda key: -key[0][1])}  # deepest first, as the sweep
        return [collect_candidate(students[arm].name, (arm[1], seed), futures[arm, seed], None,
                                  students[arm].parent_run) for arm, seed in keys]
