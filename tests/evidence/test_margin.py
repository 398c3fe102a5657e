"""The one predicate "not worse than a reference by more than a margin", its promotion sibling, and the rows that
would resolve a margin."""

from __future__ import annotations

import math

from depthfinder.evidence.margin import rows_to_resolve, shown_worse, within


def test_within_needs_the_mean_and_when_there_is_evidence_its_lower_end() -> None:
    assert within(-0.009, 0.01) and not within(-0.011, 0.01)
    assert within(0.94 - 0.95, 0.01)  # -0.010000000000000009 in floats: on the boundary, within
    assert within(-0.005, 0.01, lower=-0.01) and not within(-0.005, 0.01, lower=-0.02)
    assert not within(-0.03, 0.01, lower=-0.001)  # a mean beyond the margin never passes, whatever the bound
    assert not within(math.nan, 0.01) and not within(0.0, 0.01, lower=math.nan)


def test_not_shown_worse_is_promotions_question_and_is_not_a_tie() -> None:
    # A reported sweep's depth 3: 0.032 below, interval -0.060 to -0.003: not shown worse by 0.01, nor within.
    assert not shown_worse(-0.003, 0.01)
    assert not within(-0.032, 0.01, lower=-0.060)
    assert shown_worse(-0.011, 0.01) and not shown_worse(-0.01, 0.01)


def test_the_rows_that_resolve_a_margin_grow_as_the_square_of_the_interval_over_the_margin() -> None:
    assert rows_to_resolve(300, 0.03, 0.01) == 2700  # 300 * 3^2
    assert rows_to_resolve(302, 0.027, 0.01) == 2300  # 2201.6, up to two figures
    assert rows_to_resolve(300, 0.01, 0.01) is None and rows_to_resolve(300, 0.005, 0.01) is None
    assert rows_to_resolve(300, 0.03, 0.0) is None  # a zero margin: no number of rows resolves it
    assert rows_to_resolve(40, 0.011, 0.01) == 49  # under 100: to the row
