"""The tolerance rule: the cheapest depth whose validation quality is close enough to the best.

Among candidates that trained (or were reused from cache) and meet the hard limits, take
the best validation metric Q*; choose the cheapest depth whose metric is at least
Q* - tolerance (ties in cost go to the shallower depth). A pure function of the candidate
dicts of the run summary, so the decision can be replayed from a summary JSON.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

USABLE_STATUSES = ("trained", "cached")
COST_NAMES = {
    "flops_per_example": "FLOPs per example",
    "latency_ms_p50": "p50 latency",
    "params": "parameters",
}
# Metrics are floats computed from counts: keep Q* - tolerance from excluding a depth
# that sits exactly on the boundary because of rounding (0.95 - 0.01 = 0.9399999...).
_EPS = 1e-9


@dataclass(frozen=True)
class Decision:
    """Which depth the rule chose, the best depth by quality, and why, in one sentence."""

    selected_depth: int
    best_depth: int
    metric: str
    tolerance: float
    cost: str
    reason: str

    def to_dict(self, rule_name: str = "tolerance") -> dict[str, Any]:
        """The summary's "rule" object: name, metric, tolerance, cost, reason."""
        return {
            "name": rule_name,
            "metric": self.metric,
            "tolerance": self.tolerance,
            "cost": self.cost,
            "reason": self.reason,
        }


def choose_depth(
    candidates: list[dict[str, Any]],
    *,
    metric: str,
    tolerance: float,
    cost: str,
    max_latency_ms: float | None = None,
    max_params: int | None = None,
) -> Decision:
    """Choose a depth by the tolerance rule.

    Args:
        candidates: Run-summary candidates: {"depth", "status", "metrics" (validation), "cost"}.
        metric: Validation metric to compare, e.g. "macro_f1".
        tolerance: Quality a cheaper depth may give up against the best (>= 0).
        cost: Cost to minimise: "flops_per_example", "latency_ms_p50" or "params".
        max_latency_ms: Hard limit on cost["latency_ms_p50"], or None.
        max_params: Hard limit on cost["params"], or None.

    Returns:
        The Decision, with a reason that names the numbers.

    Raises:
        ValueError: on a bad argument or candidate, or when no candidate is eligible.
    """
    if cost not in COST_NAMES:
        raise ValueError(f"cost must be one of {sorted(COST_NAMES)}, got {cost!r}")
    if not tolerance >= 0:
        raise ValueError(f"tolerance must be a number >= 0, got {tolerance!r}")
    depths = [c.get("depth") for c in candidates]
    if len(set(depths)) != len(depths):
        raise ValueError(f"candidate depths must be distinct, got {depths}")
    usable = [c for c in candidates if c.get("status") in USABLE_STATUSES]
    unusable = [c for c in candidates if c.get("status") not in USABLE_STATUSES]
    if not usable:
        raise ValueError(f"no candidate depth finished training ({_statuses(candidates) or 'no candidates'})")
    limits = _limits(max_latency_ms, max_params)
    excluded = {int(c["depth"]): _violations(c, limits) for c in usable}
    excluded = {depth: why for depth, why in excluded.items() if why}
    eligible = [c for c in usable if int(c["depth"]) not in excluded]
    if not eligible:
        raise ValueError(
            f"every trained depth exceeds the hard limits {_limits_text(limits)}: {_excluded_text(excluded)}"
        )
    quality = {int(c["depth"]): _value(c, "metrics", metric) for c in eligible}
    costs = {int(c["depth"]): _value(c, "cost", cost) for c in eligible}
    best = max(sorted(quality), key=lambda d: quality[d])  # ties: the shallower (first) depth
    within = [d for d in quality if quality[d] >= quality[best] - tolerance - _EPS]
    selected = min(within, key=lambda d: (costs[d], d))
    reason = _reason(selected, best, quality, costs, metric=metric, tolerance=tolerance, cost=cost)
    clauses = [reason]
    if excluded:
        clauses.append(f"excluded by hard limits: {_excluded_text(excluded)}")
    if unusable:
        clauses.append(f"not considered: {_statuses(unusable)}")
    return Decision(selected, best, metric, tolerance, cost, "; ".join(clauses))


def _reason(
    selected: int,
    best: int,
    quality: dict[int, float],
    costs: dict[int, float],
    *,
    metric: str,
    tolerance: float,
    cost: str,
) -> str:
    """One sentence with the numbers behind the choice."""
    if selected != best:
        share = costs[selected] / costs[best] if costs[best] else math.nan
        return (
            f"depth {selected}: {metric} {quality[selected]:.3f} vs best {quality[best]:.3f} at depth {best}, "
            f"within tolerance {tolerance:g}, at {share:.0%} of its {COST_NAMES[cost]}"
        )
    cheaper = [d for d in quality if costs[d] < costs[best]]
    if not cheaper:
        return f"depth {best} has the best {metric} {quality[best]:.3f} and is also the cheapest by {COST_NAMES[cost]}"
    closest = max(cheaper, key=lambda d: quality[d])
    return (
        f"depth {best} has the best {metric} {quality[best]:.3f} and no cheaper depth is within {tolerance:g} "
        f"(closest: depth {closest} at {quality[closest]:.3f})"
    )


def _limits(max_latency_ms: float | None, max_params: int | None) -> dict[str, tuple[str, float]]:
    """Cost key -> (limit name, limit value) for the limits that are set."""
    limits = {}
    if max_latency_ms is not None:
        limits["latency_ms_p50"] = ("max_latency_ms", float(max_latency_ms))
    if max_params is not None:
        limits["params"] = ("max_params", float(max_params))
    return limits


def _violations(candidate: dict[str, Any], limits: dict[str, tuple[str, float]]) -> list[str]:
    """The hard limits this candidate exceeds, each as 'key value > limit_name limit'."""
    return [
        f"{key} {_value(candidate, 'cost', key):g} > {name} {limit:g}"
        for key, (name, limit) in limits.items()
        if _value(candidate, "cost", key) > limit
    ]


def _value(candidate: dict[str, Any], section: str, key: str) -> float:
    """A finite number from candidate[section][key], or a ValueError naming the depth and key."""
    value = (candidate.get(section) or {}).get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(
            f"depth {candidate.get('depth')}: {section}.{key} must be a finite number, got {value!r}"
        )
    return float(value)


def _limits_text(limits: dict[str, tuple[str, float]]) -> str:
    return ", ".join(f"{name}={limit:g}" for name, limit in limits.values())


def _excluded_text(excluded: dict[int, list[str]]) -> str:
    return ", ".join(f"depth {depth} ({' and '.join(why)})" for depth, why in sorted(excluded.items()))


def _statuses(candidates: list[dict[str, Any]]) -> str:
    return ", ".join(f"depth {c.get('depth')} {c.get('status')}" for c in candidates)
