"""Promotion's judgement: a challenger replaces the champion unless the test rows show it worse by more than the
promotion margin, a setting of its own."""

from __future__ import annotations

import numpy as np
import pytest

from depthfinder.expectations.changes.compare import ADDED, FOREIGN, HELD_OUT
from depthfinder.selection.promotion import should_promote
from depthfinder.selection.settings import SelectionRule


def labels_of(rng: np.random.Generator, truths: np.ndarray, accuracy: float) -> list[str]:
    """A model's labels for `truths` (two classes) that are right on about `accuracy` of the rows."""
    right = rng.random(len(truths)) < accuracy
    return np.where(right, truths, np.where(truths == "pos", "neg", "pos")).tolist()


def test_a_challenger_is_promoted_unless_the_rows_show_it_worse_by_more_than_the_tolerance() -> None:
    truths = ["pos", "neg"] * 500
    rule = SelectionRule(promotion_margin=0.01)

    first = should_promote(truths, truths, None, rule)
    equal = should_promote(truths, truths, truths, rule)
    worse = should_promote(truths, ["pos"] * 1000, truths, rule)
    means = should_promote(truths, ["pos"] * 1000, truths, SelectionRule(promotion_margin=0.01, confidence=None))

    assert (first.promoted, first.reason) == (True, "no champion yet")
    assert equal.promoted and equal.reason == ("challenger +0.000 [+0.000, +0.000] vs champion on 1,000 test rows "
                                               "(macro_f1, 90% interval): not shown worse; promoted")
    assert not worse.promoted and "shown worse by more than the tolerance 0.01; not promoted" in worse.reason
    assert worse.comparison.high < -0.01 and worse.rows == 1000
    assert not means.promoted and means.comparison is None and "worse by more than the tolerance" in means.reason


# 200 judgements of 2,000 rows, each a paired bootstrap of 2,000 resamples: about 30 s, so in `make test-slow` (in
# .ci/run); the judgement itself is held by the tests around it in `make test`.
@pytest.mark.slow
def test_a_challenger_as_good_as_the_champion_is_promoted_in_most_nights_and_one_worse_by_005_is_refused() -> None:
    """Two models of the same quality, each right on 90 % of 2,000 test rows (their errors independent): the
    challenger is refused only when its 90 % interval lies wholly below -0.01, which for equal models happens in
    at most 5 % of nights (one tail); expected: promoted in at least 93 % of 100 nights. A challenger right on
    85 % is worse by 0.05, about five standard errors of the paired difference (0.010): it is refused when the
    observed difference falls below about -0.027, expected in about 98 % of nights; asserted: at least 95 %."""
    rng = np.random.default_rng(7)
    rule = SelectionRule(promotion_margin=0.01, metric="accuracy")
    equal, worse = [], []
    for _ in range(100):
        truths = rng.choice(np.array(["pos", "neg"]), size=2000)
        champion = labels_of(rng, truths, 0.90)
        equal.append(should_promote(truths.tolist(), labels_of(rng, truths, 0.90), champion, rule).promoted)
        worse.append(should_promote(truths.tolist(), labels_of(rng, truths, 0.85), champion, rule).promoted)

    assert sum(equal) >= 93
    assert sum(worse) <= 5


def test_promotion_follows_the_promotion_margin_not_the_depth_tolerance() -> None:
    """A challenger right on 0.97 of the rows against a champion right on all of them (accuracy −0.03, by the
    means): a loose depth tolerance does not let it through a strict promotion margin, and a loose promotion
    margin does whatever the depth tolerance."""
    truths = ["pos", "neg"] * 50
    challenger = ["neg", "pos", "neg"] + truths[3:]  # three rows wrong

    def promoted(tolerance: float, margin: float) -> bool:
        rule = SelectionRule(metric="accuracy", tolerance=tolerance, promotion_margin=margin, confidence=None)
        judgement = should_promote(truths, challenger, truths, rule)
        assert judgement.margin == margin
        return judgement.promoted

    assert not promoted(tolerance=0.05, margin=0.01)
    assert promoted(tolerance=0.0, margin=0.05)


def test_promotion_is_judged_on_the_champions_own_test_rows_and_the_rows_added_are_reported_apart() -> None:
    """A forced night: 300 of the champion's own test rows, where the challenger is 0.05 worse, and 100 rows added
    since and flagged foreign, which the challenger learned beside and the champion gets all wrong. Pooled, the
    challenger would win by 0.2125; judged where the comparison is fair, it is shown worse and not promoted, and
    the foreign rows are scored apart."""
    truths = ["pos", "neg"] * 200
    champion = truths[:300] + [{"pos": "neg", "neg": "pos"}[t] for t in truths[300:]]
    challenger = [{"pos": "neg", "neg": "pos"}[t] if i < 15 else t for i, t in enumerate(truths)]
    standing = [HELD_OUT] * 300 + [FOREIGN] * 100
    rule = SelectionRule(metric="accuracy", promotion_margin=0.01)

    pooled = should_promote(truths, challenger, champion, rule)
    fair = should_promote(truths, challenger, champion, rule, standing)

    assert pooled.promoted and pooled.comparison.difference == pytest.approx(0.2125, abs=1e-6)
    assert not fair.promoted and fair.rows == 300 and fair.comparison.difference == pytest.approx(-0.05, abs=1e-6)
    assert fair.challenger_metrics["accuracy"] == pytest.approx(0.95, abs=1e-6)
    assert fair.champion_metrics["accuracy"] == 1.0
    (apart,) = fair.apart
    assert (apart.standing, apart.rows, apart.challenger, apart.champion) == (FOREIGN, 100, 1.0, 0.0)
    assert "on the champion's own 300 test rows" in fair.reason
    assert fair.reason.endswith("apart, deciding nothing: 100 test rows added since and flagged foreign "
                                "(challenger 1.000, champion 0.000)")


def test_without_any_of_the_champions_test_rows_every_row_is_judged_and_the_sentence_says_so() -> None:
    truths = ["pos", "neg"] * 50

    judgement = should_promote(truths, truths, truths, SelectionRule(), [ADDED] * 100)

    assert judgement.promoted and judgement.rows == 100 and judgement.apart == []
    assert "on 100 test rows (none of them the champion's own test rows)" in judgement.reason
