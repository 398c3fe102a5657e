"""Which depths distillation trains, which model teaches, and how a student reads wherever it is named."""

from __future__ import annotations

import numpy as np
import pytest

from depthfinder.selection.candidate import Candidate, Cost, arm_label, base_family, student_family, teacher_of
from depthfinder.selection.distillation import arms_to_distill, distillation_sentence, teacher_candidate
from depthfinder.selection.rule import choose_depth
from depthfinder.selection.settings import SelectionRule

MEANS = SelectionRule(tolerance=0.01, confidence=None)  # by the means: no prediction files needed
STUDENT = student_family("scratch", "depth 6")


def candidate(depth: int, f1: float, family: str = "scratch", seed: int = 1, test: float | None = None) -> Candidate:
    return Candidate(depth=depth, family=family, seed=seed, status="trained", metrics={"macro_f1": f1},
                     test_metrics={"macro_f1": f1 if test is None else test}, bundle=f"/b/{family}/{depth}/{seed}",
                     cost=Cost(flops_per_example=depth * 1e8), teacher="depth 6 seed 1" if teacher_of(family) else None)


# depth 4 is within the tolerance of depth 6; depths 1 and 2 are not
SWEEP = [candidate(1, 0.80), candidate(2, 0.90), candidate(4, 0.945), candidate(6, 0.95)]


def test_a_students_family_keeps_its_twins_and_names_its_teacher() -> None:
    assert STUDENT == "scratch, distilled from depth 6"
    assert (base_family(STUDENT), teacher_of(STUDENT), teacher_of("scratch")) == ("scratch", "depth 6", None)
    assert arm_label(STUDENT, 2) == "depth 2, distilled from depth 6"
    assert arm_label(student_family("MiniLM", "MiniLM depth 6"), 3) == "MiniLM depth 3, distilled from MiniLM depth 6"
    assert candidate(2, 0.9, STUDENT).name == "depth 2 seed 1, distilled from depth 6"


def test_on_distils_every_depth_cheaper_than_the_best_auto_those_cheaper_than_the_choice() -> None:
    decision = choose_depth(SWEEP, MEANS)
    assert (decision.selected_depth, decision.best_depth) == (4, 6)
    assert arms_to_distill(decision, "on") == [("scratch", 1), ("scratch", 2), ("scratch", 4)]
    assert arms_to_distill(decision, "auto", unlabeled=True) == [("scratch", 1), ("scratch", 2)]
    assert arms_to_distill(decision, "off", unlabeled=True) == []
    cheapest_ships = choose_depth([candidate(1, 0.95), candidate(2, 0.95)], MEANS)
    assert arms_to_distill(cheapest_ships, "auto", unlabeled=True) == []
    # auto teaches only where there are unlabelled texts to teach on; on teaches on the train rows alone too
    assert arms_to_distill(decision, "auto") == []
    assert arms_to_distill(decision, "on") == arms_to_distill(decision, "on", unlabeled=True)


def test_students_are_arms_of_their_own_and_never_taught_again() -> None:
    students = [candidate(2, 0.948, STUDENT), candidate(1, 0.85, STUDENT)]
    decision = choose_depth(SWEEP + students, MEANS)
    assert (STUDENT, 2) in {(s.family, s.depth) for s in decision.scores}
    assert (decision.selected_family, decision.selected_depth) == (STUDENT, 2)  # within the tolerance, cheaper
    assert "depth 2, distilled from depth 6 ships" in decision.reason
    assert all(teacher_of(family) is None for family, _ in arms_to_distill(decision, "on"))
    best_is_a_student = choose_depth([*SWEEP, candidate(4, 0.99, STUDENT)], MEANS)
    assert arms_to_distill(best_is_a_student, "on") == []


def test_the_teacher_is_the_best_arms_best_seed() -> None:
    sweep = [*SWEEP[:3], candidate(6, 0.94, seed=1), candidate(6, 0.96, seed=2)]
    decision = choose_depth(sweep, MEANS)
    teacher = teacher_candidate(sweep, decision, "macro_f1")
    assert (teacher.depth, teacher.seed) == (6, 2)
    with pytest.raises(ValueError, match="no usable candidate"):
        teacher_candidate([c.model_copy(update={"bundle": None}) for c in sweep], decision, "macro_f1")


def test_the_sentence_says_who_taught_and_what_it_bought_against_the_plain_twin() -> None:
    candidates = [*SWEEP, candidate(2, 0.946, STUDENT, test=0.93)]
    decision = choose_depth(candidates, MEANS)
    assert distillation_sentence(decision, candidates, "macro_f1") == (
        "Distillation: depth 6 seed 1 taught; depth 2, distilled from depth 6 (ships): validation macro_f1 0.946 vs "
        "0.900 plainly (+0.046), test 0.930 vs 0.900 (+0.030)")
    worse = [*SWEEP, candidate(2, 0.946, STUDENT, test=0.89)]
    assert "test 0.890 vs 0.900 (\u22120.010)" in distillation_sentence(choose_depth(worse, MEANS), worse, "macro_f1")
    assert distillation_sentence(choose_depth(SWEEP, MEANS), SWEEP, "macro_f1") is None
    pooled = [*SWEEP, candidate(2, 0.946, STUDENT, test=0.93).model_copy(update={"taught_texts": 1500})]
    assert distillation_sentence(choose_depth(pooled, MEANS), pooled, "macro_f1").startswith(
        "Distillation: depth 6 seed 1 taught on the train rows and 1,500 unlabelled texts; depth 2, distilled from")


def test_what_a_student_bought_has_its_paired_interval_on_the_validation_rows(tmp_path) -> None:
    from depthfinder.evidence.bootstrap import save_predictions

    rng = np.random.default_rng(0)
    true = rng.integers(0, 2, 400)

    def saved(name: str, correct: float) -> str:
        predicted = np.where(rng.random(400) < correct, true, 1 - true)
        return str(save_predictions(tmp_path / f"{name}.npz", true, predicted))

    def with_predictions(c: Candidate, correct: float) -> Candidate:
        return c.model_copy(update={"predictions": saved(f"{c.family}-{c.depth}", correct)})

    candidates = [with_predictions(candidate(2, 0.80), 0.80), with_predictions(candidate(6, 0.95), 0.95),
                  with_predictions(candidate(2, 0.93, STUDENT), 0.93)]
    decision = choose_depth(candidates, SelectionRule(tolerance=0.01, confidence=0.9))
    sentence = distillation_sentence(decision, candidates, "macro_f1")
    low = float(sentence.split("plainly (")[1].split("[")[1].split(",")[0].replace("\u2212", "-"))
    assert low > 0.05  # the student is shown better than its twin on these rows
    assert sentence.endswith("([low, high]: 90% paired bootstrap interval on the validation rows)")
    assert ": shown better than its twin)" in sentence


def test_a_student_that_kept_its_twins_weights_is_no_arm_and_the_sentence_says_so() -> None:
    kept = candidate(2, 0.90, STUDENT).model_copy(update={"kept_twin": True})
    taught = candidate(1, 0.86, STUDENT)
    candidates = [*SWEEP, kept, taught]
    decision = choose_depth(candidates, MEANS)

    assert (STUDENT, 2) not in {(s.family, s.depth) for s in decision.scores}
    assert (STUDENT, 1) in {(s.family, s.depth) for s in decision.scores}
    sentence = distillation_sentence(decision, candidates, "macro_f1")
    assert ("depth 2, distilled from depth 6: no epoch taught beat its plain twin on the validation rows (macro_f1 "
            "0.900), so it kept the twin's weights and is no candidate of its own") in sentence
    assert "depth 1, distilled from depth 6: validation macro_f1 0.860 vs 0.800 plainly (+0.060)" in sentence
