from __future__ import annotations

import pytest

from depthfinder.selection.candidate import Candidate, Cost
from depthfinder.selection.halving import Rung, halving_summary, kept_count, rank_depths, rung_budgets
from depthfinder.selection.settings import SelectionRule
from tests.selection.test_rule import SWEEP, candidate

RULE = SelectionRule(metric="macro_f1", tolerance=0.01, cost="flops_per_example")


@pytest.mark.parametrize(
    ("n_depths", "first", "max_epochs", "budgets"),
    [
        (4, 4, 20, [4]),  # 4 -> 2 depths, then the two train to the end
        (6, 4, 20, [4, 8]),  # 6 -> 3 -> 2
        (8, 3, 20, [3, 6]),  # 8 -> 4 -> 2
        (8, 8, 20, [8, 16]),
        (8, 8, 12, [8]),  # the next budget would reach max_epochs
        (3, 4, 20, [4]),  # 3 -> 2
        (2, 4, 20, []),  # nothing to halve
        (4, 20, 20, []),  # the first budget is already the end
    ],
)
def test_rung_budgets_double_until_two_depths_are_left(n_depths, first, max_epochs, budgets) -> None:
    assert rung_budgets(n_depths, first, max_epochs) == budgets


def test_a_rung_keeps_the_better_half_and_never_fewer_than_two() -> None:
    assert [kept_count(n) for n in (2, 3, 4, 5, 6, 8)] == [2, 2, 2, 3, 3, 4]


def test_the_rank_is_the_rules_so_a_cheap_depth_within_tolerance_survives() -> None:
    # By metric alone depths 6 and 4 lead; by the rule depth 2 (within 0.01 of 6, cheapest) comes first.
    assert rank_depths(SWEEP, RULE) == [2, 4, 6, 1]
    assert rank_depths(SWEEP, RULE.model_copy(update={"tolerance": 0.0})) == [6, 4, 2, 1]


def test_depths_beyond_the_hard_limits_rank_last_and_unusable_ones_not_at_all() -> None:
    sweep = [*SWEEP, candidate(8, 0.99, 9e8, latency=9.0), candidate(3, 0.99, 3e8, status="failed")]
    assert rank_depths(sweep, RULE.model_copy(update={"max_latency_ms": 3.0})) == [2, 4, 1, 8, 6]


def test_the_halving_summary_extrapolates_pruned_candidates_to_the_finished_ones_epochs() -> None:
    def spent(depth: int, status: str, epochs: int, seconds: float) -> Candidate:
        return Candidate(depth=depth, status=status, epochs=epochs, cost=Cost(train_seconds=seconds))

    candidates = [spent(1, "trained", 12, 60.0), spent(2, "cached", 8, 80.0), spent(4, "pruned", 4, 40.0),
                  spent(6, "pruned", 4, 60.0), spent(8, "failed", 1, 5.0)]
    rungs = [Rung(epochs=4, depths=[1, 2, 4, 6, 8], kept=[1, 2])]
    halving = halving_summary(rungs, candidates)
    # Full grid: the finished two, and the pruned two at 10 epochs (the mean of 12 and 8).
    assert halving.rungs == rungs
    assert (halving.train_seconds, halving.full_grid_train_seconds) == pytest.approx((240.0, 390.0))
    assert halving.saved_fraction == pytest.approx(1 - 240 / 390)
    nothing_finished = halving_summary(rungs, [spent(4, "pruned", 4, 40.0)])
    assert (nothing_finished.train_seconds, nothing_finished.saved_fraction) == (None, None)
