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

Pure functions of typed candidates (encoder.selection.candidate), so a decision can be
replayed from a summary JSON: `choose_depth(summary.candidates, summary.rule.selection_rule())`.
With several seeds a depth appears once per seed; its score is the mean.
"""

from __future__ import annotations

import math
import statistics
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from encoder.selection.candidate import Candidate, CostName, Record

RuleName = Literal["tolerance", "ratio", "pareto"]
Metric = Literal["macro_f1", "balanced_accuracy", "accuracy"]
COST_NAMES: dict[str, str] = {
    "flops_per_example": "FLOPs per example",
    "latency_ms_p50": "p50 latency",
    "params": "parameters",
    "train_seconds": "train time",
}
# Metrics are floats computed from counts: keep Q* - tolerance from excluding a depth
# that sits exactly on the boundary because of rounding (0.95 - 0.01 = 0.9399999...).
_EPS = 1e-9


class SelectionRule(BaseModel):
    """How to choose among depths: the rule, its metric and cost, and the hard limits.

    One object, passed whole to the rule, to successive halving (which ranks by it) and to
    promotion (which compares champion and challenger by its metric, tolerance and cost).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    rule: RuleName = Field(
        "tolerance", description="tolerance: cheapest within tolerance of the best; ratio: max metric/cost^alpha; "
        "pareto: tolerance on the Pareto front."
    )
    metric: Metric = Field("macro_f1", description="Validation metric the rule chooses by.")
    tolerance: float = Field(0.01, ge=0, description="Quality a cheaper depth may give up against the best.")
    alpha: float = Field(0.1, gt=0, description="Exponent of the cost in the ratio rule.")
    cost: CostName = Field("flops_per_example", description="Cost the rule minimises among depths within tolerance.")
    max_latency_ms: float | None = Field(None, gt=0, description="Hard limit on p50 latency at batch 1.")
    max_params: int | None = Field(None, strict=True, gt=0, description="Hard limit on parameter count.")


class DepthScore(Record):
    """One depth's quality over its seeds (mean and standard error) and its mean cost."""

    depth: int = Field(description="Encoder blocks.")
    mean: float = Field(description="Mean validation metric over its seeds.")
    std_error: float = Field(description="Standard error of that mean (0 with one seed).")
    seeds: int = Field(description="Seeds trained.")
    cost: float = Field(description="Mean cost, by the rule's cost.")


class Decision(Record):
    """The summary's `rule` object: the settings it chose by, what it chose, and why in one sentence."""

    name: RuleName = Field(description="The rule: tolerance, ratio or pareto.")
    metric: Metric = Field(description="Validation metric it chose by.")
    tolerance: float = Field(description="Configured tolerance.")
    cost: CostName = Field(description="Cost it minimised.")
    reason: str = Field(description="The decision in one sentence, with its numbers.")
    selected_depth: int = Field(description="The chosen depth.")
    best_depth: int = Field(description="The depth with the best mean validation metric.")
    effective_tolerance: float = Field(
        description="Tolerance applied: the configured one, or the best depth's standard error over seeds if larger."
    )
    alpha: float = Field(description="Exponent of the cost in the ratio rule.")
    max_latency_ms: float | None = Field(None, description="Hard limit on p50 latency, if set.")
    max_params: int | None = Field(None, description="Hard limit on parameters, if set.")
    pareto_front: list[int] = Field(description="Depths no other depth beats on both quality and cost.")
    scores: list[DepthScore] = Field(description="Per eligible depth: mean metric, standard error, seeds, mean cost.")

    def selection_rule(self) -> SelectionRule:
        """The settings this decision was made with, to replay it: `choose_depth(candidates, d.selection_rule())`."""
        return SelectionRule(rule=self.name, metric=self.metric, tolerance=self.tolerance, alpha=self.alpha,
                             cost=self.cost, max_latency_ms=self.max_latency_ms, max_params=self.max_params)


def choose_depth(candidates: list[Candidate], rule: SelectionRule) -> Decision:
    """Choose a depth by `rule`.

    Args:
        candidates: the sweep's candidates; a depth trained with several seeds appears once per
            seed; only usable ones (trained, cached) are considered.
        rule: the rule and its settings.

    Returns:
        The Decision, with a reason that names the numbers.

    Raises:
        ValueError: on a candidate without the metric or cost, or when no candidate is eligible.
    """
    usable = [c for c in candidates if c.usable]
    unusable = [c for c in candidates if not c.usable]
    if not usable:
        raise ValueError(f"no candidate depth finished training ({_statuses(candidates) or 'no candidates'})")
    limits = _limits(rule)
    excluded: dict[int, list[str]] = {}
    for candidate in usable:
        if why := _violations(candidate, limits):
            excluded.setdefault(candidate.depth, why)
    eligible = [c for c in usable if c.depth not in excluded]
    if not eligible:
        raise ValueError(
            f"every trained depth exceeds the hard limits {_limits_text(limits)}: {_excluded_text(excluded)}"
        )
    scores = aggregate(eligible, rule.metric, rule.cost)
    best = max(sorted(scores), key=lambda d: scores[d].mean)  # ties: the shallower depth
    effective = max(rule.tolerance, scores[best].std_error) if scores[best].seeds > 1 else rule.tolerance
    front = pareto_front(list(scores.values()))
    if rule.rule == "ratio":
        selected = max(sorted(scores), key=lambda d: _ratio(scores[d], rule.alpha))
        reason = _ratio_reason(selected, best, scores, rule)
    else:
        pool = {d: scores[d] for d in (front if rule.rule == "pareto" else scores)}
        within = [d for d in pool if pool[d].mean >= scores[best].mean - effective - _EPS]
        selected = min(within, key=lambda d: (pool[d].cost, d))
        reason = _tolerance_reason(selected, best, scores, rule, effective)
    clauses = [reason]
    if rule.rule == "pareto":
        clauses.append(f"Pareto front: depths {', '.join(map(str, front))}")
    if excluded:
        clauses.append(f"excluded by hard limits: {_excluded_text(excluded)}")
    if unusable:
        clauses.append(f"not considered: {_statuses(unusable)}")
    return Decision(
        name=rule.rule, metric=rule.metric, tolerance=rule.tolerance, cost=rule.cost, reason="; ".join(clauses),
        selected_depth=selected, best_depth=best, effective_tolerance=effective, alpha=rule.alpha,
        max_latency_ms=rule.max_latency_ms, max_params=rule.max_params, pareto_front=front,
        scores=[scores[d] for d in sorted(scores)],
    )


def aggregate(candidates: list[Candidate], metric: str, cost: str) -> dict[int, DepthScore]:
    """Per depth: mean and standard error of the metric over seeds, and the mean cost."""
    by_depth: dict[int, list[Candidate]] = {}
    for candidate in candidates:
        by_depth.setdefault(candidate.depth, []).append(candidate)
    scores = {}
    for depth, runs in sorted(by_depth.items()):
        values = [_metric(c, metric) for c in runs]
        std_error = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0
        mean_cost = statistics.fmean(_cost(c, cost) for c in runs)
        scores[depth] = DepthScore(
            depth=depth, mean=statistics.fmean(values), std_error=std_error, seeds=len(values), cost=mean_cost
        )
    return scores


def pareto_front(scores: list[DepthScore]) -> list[int]:
    """Depths no other depth beats on both quality (higher) and cost (lower), by depth."""
    return sorted(
        s.depth for s in scores
        if not any(o.mean >= s.mean and o.cost <= s.cost and (o.mean, o.cost) != (s.mean, s.cost) for o in scores)
    )


def _ratio(score: DepthScore, alpha: float) -> float:
    return score.mean / max(score.cost, 1e-12) ** alpha


def _quality(score: DepthScore) -> str:
    spread = f" ± {score.std_error:.3f} over {score.seeds} seeds" if score.seeds > 1 else ""
    return f"{score.mean:.3f}{spread}"


def _tolerance_reason(
    selected: int, best: int, scores: dict[int, DepthScore], rule: SelectionRule, tolerance: float
) -> str:
    """One sentence with the numbers behind a tolerance choice."""
    chosen, top, metric = scores[selected], scores[best], rule.metric
    if selected != best:
        share = chosen.cost / top.cost if top.cost else math.nan
        return (
            f"depth {selected}: {metric} {_quality(chosen)} vs best {_quality(top)} at depth {best}, "
            f"within tolerance {tolerance:.3g}, at {share:.0%} of its {COST_NAMES[rule.cost]}"
        )
    cheaper = [d for d in scores if scores[d].cost < top.cost]
    if not cheaper:
        return f"depth {best} has the best {metric} {_quality(top)} and is also the cheapest by {COST_NAMES[rule.cost]}"
    closest = max(cheaper, key=lambda d: scores[d].mean)
    return (
        f"depth {best} has the best {metric} {_quality(top)} and no cheaper depth is within {tolerance:.3g} "
        f"(closest: depth {closest} at {scores[closest].mean:.3f})"
    )


def _ratio_reason(selected: int, best: int, scores: dict[int, DepthScore], rule: SelectionRule) -> str:
    """One sentence with the numbers behind a ratio choice."""
    chosen, top = scores[selected], scores[best]
    head = (f"depth {selected} maximises {rule.metric} / ({COST_NAMES[rule.cost]})^{rule.alpha:g}: "
            f"{_quality(chosen)} at {chosen.cost:.3g}")
    if selected == best:
        return head + ", also the best quality"
    return head + f" vs best {_quality(top)} at depth {best} for {top.cost / chosen.cost:.1f}x the cost"


def _limits(rule: SelectionRule) -> dict[str, tuple[str, float]]:
    """Cost key -> (limit name, limit value) for the limits that are set."""
    limits = {}
    if rule.max_latency_ms is not None:
        limits["latency_ms_p50"] = ("max_latency_ms", float(rule.max_latency_ms))
    if rule.max_params is not None:
        limits["params"] = ("max_params", float(rule.max_params))
    return limits


def _violations(candidate: Candidate, limits: dict[str, tuple[str, float]]) -> list[str]:
    """The hard limits this candidate exceeds, each as 'key value > limit_name limit'."""
    return [
        f"{key} {_cost(candidate, key):g} > {name} {limit:g}"
        for key, (name, limit) in limits.items()
        if _cost(candidate, key) > limit
    ]


def _metric(candidate: Candidate, name: str) -> float:
    return _finite(candidate, "metrics", name, candidate.metrics.get(name))


def _cost(candidate: Candidate, name: str) -> float:
    return _finite(candidate, "cost", name, candidate.cost.value(name) if candidate.cost else None)


def _finite(candidate: Candidate, section: str, key: str, value: object) -> float:
    """`value` as a finite number, or a ValueError naming the depth and key."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"depth {candidate.depth}: {section}.{key} must be a finite number, got {value!r}")
    return float(value)


def _limits_text(limits: dict[str, tuple[str, float]]) -> str:
    return ", ".join(f"{name}={limit:g}" for name, limit in limits.values())


def _excluded_text(excluded: dict[int, list[str]]) -> str:
    return ", ".join(f"depth {depth} ({' and '.join(why)})" for depth, why in sorted(excluded.items()))


def _statuses(candidates: list[Candidate]) -> str:
    return ", ".join(f"depth {c.depth} {c.status}" for c in candidates)
