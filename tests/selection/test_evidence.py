"""The rule decides by the evidence of the candidates' saved validation predictions (selection.predictions), on
synthetic prediction sets whose truth is known."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from depthfinder.evidence.bootstrap import save_predictions
from depthfinder.evidence.metrics import classification_metrics
from depthfinder.selection.candidate import Candidate, Cost
from depthfinder.selection.predictions import load_predictions
from depthfinder.selection.rule import choose_depth
from depthfinder.selection.settings import SelectionRule
from tests.evidence.test_bootstrap import CLASSES, labels, model


def saved_candidate(folder: Path, depth: int, true: np.ndarray, predicted: np.ndarray, flops: float) -> Candidate:
    path = save_predictions(folder / f"depth-{depth}.npz", true, predicted)
    f1 = classification_metrics(true.astype(str).tolist(), predicted.astype(str).tolist())["macro_f1"]
    return Candidate(depth=depth, status="trained", metrics={"macro_f1": f1}, predictions=str(path),
                     cost=Cost(flops_per_example=flops))


def test_a_cheap_depth_worse_by_more_than_the_tolerance_never_ships_on_few_rows_or_many(tmp_path: Path) -> None:
    """A cheap depth truly (and observed) worse by 0.03: on 300 rows its interval is wider than that, on 20,000
    it is shown worse; either way its mean is beyond the 0.01 tolerance and the best is kept (the rule before
    the old rule shipped it on 300 rows: "cannot show it worse")."""
    rng = np.random.default_rng(7)
    for rows, expected in ((300, 4), (20_000, 4)):
        folder = tmp_path / str(rows)
        folder.mkdir()
        true = labels(rng, rows)
        deep = model(rng, true, 0.9)
        shallow = model(rng, true, 0.87)
        while not -0.035 < np.mean(shallow == true) - np.mean(deep == true) < -0.025:  # as worse as it truly is
            shallow = model(rng, true, 0.87)
        sweep = [saved_candidate(folder, 1, true, shallow, 1e8), saved_candidate(folder, 4, true, deep, 4e8)]
        decision = choose_depth(sweep, SelectionRule(tolerance=0.01))
        assert decision.selected_depth == expected, decision.reason
        assert decision.evidence.startswith(f"paired bootstrap: 2000 resamples of {rows:,} validation rows")
        assert "90% interval of depth" in decision.reason
        assert choose_depth(sweep, decision.settings) == decision
    means_only = choose_depth(sweep, SelectionRule(tolerance=0.01, confidence=None))
    assert means_only.evidence == "means only (confidence: null)" and means_only.scores[0].vs_best is None


def test_the_sentence_gives_the_chosen_depths_interval(tmp_path: Path) -> None:
    rng = np.random.default_rng(8)
    true = labels(rng, 20_000)
    deep = model(rng, true, 0.9)
    shallow = np.where(rng.random(20_000) < 0.995, deep, (deep + 1) % CLASSES)  # the same model, nearly
    decision = choose_depth([saved_candidate(tmp_path, 1, true, shallow, 1e8),
                             saved_candidate(tmp_path, 4, true, deep, 4e8)], SelectionRule(tolerance=0.01))
    low_bound = decision.scores[0].vs_best
    assert decision.selected_depth == 1
    gap = decision.scores[1].mean - decision.scores[0].mean
    low, high = (f"{value:+.3f}".replace("-", "\u2212") for value in (low_bound.low, low_bound.high))
    assert decision.reason.startswith(f"depth 4 scores {gap:.3f} higher (macro_f1 {decision.scores[1].mean:.3f} vs "
                                      f"{decision.scores[0].mean:.3f}), and the validation rows show depth 1 "
                                      "within the 0.01 tolerance")
    assert f"(90% interval of depth 1 \u2212 depth 4: {low} to {high}), so the cheaper depth 1 ships" in decision.reason
    assert -0.01 < low_bound.low < low_bound.difference < low_bound.high


def test_predictions_of_other_rows_or_missing_files_fall_back_to_the_means(tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    true = labels(rng, 200)
    one = saved_candidate(tmp_path, 1, true, model(rng, true, 0.9), 1e8)
    other_rows = saved_candidate(tmp_path, 4, labels(rng, 200), model(rng, true, 0.9), 4e8)
    assert load_predictions([one, other_rows]) == "depth 4 seed 1 was validated on other rows than the rest"
    gone = one.model_copy(update={"predictions": str(tmp_path / "gone.npz")})
    assert load_predictions([gone]).startswith("depth 1 seed 1's validation predictions cannot be read")
    decision = choose_depth([one, other_rows], SelectionRule(tolerance=0.01))
    assert decision.evidence == "means only: depth 4 seed 1 was validated on other rows than the rest"
    assert all(score.vs_best is None for score in decision.scores)


def test_a_depth_truly_worse_by_more_than_the_tolerance_rarely_ties_with_the_best(tmp_path: Path) -> None:
    """The tie's share of the promise's risk on 300 rows: a cheap depth truly 0.02 below the best, over 100 fresh
    validation splits, ships in the best's place (tied, with a lower mean) in at most 5 % of them by the rule; by
    "not shown worse" (the old rule) in most. (When its mean is the best by chance it ships as the
    best under any tie rule: that part of the risk is the validation split's, which the sentence's resolution
    speaks to.)"""
    rng = np.random.default_rng(10)
    tied = {"rule": 0, "not shown worse": 0}
    for trial in range(100):
        folder = tmp_path / str(trial)
        folder.mkdir()
        true = labels(rng, 300)
        sweep = [saved_candidate(folder, 1, true, model(rng, true, 0.85), 1e8),
                 saved_candidate(folder, 4, true, model(rng, true, 0.87), 4e8)]
        decision = choose_depth(sweep, SelectionRule(metric="macro_f1", tolerance=0.01))
        if decision.best_depth != 4:
            continue
        tied["rule"] += decision.selected_depth == 1
        tied["not shown worse"] += decision.scores[0].vs_best.high >= -0.01
    assert tied["rule"] <= 5
    assert tied["not shown worse"] >= 40


def test_a_tie_is_never_declared_on_noise(tmp_path: Path) -> None:
    """The fixed margin's failure, which the bootstrap was brought in for: a depth truly 0.03 worse whose 300 rows
    happen to put it within 0.01 of the best is tied by the means alone; the rule asks the rows to show it."""
    rng = np.random.default_rng(11)
    true = labels(rng, 300)
    deep = model(rng, true, 0.9)
    shallow = model(rng, true, 0.87)
    while not -0.01 < np.mean(shallow == true) - np.mean(deep == true) <= 0:  # within by luck
        shallow = model(rng, true, 0.87)
    sweep = [saved_candidate(tmp_path, 1, true, shallow, 1e8), saved_candidate(tmp_path, 4, true, deep, 4e8)]
    rule = SelectionRule(metric="accuracy", tolerance=0.01)
    sweep = [c.model_copy(update={"metrics": {"accuracy": float(np.mean(p == true))}})
             for c, p in zip(sweep, (shallow, deep), strict=True)]

    assert choose_depth(sweep, rule.model_copy(update={"confidence": None})).selected_depth == 1
    decision = choose_depth(sweep, rule)
    assert decision.selected_depth == 4
    assert "validation rows do not show it within" in decision.reason and decision.rows_to_resolve > 300
