"""The paired bootstrap on synthetic prediction sets whose truth is known."""

from __future__ import annotations

import numpy as np
import pytest

from depthfinder.evidence.bootstrap import Predictions, _weighted_metric, compare_to_best
from depthfinder.evidence.metrics import classification_metrics

CLASSES = 3
SHALLOW, DEEP = ("scratch", 1), ("scratch", 4)


def labels(rng: np.random.Generator, rows: int) -> np.ndarray:
    return rng.integers(0, CLASSES, rows)


def model(rng: np.random.Generator, true: np.ndarray, accuracy: float) -> np.ndarray:
    """Predictions right on each row with probability `accuracy`, independently, wrong ones to another class."""
    predicted = true.copy()
    wrong = rng.random(len(true)) >= accuracy
    predicted[wrong] = (true[wrong] + rng.integers(1, CLASSES, wrong.sum())) % CLASSES
    return predicted


def interval(true: np.ndarray, shallow: np.ndarray, deep: np.ndarray, metric: str = "accuracy",
             confidence: float = 0.9, resamples: int = 500):
    predictions = Predictions(true, {(*SHALLOW, 1): shallow, (*DEEP, 1): deep})
    return compare_to_best(predictions, {SHALLOW: [1], DEEP: [1]}, DEEP, metric, confidence, resamples)[SHALLOW]


def equal_models(seed: int, rows: int, trials: int = 150) -> list:
    """The interval of (shallow - deep) for `trials` pairs of equally good models on fresh rows."""
    rng = np.random.default_rng(seed)
    found = []
    for _ in range(trials):
        true = labels(rng, rows)
        found.append(interval(true, model(rng, true, 0.85), model(rng, true, 0.85)))
    return found


def test_the_interval_covers_the_true_difference_of_equal_models_at_the_stated_rate() -> None:
    covered = [found.low <= 0 <= found.high for found in equal_models(1, rows=400)]
    assert 0.82 <= np.mean(covered) <= 0.97  # 90 % intervals; 150 trials give about +-0.025


def test_equal_models_are_not_shown_worse_at_the_stated_rate() -> None:
    """What promotion relies on: an equal challenger is "not shown worse" (and promoted) at the stated rate."""
    not_worse = [found.high >= 0 for found in equal_models(2, rows=600)]  # at tolerance 0
    assert np.mean(not_worse) >= 0.88  # the upper end of a 90 % interval falls below the truth 5 % of the time


def test_a_depth_truly_worse_by_0_03_is_rejected_at_tolerance_0_01_and_an_equal_one_is_not() -> None:
    rng = np.random.default_rng(3)
    true = labels(rng, 4000)
    deep = model(rng, true, 0.90)
    worse = interval(true, model(rng, true, 0.87), deep, metric="macro_f1")
    equal = interval(true, model(rng, true, 0.90), deep, metric="macro_f1")
    assert worse.high < 0 and worse.low < -0.01  # shown worse, and not within tolerance
    assert equal.low <= 0 <= equal.high


def test_intervals_shrink_as_the_square_root_of_the_rows() -> None:
    rng = np.random.default_rng(4)
    widths = {}
    for rows in (500, 2000, 8000):
        true = labels(rng, rows)
        found = interval(true, model(rng, true, 0.85), model(rng, true, 0.85), metric="macro_f1")
        widths[rows] = found.high - found.low
    assert 0.35 < widths[2000] / widths[500] < 0.65
    assert 0.35 < widths[8000] / widths[2000] < 0.65


def test_seeds_that_disagree_widen_the_interval() -> None:
    rng = np.random.default_rng(5)
    true = labels(rng, 1000)
    deep = model(rng, true, 0.85)
    agreeing = {(*SHALLOW, s): model(rng, true, 0.85) for s in (1, 2, 3)}
    disagreeing = {(*SHALLOW, 1): model(rng, true, 0.75), (*SHALLOW, 2): model(rng, true, 0.85),
                   (*SHALLOW, 3): model(rng, true, 0.95)}
    widths = []
    for shallow in (agreeing, disagreeing):
        predictions = Predictions(true, {**shallow, (*DEEP, 1): deep})
        found = compare_to_best(predictions, {SHALLOW: [1, 2, 3], DEEP: [1]}, DEEP, "accuracy", 0.9, 1000)[SHALLOW]
        widths.append(found.high - found.low)
    assert widths[1] > 2 * widths[0]


@pytest.mark.parametrize("metric", ["accuracy", "balanced_accuracy", "macro_f1"])
def test_the_unweighted_metric_is_encoder_metrics(metric: str) -> None:
    rng = np.random.default_rng(6)
    true = labels(rng, 300)
    predicted = np.where(true == 2, 0, model(rng, true, 0.7))  # class 2 never predicted
    expected = classification_metrics(true.astype(str).tolist(), predicted.astype(str).tolist())[metric]
    assert _weighted_metric(true, predicted, np.ones((1, 300), dtype=np.float32), metric)[0] == pytest.approx(expected)
