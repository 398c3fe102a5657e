"""End to end: students distilled from the best candidate after the sweep.

A tiny sweep of depths 1 and 2 with `distill: on`. Which depth is best on so few rows is chance, so the test fixes
the premise: the decision that plans distillation is the rule's with depth 2 as the best (flows.distill reads it
through `choose_depth`); the plan, the teacher, the training, the keys and the final decision are the real ones. The
first attempt is stopped (SIGTERM, as training checks for it) after the student's second epoch; the same command
again finishes it from there.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import lightning as L
import numpy as np
import pandas as pd
import pytest
from mlflow import MlflowClient

import depthfinder.encoder.training
import depthfinder.flows.distill
import depthfinder.flows.retrain
from depthfinder.cli.main import main
from depthfinder.expectations.table.datasets import get_dataset
from depthfinder.flows.summary import RunSummary
from depthfinder.runtime.interrupt import STOP
from depthfinder.selection.rule import choose_depth

CONFIG = """
data: {dataset: topics, dataset_rows: 400}
audit: {strict: false}
model: {d_model: 16, n_heads: 2, d_ff: 32, vocab_size: 300, max_len: 32}
train: {max_epochs: 5, min_epochs: 3, patience: 2, batch_size: 32, learning_rate: 0.003}
sweep: {depths: [1, 2], distill: on, halving: off, crossfit: off}
"""
STUDENT = "scratch, distilled from depth 2"


class StopAfterSecondEpoch(L.Callback):
    """Ask the process to stop once a student's second epoch (and its saved state) is done."""

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if trainer.current_epoch + 1 == 2:
            STOP.request("SIGTERM")


def taught_by_the_deepest(sweep, trainings, candidates, decision, unlabeled=None):
    """Distillation as the flow calls it, with depth 2 the best whatever the validation rows said: it teaches."""
    return depthfinder.flows.distill.distill(sweep, trainings, candidates, decision.model_copy(
        update={"best_family": "scratch", "best_depth": 2}), unlabeled)


@pytest.fixture(scope="module")
def distilled(prefect_server, tmp_path_factory):
    """(folder, exit codes, epochs each student attempt started from) of a run stopped mid-student and its rerun."""
    folder = tmp_path_factory.mktemp("distill")
    (folder / "tiny.yaml").write_text(CONFIG)
    real_train = depthfinder.encoder.training.train_candidate
    stop, students = True, []

    def stops_mid_student(data, depth, model_cfg, train_cfg, setup, **kwargs):
        if data.soft_labels is not None:
            students.append(setup.resume_from)
            if stop:
                setup = dataclasses.replace(setup, callbacks=[*setup.callbacks, StopAfterSecondEpoch()])
        return real_train(data, depth, model_cfg, train_cfg, setup, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        patch.setattr(depthfinder.flows.retrain, "distill", taught_by_the_deepest)
        patch.setattr(depthfinder.encoder.training, "train_candidate", stops_mid_student)
        codes = [main(["run", "--config", "tiny.yaml", "--summary-json", "first.json"])]
        stop = False
        codes.append(main(["run", "--config", "tiny.yaml", "--summary-json", "second.json"]))
    yield folder, codes, students


def _summary(folder: Path) -> RunSummary:
    return RunSummary.from_dict(json.loads((folder / "second.json").read_text()))


def test_a_student_stopped_mid_training_continues_from_its_saved_epoch(distilled) -> None:
    folder, codes, students = distilled
    assert codes[0] != 0 and codes[1] == 0
    assert students[0] is None and students[1] is not None  # the rerun continued the student's saved state
    (student,) = [c for c in _summary(folder).candidates if c.teacher is not None]
    assert student.resumed_from == 2 and student.status == "trained"
    plain = [c for c in _summary(folder).candidates if c.teacher is None]
    assert {c.status for c in plain} == {"cached"}  # the sweep's candidates were reused, not retrained


def test_the_student_is_a_candidate_of_its_own_named_after_its_teacher(distilled) -> None:
    folder, _, _ = distilled
    summary = _summary(folder)
    (student,) = [c for c in summary.candidates if c.teacher is not None]
    assert (student.family, student.depth, student.teacher) == (STUDENT, 1, "depth 2 seed 1")
    assert student.name == "depth 1 seed 1, distilled from depth 2"
    assert (STUDENT, 1) in {(s.family, s.depth) for s in summary.rule.scores}  # an arm the rule judged
    assert choose_depth(summary.candidates, summary.rule.settings) == summary.rule  # the decision replays
    # its soft labels were computed once, for the teacher and the table
    assert len([path for path in (folder / ".depthfinder" / "soft-labels").glob("*.npy")
                if "-unlabeled-" not in path.name]) == 1


def test_the_students_run_says_who_taught_it_and_the_card_what_distillation_bought(distilled) -> None:
    folder, _, _ = distilled
    summary = _summary(folder)
    client = MlflowClient(tracking_uri=f"sqlite:///{folder / 'mlflow.db'}")
    (student,) = [c for c in summary.candidates if c.teacher is not None]
    run = client.get_run(student.mlflow_run_id)
    assert run.data.tags["depthfinder.teacher"] == "depth 2 seed 1"
    assert run.data.params["distill_alpha"] == "0.5" and run.data.params["distill_temperature"] == "2.0"
    assert run.data.tags["mlflow.runName"].split(" · ")[0] == "depth-1-seed-1, distilled from depth 2"
    version = client.get_model_version(summary.model.name, summary.model.version)
    assert "**Distillation.** depth 2 seed 1 taught; depth 1, distilled from depth 2" in version.description
    assert "plainly" in version.description
    if summary.rule.selected_family == STUDENT:  # the shipped model names its teacher wherever it is named
        assert version.tags["teacher"] == "depth 2"
        assert "depth 1, distilled from depth 2" in summary.rule.reason


@pytest.fixture(scope="module")
def taught_on_a_pool(distilled):
    """The same run once more with 300 unlabelled texts of the same source: (folder, exit code, pool rows)."""
    folder, _, _ = distilled
    get_dataset("topics").generate(300, 11)[["text"]].to_csv(folder / "pool.csv", index=False)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        patch.setattr(depthfinder.flows.retrain, "distill", taught_by_the_deepest)
        code = main(["run", "--config", "tiny.yaml", "--unlabeled", "pool.csv", "--summary-json", "pool.json"])
    return folder, code, len(pd.read_csv(folder / "pool.csv"))


def test_a_student_also_learns_on_half_the_pool_and_the_other_half_stays_evidence(taught_on_a_pool) -> None:
    folder, code, pool_rows = taught_on_a_pool
    assert code == 0
    summary = RunSummary.from_dict(json.loads((folder / "pool.json").read_text()))
    (student,) = [c for c in summary.candidates if c.teacher is not None]
    assert student.status == "trained"  # another transfer set is another student; the plain ones are reused
    assert {c.status for c in summary.candidates if c.teacher is None} == {"cached"}
    run = MlflowClient(tracking_uri=f"sqlite:///{folder / 'mlflow.db'}").get_run(student.mlflow_run_id)
    taught = int(run.data.params["distill_unlabeled_texts"])
    pool = summary.pool  # the texts it used: those that copy no labelled text (the same source repeats some)
    assert pool.texts == pool_rows and pool.used == pool.texts - pool.of_held_out - pool.of_train
    assert pool.taught == taught == pool.used // 2  # a train row each would be more than half the pool: half
    assert student.taught_texts == taught
    (twin,) = [c for c in summary.candidates if c.teacher is None and c.depth == student.depth]
    assert student.cost.flops_per_example == twin.cost.flops_per_example  # served alike, whatever it was taught on
    card = MlflowClient(tracking_uri=f"sqlite:///{folder / 'mlflow.db'}").get_model_version(
        summary.model.name, summary.model.version).description
    assert f"depth 2 seed 1 taught on the train rows and {taught:,} unlabelled texts" in card
    caches = list((folder / ".depthfinder" / "soft-labels").glob("*-unlabeled-*.npy"))
    assert len(caches) == 1 and np.load(caches[0]).shape[0] == taught  # the teacher labelled them once
    # the pool as read, the texts taught on, and the rest, the evidence a rule asking the pool would read
    parts = sorted(len(pd.read_parquet(path)) for path in (folder / ".depthfinder" / "pool").glob("*.parquet"))
    assert parts == sorted([pool.used, taught, pool.used - taught])
