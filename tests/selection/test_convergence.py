"""Telling a converged validation curve from a rising one, and keeping late bloomers through halving."""

from __future__ import annotations

import pytest

from depthfinder.selection.candidate import Candidate, recent_gain, still_rising
from depthfinder.selection.halving import late_bloomers


def test_a_curve_that_gained_more_than_the_tolerance_in_its_last_window_is_still_rising() -> None:
    rising = [0.30, 0.50, 0.60, 0.66, 0.71, 0.75]
    flat = [0.30, 0.70, 0.80, 0.804, 0.801, 0.806]  # +0.006 over its last 3 epochs
    assert recent_gain(rising, 3) == pytest.approx(0.75 - 0.60)  # best of the last 3 vs best before
    assert still_rising(rising, window=3, gain=0.01)
    assert not still_rising(flat, window=3, gain=0.01)
    assert still_rising(flat, window=3, gain=0.005)
    assert not still_rising([0.9, 0.95, 0.93, 0.92], window=2, gain=0.0)  # early stopping's case: it fell
    assert still_rising([0.5], window=3, gain=0.01)  # one epoch tells nothing
    assert recent_gain([0.5, 0.6], window=5) == pytest.approx(0.1)  # the window shrinks to the curve


def curve(depth: int, history: list[float], gain: float = 0.01) -> Candidate:
    return Candidate(depth=depth, status="trained", metrics={"macro_f1": max(history)}, history=history,
                     not_converged=still_rising(history, 2, gain))


def test_halving_keeps_a_deep_depth_rising_fast_enough_to_catch_up_and_only_that() -> None:
    rung = [
        curve(1, [0.50, 0.70, 0.78, 0.80]),
        curve(2, [0.40, 0.62, 0.76, 0.79]),
        curve(4, [0.20, 0.30, 0.50, 0.72]),  # +0.42 in two epochs: 1.14 projected, past depth 1's 0.90
        curve(6, [0.20, 0.25, 0.30, 0.34]),  # rising, but +0.09 leaves it far behind
        curve(8, [0.55, 0.60, 0.60, 0.60]),  # flat: converged below the cut
    ]
    assert [c.not_converged for c in rung] == [True, True, True, True, False]
    assert late_bloomers(rung, kept=[1, 2], window=2, margin=0.01) == [4]
    slower = rung[:2] + [curve(4, [0.20, 0.30, 0.50, 0.60])]  # +0.30: 0.90 projected, as depth 1's 0.80 + 0.10
    assert late_bloomers(slower, kept=[1, 2], window=2, margin=0.01) == [4]
    slowest = rung[:2] + [curve(4, [0.20, 0.30, 0.45, 0.58])]  # +0.28: 0.86, short of 0.90 - 0.01
    assert late_bloomers(slowest, kept=[1, 2], window=2, margin=0.01) == []
    assert late_bloomers(rung, kept=[1, 2], window=3, margin=0.01) == []  # 4 epochs are not two windows of 3
    flattened = [c.model_copy(update={"not_converged": False}) for c in rung]
    assert late_bloomers(flattened, kept=[1, 2], window=2, margin=0.01) == []


def test_a_late_bloomer_exactly_the_tolerance_short_is_kept_as_the_rule_counts_its_boundary() -> None:
    """Halving judges "within the tolerance" by the rule's own predicate (evidence.margin.within), epsilon
    included: 0.7 projected against a kept 0.8 at tolerance 0.1 is on the boundary, which `0.7 >= 0.8 - 0.1`
    (0.7000000000000001 in floats, the test halving wrote before) missed."""
    kept = curve(1, [0.8, 0.8, 0.8, 0.8])
    bloomer = Candidate(depth=4, status="trained", metrics={"macro_f1": 0.41}, history=[0.1, 0.12, 0.15, 0.41],
                        not_converged=True)  # 0.41 + (0.41 - 0.12) = 0.7 projected

    assert not 0.41 + (0.41 - 0.12) >= 0.8 - 0.1
    assert late_bloomers([kept, bloomer], kept=[1], window=2, margin=0.1) == [4]
    assert late_bloomers([kept, bloomer], kept=[1], window=2, margin=0.09) == []
