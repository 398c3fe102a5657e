"""Successive halving over candidate depths: train every depth briefly, keep the better half, go on.

Rung r trains the surviving depths to `first_epochs * 2**r` epochs in all, ranks them and
keeps the better half (never fewer than two); when two depths are left, or the next budget
would reach the recipe's `max_epochs`, the survivors train to the end (early stopping as
usual) and the rule chooses among them. A candidate continues from its own checkpoint, so
a survivor ends exactly where the full grid's run of it ends (`encoder.training`).

The rank is the rule's own (`encoder.selection.rule.choose_depth` applied again and again to the
rest): with the `tolerance` rule, depths within tolerance of the best count as tied and
the cheaper comes first. Halving therefore keeps the cheap depth the final rule would pick
over a slightly better deep one, instead of dropping it for being a little behind early.
Stopping at two keeps the last comparison one between finished models.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from encoder.selection.rule import USABLE_STATUSES, choose_depth


def rung_budgets(n_depths: int, first_epochs: int, max_epochs: int) -> list[int]:
    """Epochs in all at each rung before the final one; empty when there is nothing to halve."""
    budgets: list[int] = []
    budget = first_epochs
    while n_depths > 2 and budget < max_epochs:
        budgets.append(budget)
        n_depths = kept_count(n_depths)
        budget *= 2
    return budgets


def kept_count(n_depths: int) -> int:
    """Depths a rung keeps: the better half, rounded up, and at least two."""
    return max(2, math.ceil(n_depths / 2))


def rank_depths(candidates: list[dict[str, Any]], **rule: Any) -> list[int]:
    """Depths best first by the rule: its choice, then its choice among the rest, and so on.

    Args:
        candidates: run-summary candidates at the same budget; unusable ones are ignored.
        rule: keyword arguments of `encoder.selection.rule.choose_depth` (metric, tolerance, cost, ...).

    Returns:
        Every usable depth once; those beyond the hard limits last, better metric first.
    """
    remaining = [c for c in candidates if c.get("status") in USABLE_STATUSES]
    order: list[int] = []
    while remaining:
        try:
            chosen = choose_depth(remaining, **rule).selected_depth
        except ValueError:  # the rest exceed the hard limits
            break
        order.append(chosen)
        remaining = [c for c in remaining if int(c["depth"]) != chosen]
    beyond_limits = {int(c["depth"]) for c in remaining}
    mean_metric = {d: statistics.fmean(c["metrics"][rule["metric"]] for c in remaining if c["depth"] == d)
                   for d in beyond_limits}
    return order + sorted(beyond_limits, key=lambda d: (-mean_metric[d], d))


def compute_saved(candidates: list[dict[str, Any]]) -> dict[str, float] | None:
    """Training time spent against an estimate of the full grid's, or None without a finished candidate.

    A pruned candidate's full-grid time is its seconds per epoch so far times the mean
    epochs of the candidates that trained to the end (what early stopping let them run).
    """
    finished = [c for c in candidates if c.get("status") in USABLE_STATUSES]
    pruned = [c for c in candidates if c.get("status") == "pruned"]
    if not finished:
        return None
    full_epochs = statistics.fmean(c["epochs"] for c in finished)
    spent_finished = sum(c["cost"]["train_seconds"] for c in finished)
    spent_pruned = sum(c["cost"]["train_seconds"] for c in pruned)
    full_pruned = sum(c["cost"]["train_seconds"] / c["epochs"] * max(full_epochs, c["epochs"]) for c in pruned)
    spent, full = spent_finished + spent_pruned, spent_finished + full_pruned
    return {"train_seconds": spent, "full_grid_train_seconds": full, "saved_fraction": 1 - spent / full}
