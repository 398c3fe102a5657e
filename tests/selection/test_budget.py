"""The sweep's budget in training FLOPs: what candidates took (about three forwards per train row and epoch), when
it is spent, and the sentence that says what it left untried."""

from __future__ import annotations

from depthfinder.selection.budget import Spending, training_flops
from depthfinder.selection.candidate import Candidate, Cost


def trained(depth: int, flops: float, epochs: int, family: str = "small", status: str = "trained") -> Candidate:
    return Candidate(depth=depth, family=family, status=status, epochs=epochs, metrics={"macro_f1": 0.9},
                     cost=Cost(flops_per_example=flops))


def test_training_flops_are_three_forwards_per_train_row_and_epoch_of_every_costed_candidate() -> None:
    candidates = [trained(1, 1e6, 3), trained(2, 2e6, 2, status="pruned"),
                  Candidate(depth=3, family="small", status="screened", metrics={"macro_f1": 0.5})]  # no cost: a probe
    assert training_flops(candidates, train_rows=100) == 3 * 100 * (1e6 * 3 + 2e6 * 2)


def test_the_budget_is_spent_once_reached_and_says_what_it_left_untried() -> None:
    spending = Spending(flops=2e9, train_rows=100)
    assert not spending.spent([trained(1, 1e6, 3)])  # 9e8
    assert spending.spent([trained(1, 1e6, 3), trained(2, 2e6, 2)])  # 2.1e9
    spending.untried += [("wide", 6), ("wide", 12), ("wide", 6)]

    budget = spending.budget([trained(1, 1e6, 3), trained(2, 2e6, 2)], named=True)

    assert budget.untried == ["wide depth 6", "wide depth 12"]  # each once, in order
    assert budget.sentence == "the budget of 2e+09 training FLOPs (2.1e+09 spent) left untried: wide depth 6, wide " \
                              "depth 12"
    assert Spending(flops=None, train_rows=100).budget([], named=True) is None
    assert not Spending(flops=None, train_rows=100).spent([trained(1, 1e12, 100)])
