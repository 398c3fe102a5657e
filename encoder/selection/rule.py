"""Choosing a depth by accuracy per cost: the tolerance, ratio and Pareto rules.

Among candidates that trained (or were reused from cache) and meet the hard limits:

- `tolerance` (default): take the best mean validation metric Q*; choose the cheapest
  depth whose mean is at least Q* - tolerance, where the tolerance is the larger of the
  configured value and the best depth's standard error when there are several seeds
  (ties in cost go to the shallower depth).
- `ratio`: maximise metric / cost**alpha — each doubling of cost must buy a factor
  2**alpha of quality.
- `pareto`: keep the Pareto front of (metric up, cost down) and apply `tolerance` on it;
  the front is reported with the decision.

Pure functions of the run summary's candidate dicts, so a decision can be replayed from
a summary JSON. With several seeds a depth appears once per seed; its score is the mean.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any

USABLE_STATUSES = ("trained", "cached")
RULES = ("tolerance", "ratio", "pareto")
COST_NAMES = {
    "flops_per_example": "FLOPs per example",
    "latency_ms_p50": "p50 latency",
    "params": "parameters",
    "train_seconds": "train time",
}
# Metrics are floats computed from counts: keep Q* - tolerance from excluding a depth
# that sits exactly on the boundary because of rounding (0.95 - 0.01 = 0.9399999...).
_EPS = 1e-9


@dataclass(frozen=True)
class DepthScore:
    """One depth's quality over its seeds (mean and standard error) and its mean cost."""

    depth: int
    mean: float
    std_error: float
    seeds: int
    cost: float


@dataclass(frozen=True)
class Decision:
    """Which depth the rule chose, the best depth by quality, and why, in one sentence."""

    selected_depth: int
    best_depth: int
    metric: str
    tolerance: float
    cost: str
    reason: str
    rule: str = "tolerance"
    effective_tolerance: float | None = None
    alpha: float | None = None
    pareto_front: list[int] = field(default_factory=list)
    scores: list[DepthScore] = field(default_factory=list)

    def to_dict(self, rule_name: str | None = None) -> dict[str, Any]:
        """The summary's "rule" object: name, metric, tolerance, cost, reason (+ rule-specific figures)."""
        out: dict[str, Any] = {
            "name": rule_name or self.rule,
            "metric": self.metric,
            "tolerance": self.tolerance,
            "cost": self.cost,
            "reason": self.reason,
        }
        if self.effective_tolerance is not None and self.effective_tolerance != self.tolerance:
            out["effective_tolerance"] = self.effective_tolerance
        if self.alpha is not None:
            out["alpha"] = self.alpha
        if self.rule == "pareto":
            out["pareto_front"] = self.pareto_front
        return out


def choose_depth(
    candidates: list[dict[str, Any]],
    *,
    metric: str,
    tolerance: float,
    cost: str,
    rule: str = "tolerance",
    alpha: float = 0.1,
    max_latency_ms: float | None = None,
    max_params: int | None = None,
) -> Decision:
    """Choose a depth by `rule`.

    Args:
        candidates: Run-summary candidates: {"depth", "status", "metrics" (validation), "cost"};
            a depth trained with several seeds appears once per seed.
        metric: Validation metric to compare, e.g. "macro_f1".
        tolerance: Quality a cheaper depth may give up against the best (>= 0).
        cost: Cost to minimise: one of COST_NAMES.
        rule: "tolerance", "ratio" or "pareto".
        alpha: Exponent of the cost in the ratio rule.
        max_latency_ms: Hard limit on cost["latency_ms_p50"], or None.
        max_params: Hard limit on cost["params"], or None.

    Returns:
        The Decision, with a reason that names the numbers.

    Raises:
        ValueError: on a bad argument or candidate, or when no candidate is eligible.
    """
    _check_arguments(rule, cost, tolerance, alpha)
    usable = [c for c in candidates if c.get("status") in USABLE_STATUSES]
    unusable = [c for c in candidates if c.get("status") not in USABLE_STATUSES]
    if not usable:
        raise ValueError(f"no candidate depth finished training ({_statuses(candidates) or 'no candidates'})")
    limits = _limits(max_latency_ms, max_params)
    excluded: dict[int, list[str]] = {}
    for candidate in usable:
        if why := _violations(candidate, limits):
            excluded.setdefault(int(candidate["depth"]), why)
    eligible = [c for c in usable if int(c["depth"]) not in excluded]
    if not eligible:
        raise ValueError(
            f"every trained depth exceeds the hard limits {_limits_text(limits)}: {_excluded_text(excluded)}"
        )
    scores = aggregate(eligible, metric, cost)
    best = max(sorted(scores), key=lambda d: scores[d].mean)  # ties: the shallower depth
    effective = max(tolerance, scores[best].std_error) if scores[best].seeds > 1 else tolerance
    front = pareto_front(list(scores.values()))
    if rule == "ratio":
        selected = max(sorted(scores), key=lambda d: _ratio(scores[d], alpha))
        reason = _ratio_reason(selected, best, scores, metric=metric, cost=cost, alpha=alpha)
    else:
        pool = {d: scores[d] for d in (front if rule == "pareto" else scores)}
        within = [d for d in pool if pool[d].mean >= scores[best].mean - effective - _EPS]
        selected = min(within, key=lambda d: (pool[d].cost, d))
        reason = _tolerance_reason(selected, best, scores, metric=metric, tolerance=effective, cost=cost)
    clauses = [reason]
    if rule == "pareto":
        clauses.append(f"Pareto front: depths {', '.join(map(str, front))}")
    if excluded:
        clauses.append(f"excluded by hard limits: {_excluded_text(excluded)}")
    if unusable:
        clauses.append(f"not considered: {_statuses(unusable)}")
    return Decision(
        selected, best, metric, tolerance, cost, "; ".join(clauses), rule=rule, effective_tolerance=effective,
        alpha=alpha if rule == "ratio" else None, pareto_front=front, scores=[scores[d] for d in sorted(scores)],
    )


def aggregate(candidates: list[dict[str, Any]], metric: str, cost: str) -> dict[int, DepthScore]:
    """Per depth: mean and standard error of the metric over seeds, and the mean cost."""
    by_depth: dict[int, list[dict[str, Any]]] = {}
    for candidate in candidates:
        by_depth.setdefault(int(candidate["depth"]), []).append(candidate)
    scores = {}
    for depth, runs in sorted(by_depth.items()):
        values = [_value(c, "metrics", metric) for c in runs]
        std_error = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0
        mean_cost = statistics.fmean(_value(c, "cost", cost) for c in runs)
        scores[depth] = DepthScore(depth, statistics.fmean(values), std_error, len(values), mean_cost)
    return scores


def pareto_front(scores: list[DepthScore]) -> list[int]:
    """Depths no other depth beats on both quality (higher) and cost (lower), by depth."""
    return sorted(
        s.depth for s in scores
        if not any(o.mean >= s.mean and o.cost <= s.cost and (o.mean, o.cost) != (s.mean, s.cost) for o in scores)
    )


def _check_arguments(rule: str, cost: str, tolerance: float, alpha: float) -> None:
    if rule not in RULES:
        raise ValueError(f"rule must be one of {list(RULES)}, got {rule!r}")
    if cost not in COST_NAMES:
        raise ValueError(f"cost must be one of {sorted(COST_NAMES)}, got {cost!r}")
    if not tolerance >= 0:
        raise ValueError(f"tolerance must be a number >= 0, got {tolerance!r}")
    if not alpha > 0:
        raise ValueError(f"alpha must be a number > 0, got {alpha!r}")


def _ratio(score: DepthScore, alpha: float) -> float:
    return score.mean / max(score.cost, 1e-12) ** alpha


def _quality(score: DepthScore) -> str:
    spread = f" ± {score.std_error:.3f} over {score.seeds} seeds" if score.seeds > 1 else ""
    return f"{score.mean:.3f}{spread}"


def _tolerance_reason(
    selected: int, best: int, scores: dict[int, DepthScore], *, metric: str, tolerance: float, cost: str
) -> str:
    """One sentence with the numbers behind a tolerance choice."""
    chosen, top = scores[selected], scores[best]
    if selected != best:
        share = chosen.cost / top.cost if top.cost else math.nan
        return (
            f"depth {selected}: {metric} {_quality(chosen)} vs best {_quality(top)} at depth {best}, "
            f"within tolerance {tolerance:.3g}, at {share:.0%} of its {COST_NAMES[cost]}"
        )
    cheaper = [d for d in scores if scores[d].cost < top.cost]
    if not cheaper:
        return f"depth {best} has the best {metric} {_quality(top)} and is also the cheapest by {COST_NAMES[cost]}"
    closest = max(cheaper, key=lambda d: scores[d].mean)
    return (
        f"depth {best} has the best {metric} {_quality(top)} and no cheaper depth is within {tolerance:.3g} "
        f"(closest: depth {closest} at {scores[closest].mean:.3f})"
    )


def _ratio_reason(selected: int, best: int, scores: dict[int, DepthScore], *, metric: str, cost: str,
                  alpha: float) -> str:
    """One sentence with the numbers behind a ratio choice."""
    chosen, top = scores[selected], scores[best]
    head = (f"depth {selected} maximises {metric} / ({COST_NAMES[cost]})^{alpha:g}: "
            f"{_quality(chosen)} at {chosen.cost:.3g}")
    if selected == best:
        return head + ", also the best quality"
    return head + f" vs best {_quality(top)} at depth {best} for {top.cost / chosen.cost:.1f}x the cost"


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
