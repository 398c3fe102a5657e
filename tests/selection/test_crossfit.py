"""Cross-fitting's statistics on constructed predictions whose truth is known (selection.crossfit)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from depthfinder.evidence.bootstrap import Predictions, compare_to_best, save_predictions
from depthfinder.selection.candidate import Candidate, Cost
from depthfinder.selection.crossfit import (
    OutOfFold,
    arms_to_settle,
    assign_folds,
    judges_every_depth,
    out_of_fold,
    plan_cross_fit,
)
from depthfinder.selection.reasons import depth_verdicts
from depthfinder.selection.rule import choose_depth
from depthfinder.selection.settings import SelectionRule

RULE = SelectionRule(metric="accuracy", tolerance=0.01, confidence=0.9)


def pair(rows: int, disagree: float, gap: float, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Binary truth and two predictions of it: the best right on 90 % of the rows; the cheaper one differing from it
    on `disagree` of the rows, on which it is right just often enough that its accuracy is `gap` below the best's
    (the truth, exactly, on these rows)."""
    rng = np.random.default_rng(seed)
    true = rng.integers(0, 2, rows)
    best = np.where(rng.random(rows) < 0.9, true, 1 - true)
    differ = rng.permutation(rows)[: round(disagree * rows)]
    # On the rows where they differ the cheaper one is right where the best is wrong: choose how many.
    best_right = differ[best[differ] == true[differ]]
    best_wrong = differ[best[differ] != true[differ]]
    # gap * rows = (best right there) - (best wrong there) for the cheaper; move rows between the two to reach it.
    excess = len(best_right) - len(best_wrong) - round(gap * rows)
    if excess > 0:  # too many rows where the cheaper one would turn right into wrong: keep some agreeing
        best_right = best_right[excess:]
    else:
        best_wrong = best_wrong[-excess:]
    cheaper = best.copy()
    cheaper[np.concatenate([best_right, best_wrong]).astype(int)] ^= 1
    return true, best, cheaper


def sweep(folder: Path, true: np.ndarray, best: np.ndarray, cheaper: np.ndarray) -> list[Candidate]:
    """A depth 1 and a depth 2 with their saved validation predictions, train times 10 s and 20 s."""
    candidates = []
    for depth, predicted, seconds in ((1, cheaper, 10.0), (2, best, 20.0)):
        path = save_predictions(folder / f"depth{depth}.npz", true, predicted)
        accuracy = float((predicted == true).mean())
        candidates.append(Candidate(depth=depth, status="trained", metrics={"accuracy": accuracy, "macro_f1": accuracy},
                                    cost=Cost(flops_per_example=depth * 1e6, train_seconds=seconds),
                                    predictions=str(path)))
    return candidates


def evidence(true: np.ndarray, best: np.ndarray, cheaper: np.ndarray, folds: int = 5,
             chooses_best: bool = False) -> OutOfFold:
    return OutOfFold(Predictions(true, {("scratch", 1, 1): cheaper, ("scratch", 2, 1): best}), folds, chooses_best)


def test_folds_are_stratified_by_label_and_the_same_on_every_run() -> None:
    labels = ["a"] * 70 + ["b"] * 30
    folds = assign_folds(labels, 5)

    assert np.array_equal(folds, assign_folds(labels, 5))
    for fold in range(5):
        held_out = [label for label, f in zip(labels, folds, strict=True) if f == fold]
        assert (held_out.count("a"), held_out.count("b")) == (14, 6)
    with pytest.raises(ValueError, match="at least 5"):
        assign_folds(["a", "b", "a"], 5)


def test_out_of_fold_predictions_land_on_the_rows_each_fold_held_out() -> None:
    fold_ids = np.array([0, 1, 0, 2, 1, 2, 0])
    true = np.array([1, 0, 1, 1, 0, 0, 1])
    key = ("scratch", 1, 1)
    held_out = {key: [Predictions(true[fold_ids == f], {key: np.full((fold_ids == f).sum(), f)}) for f in range(3)]}

    found = out_of_fold(fold_ids, held_out)

    assert np.array_equal(found.true, true) and np.array_equal(found.predicted[key], fold_ids)
    shifted = {key: [held_out[key][1], held_out[key][0], held_out[key][2]]}
    with pytest.raises(ValueError):  # a fold's predictions on rows that are not its own
        out_of_fold(fold_ids, shifted)


def test_out_of_fold_intervals_narrow_as_one_over_the_square_root_of_the_rows() -> None:
    widths = {}
    for rows in (300, 2700):
        true, best, cheaper = pair(rows, disagree=0.1, gap=0.0, seed=rows)
        found = evidence(true, best, cheaper).predictions
        widths[rows] = compare_to_best(found, {("scratch", 1): [1], ("scratch", 2): [1]}, ("scratch", 2),
                                       "accuracy", 0.9)[("scratch", 1)].half_width

    assert widths[300] / widths[2700] == pytest.approx(3.0, rel=0.25)


def test_a_depth_the_validation_rows_cannot_settle_ships_when_the_out_of_fold_rows_show_it_within(
    tmp_path: Path,
) -> None:
    true, best, cheaper = pair(300, disagree=0.06, gap=0.005, seed=1)
    candidates = sweep(tmp_path, true, best, cheaper)
    on_validation = choose_depth(candidates, RULE)
    assert on_validation.selected_depth == 2 and on_validation.scores[0].verdict == "unsettled"
    assert arms_to_settle(on_validation, "auto") == [("scratch", 1)]

    many = pair(2700, disagree=0.06, gap=0.0, seed=2)
    decision = choose_depth(candidates, RULE, evidence(*many))

    assert decision.selected_depth == 1 and decision.scores[0].verdict == "within"
    assert decision.scores[0].compared_on == "out-of-fold" and decision.out_of_fold_rows == 2700
    assert "on the 2,700 out-of-fold rows, and those rows show depth 1 within the 0.01 tolerance" in decision.reason
    assert "2,700 out-of-fold train and validation rows (5 folds" in decision.evidence


@pytest.mark.parametrize("chooses_best", [False, True], ids=["best-on-validation", "best-out-of-fold"])
@pytest.mark.parametrize("rows", [300, 2700])
def test_a_depth_truly_beyond_the_tolerance_never_ships_on_out_of_fold_rows(tmp_path: Path, rows: int,
                                                                            chooses_best: bool) -> None:
    """Out-of-fold rows where the cheaper depth is exactly 0.015 below the best, in 20 draws of rows: the mean is
    beyond the tolerance, and no interval, however it falls, lets it ship; nor when validation says it is level,
    whether the best is the validation rows' (crossfit: on) or the out-of-fold rows' (auto, every depth judged)."""
    validation = pair(300, disagree=0.2, gap=0.005, seed=0)
    candidates = sweep(tmp_path, *validation)
    for seed in range(20):
        decision = choose_depth(candidates, RULE, evidence(*pair(rows, disagree=0.1, gap=0.015, seed=seed),
                                                           chooses_best=chooses_best))
        assert decision.selected_depth == 2, decision.reason
        assert decision.scores[0].verdict in ("beyond", "worse")


def test_the_budget_takes_the_best_then_the_cheapest_unsettled_depths_it_can_pay_for() -> None:
    candidates = [Candidate(depth=depth, status="trained", metrics={"accuracy": 0.9},
                            cost=Cost(flops_per_example=depth, train_seconds=10.0 * depth)) for depth in (1, 2, 4, 6)]
    best, settle = ("scratch", 6), [("scratch", 1), ("scratch", 2), ("scratch", 4)]

    # The sweep trained 130 s; 5 folds cost 4x a depth's own time: depth 6 240 s, depth 1 40 s, 2 80 s, 4 160 s;
    # 4 folds 3x (180, 30, 60, 120 s), 3 folds 2x (120, 20, 40, 80 s).
    plan = plan_cross_fit(settle, best, candidates, folds=5, budget=3.0)  # 390 s: 4 folds pay for every depth
    assert plan.folds == 4 and plan.arms == [best, *settle] and plan.left_out == []
    assert plan.estimated_seconds == pytest.approx(390.0) and plan.budget_seconds == pytest.approx(390.0)
    fewest = plan_cross_fit(settle, best, candidates, folds=5, budget=2.2)  # 286 s: only 3 folds pay for all (260 s)
    assert fewest.folds == 3 and fewest.arms == [best, *settle]
    short = plan_cross_fit(settle, best, candidates, folds=5, budget=1.5)  # 195 s: 3 folds pay for 6, 1 and 2
    assert short.folds == 3 and short.arms == [best, *settle[:2]] and short.left_out == settle[2:]
    short = plan_cross_fit(settle, best, candidates, folds=4, budget=1.8)  # 234 s: 4 folds pay for 6 and 1 (210 s)
    assert short.folds == 4 and short.arms == [best, ("scratch", 1)] and short.left_out == settle[1:]
    nothing = plan_cross_fit(settle, best, candidates, folds=5, budget=1.0)  # 130 s: 3 folds' best is 120 s
    assert nothing.arms == [] and nothing.left_out == settle and nothing.folds == 5
    assert nothing.wanted_seconds == pytest.approx(520.0)  # what the sentence says it would have cost, on 5 folds


def test_a_sweep_of_two_depths_is_cross_fitted_within_the_default_budget() -> None:
    """Both depths on 5 folds cost 4x the sweep, over the default 3x: on 4 folds, 3x."""
    candidates = [Candidate(depth=depth, status="trained", metrics={"accuracy": 0.9},
                            cost=Cost(flops_per_example=depth, train_seconds=10.0 * depth)) for depth in (1, 2)]

    plan = plan_cross_fit([("scratch", 1)], ("scratch", 2), candidates, folds=5, budget=3.0)

    assert plan.folds == 4 and plan.arms == [("scratch", 2), ("scratch", 1)]
    assert plan.estimated_seconds == pytest.approx(90.0) and plan.budget_seconds == pytest.approx(90.0)


def test_auto_judges_every_depth_the_validation_rows_do_not_show_worse(tmp_path: Path) -> None:
    level = choose_depth(sweep(tmp_path, *pair(300, disagree=0.06, gap=0.005, seed=1)), RULE)
    worse = choose_depth(sweep(tmp_path, *pair(3000, disagree=0.2, gap=0.1, seed=1)), RULE)

    assert level.scores[0].verdict == "unsettled" and worse.scores[0].verdict == "worse"
    assert arms_to_settle(level, "auto") == arms_to_settle(level, "on") == [("scratch", 1)]
    assert judges_every_depth("auto", level, [("scratch", 2), ("scratch", 1)])
    assert not judges_every_depth("on", level, [("scratch", 2), ("scratch", 1)])
    assert arms_to_settle(level, "off") == []
    assert arms_to_settle(worse, "auto") == arms_to_settle(worse, "on") == []
    means_only = choose_depth(sweep(tmp_path, *pair(300, disagree=0.06, gap=0.005, seed=1)),
                              RULE.model_copy(update={"confidence": None}))
    assert arms_to_settle(means_only, "auto") == arms_to_settle(means_only, "on") == []


def test_a_cheaper_depth_beyond_the_tolerance_by_chance_is_judged_out_of_fold_and_ships(tmp_path: Path) -> None:
    """The case a chance validation mean decided: on 300 validation rows the cheaper depth's mean falls 0.02 below
    the best (beyond the tolerance, not shown worse), though in truth the two are level. auto judges it on the
    out-of-fold rows, which show it within, and it ships."""
    true, best, cheaper = pair(300, disagree=0.08, gap=0.02, seed=3)
    candidates = sweep(tmp_path, true, best, cheaper)
    on_validation = choose_depth(candidates, RULE)
    assert on_validation.selected_depth == 2 and on_validation.scores[0].verdict == "beyond"
    settle = arms_to_settle(on_validation, "auto")
    assert settle == [("scratch", 1)] and judges_every_depth("auto", on_validation, [("scratch", 2), *settle])

    level = pair(2700, disagree=0.06, gap=0.002, seed=4)
    decision = choose_depth(candidates, RULE, evidence(*level, chooses_best=True))

    assert decision.selected_depth == 1 and decision.scores[0].verdict == "within"
    assert "the 2,700 out-of-fold rows" in decision.reason and "on the 300 validation rows" in decision.reason
    said = depth_verdicts(decision, decision.scores[:1])  # the terminal's, the artifact's and the card's words
    assert said.startswith("depth 1 ") and said.endswith(" on the 2,700 out-of-fold rows (shown within the tolerance, "
                                                         "may ship)")


def test_auto_orders_the_depths_that_could_change_the_choice_first(tmp_path: Path) -> None:
    """Four depths, the validation best the deepest but one: the cheaper ones first (cheapest first), the costlier
    one last (it can change only which depth is best)."""
    rng = np.random.default_rng(5)
    true = rng.integers(0, 2, 400)
    candidates = []
    for depth, right in ((1, 0.84), (2, 0.86), (4, 0.90), (6, 0.88)):
        predicted = np.where(rng.random(400) < right, true, 1 - true)
        path = save_predictions(tmp_path / f"d{depth}.npz", true, predicted)
        accuracy = float((predicted == true).mean())
        candidates.append(Candidate(depth=depth, status="trained", metrics={"accuracy": accuracy},
                                    cost=Cost(flops_per_example=depth, train_seconds=depth), predictions=str(path)))
    decision = choose_depth(candidates, RULE)
    not_worse = [(s.family, s.depth) for s in decision.scores
                 if s.verdict != "worse" and (s.family, s.depth) != (decision.best_family, decision.best_depth)]

    settle = arms_to_settle(decision, "auto")

    assert sorted(settle) == sorted(not_worse) and len(settle) >= 2
    chosen = decision.selected_depth
    cheaper = [depth for _, depth in settle if depth < chosen]
    assert [depth for _, depth in settle] == sorted(cheaper) + sorted(d for _, d in settle if d > chosen)


def test_with_every_depth_cross_fitted_the_best_is_chosen_on_the_out_of_fold_rows(tmp_path: Path) -> None:
    """crossfit auto and all. A cheaper depth that wins the validation rows by chance ships on them alone; out of fold,
    where it is truly 0.03 below (three tolerances), the deeper one is the best, and the cheaper one is shown worse."""
    true, better, worse = pair(300, disagree=0.05, gap=0.01, seed=1)
    candidates = sweep(tmp_path, true, best=worse, cheaper=better)  # depth 1 the better on validation
    folds_true, deep, shallow = pair(3000, disagree=0.05, gap=0.03, seed=2)

    alone = choose_depth(candidates, RULE)
    assert alone.selected_depth == 1 == alone.best_depth
    assert arms_to_settle(alone, "all") == arms_to_settle(alone, "auto") == [("scratch", 2)]
    assert judges_every_depth("auto", alone, [("scratch", 1), ("scratch", 2)])

    assert choose_depth(candidates, RULE, evidence(folds_true, deep, shallow)).best_depth == 1  # on: kept
    decision = choose_depth(candidates, RULE, evidence(folds_true, deep, shallow, chooses_best=True))

    assert decision.best_depth == decision.selected_depth == 2
    cheap = decision.scores[0]
    assert (cheap.compared_on, cheap.verdict) == ("out-of-fold", "worse")
    assert "depth 2 ships: it has the best accuracy on the 3,000 out-of-fold rows" in decision.reason
    assert "; on the 300 validation rows, depth 2 accuracy 0.8" in decision.reason  # a clause of its own


def test_rows_whose_labels_are_each_their_own_still_get_folds() -> None:
    """A token table's label is a sentence's tags joined: nearly every row its own; its folds are drawn unstratified,
    every fold held out and the same on every run."""
    labels = [f"O B-PER {'O ' * i}".strip() for i in range(23)]
    folds = assign_folds(labels, 4)
    assert sorted(np.bincount(folds).tolist()) == [5, 6, 6, 6]
    assert np.array_equal(folds, assign_folds(labels, 4))
