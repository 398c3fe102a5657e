"""The disagreement bound on constructed predictions whose truth is known (evidence.disagreement)."""

from __future__ import annotations

import numpy as np
import pytest

from depthfinder.evidence.bootstrap import metric_of
from depthfinder.evidence.disagreement import UNLABELLED, pool_bound

METRICS = ("accuracy", "balanced_accuracy", "macro_f1")
SHARES = np.array([0.6, 0.3, 0.1])


def population(rows: int, flip: float, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Three imbalanced classes, a best model right on about 90 % of the rows, and a cheaper one that differs from
    it on about `flip` of them, at random (right or wrong there as chance has it)."""
    rng = np.random.default_rng(seed)
    true = rng.choice(3, size=rows, p=SHARES)
    best = np.where(rng.random(rows) < 0.9, true, rng.integers(0, 3, rows))
    cheaper = np.where(rng.random(rows) < flip, (best + rng.integers(1, 3, rows)) % 3, best)
    return true, best, cheaper


@pytest.mark.parametrize("metric", METRICS)
def test_the_bound_covers_the_true_difference_at_its_confidence(metric: str) -> None:
    """On pools drawn from a population whose difference is known, the bound is below it at most as often as its
    one-sided tail (5 % at 90 % confidence) allows."""
    true, best, cheaper = population(400_000, flip=0.05, seed=1)
    truth = metric_of(true, best, metric) - metric_of(true, cheaper, metric)
    rng = np.random.default_rng(2)
    below = 0
    for _ in range(60):
        rows = rng.choice(len(true), 2000, replace=False)
        bound = pool_bound([best[rows]], [cheaper[rows]], metric, SHARES, 0.9, resamples=300)
        below += bound.worse_by_at_most < truth
    assert truth > 0.01  # the cheaper model is truly worse: the bound has something to cover
    assert below <= 6  # 5 % of 60 is 3; a binomial's 99th percentile is 7 and the bound is conservative


def test_two_models_that_agree_everywhere_are_bounded_at_zero() -> None:
    _, best, _ = population(3000, flip=0.0, seed=3)

    bound = pool_bound([best], [best.copy()], "macro_f1", SHARES, 0.9)

    assert bound.disagreement == 0 and bound.worse_by_at_most == 0 and bound.better_by_at_most == 0


@pytest.mark.parametrize("metric", METRICS)
def test_labels_on_the_disagreements_only_tighten_the_bound(metric: str) -> None:
    true, best, cheaper = population(3000, flip=0.04, seed=4)
    unlabelled = pool_bound([best], [cheaper], metric, SHARES, 0.9)
    differ = np.flatnonzero(best != cheaper)
    half = np.full(len(true), UNLABELLED)
    half[differ[: len(differ) // 2]] = true[differ[: len(differ) // 2]]

    partly = pool_bound([best], [cheaper], metric, SHARES, 0.9, true=half)
    fully = pool_bound([best], [cheaper], metric, SHARES, 0.9, true=true)

    assert fully.worse_by_at_most < partly.worse_by_at_most < unlabelled.worse_by_at_most
    assert (unlabelled.labelled, partly.labelled, fully.labelled) == (0, len(differ) // 2, len(differ))
    assert partly.unlabelled_disagreements == len(differ) - len(differ) // 2


def test_with_every_disagreement_labelled_the_accuracy_bound_is_the_difference_s() -> None:
    """Labels on the rows where the two disagree decide the accuracy difference on the whole pool: the rows where
    they agree add nothing to it."""
    true, best, cheaper = population(5000, flip=0.05, seed=5)
    labels = np.where(best != cheaper, true, UNLABELLED)

    bound = pool_bound([best], [cheaper], "accuracy", SHARES, 0.9, true=labels)

    difference = metric_of(true, best, "accuracy") - metric_of(true, cheaper, "accuracy")
    assert difference < bound.worse_by_at_most < difference + 0.01


def test_the_bound_averages_over_every_pair_of_seeds() -> None:
    true, best, cheaper = population(3000, flip=0.04, seed=6)
    _, _, other = population(3000, flip=0.08, seed=6)

    both = pool_bound([best], [cheaper, other], "accuracy", SHARES, 0.9)

    assert both.disagreement == pytest.approx(((best != cheaper).mean() + (best != other).mean()) / 2)
