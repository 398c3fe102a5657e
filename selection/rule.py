"""Choosing a depth by accuracy per cost: the tolerance, ratio and Pareto rules.

Among candidates that trained (or were reused from cache) and meet the hard limits:

- `tolerance` (default): take the depth with the best mean validation metric; choose the
  cheapest depth that ties with it (evidence.margin.within): its mean is no more
  than the tolerance below the best's, however wide its interval, and the validation rows
  show it within the tolerance at the rule's `confidence`: the lower end of the paired
  bootstrap interval of (depth - best), from the candidates' saved validation predictions
  (evidence.bootstrap), is at least -tolerance (non-inferiority; bench/tolerance_risk.py
  measures it against the other policies). Too few rows to tell means the best depth ships, and the
  sentence says how many rows would settle the cheaper one. Without saved predictions (or
  with `confidence` null) the means alone: a mean at least best - tolerance. Ties in cost
  go to the shallower depth.
- `ratio`: maximise metric / cost**alpha — each doubling of cost must buy a factor
  2**alpha of quality.
- `pareto`: keep the Pareto front of (metric up, cost down) and apply `tolerance` on it;
  the front is reported with the decision.

Each depth's verdict against the best (`DepthScore.verdict`: best, within, unsettled, beyond, worse) is judged
once, here, where the decision is made; the sentence (selection.reasons), the plots, the terminal, the
Prefect artifact and the model card read it and never judge again.

Functions of typed candidates (selection.candidate) and the prediction files they
name, so a decision can be replayed from a summary JSON:
`choose_depth(summary.candidates, summary.rule.selection_rule())`.
With several seeds a depth appears once per seed; its score is the mean.
"""

from __future__ import annotations

import math
import statistics
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from encoder.config import FAMILY_DESCRIPTION, FamilyName
from evidence.bootstrap import RESAMPLES, Arm, Interval, compare_to_best
from evidence.margin import shown_worse, within
from runtime.records import Record
from selection.candidate import COST_NAMES, Candidate, CostName, arm_label
from selection.predictions import load_predictions
from selection.reasons import quality, ratio_reason, tolerance_reason

__all__ = ["COST_NAMES", "Decision", "DepthScore", "SelectionRule", "Verdict", "choose_depth", "judge", "ties"]

RuleName = Literal["tolerance", "ratio", "pareto"]
Metric = Literal["macro_f1", "balanced_accuracy", "accuracy"]
# What the rule's criterion says of a depth against the best (judge): the best itself; shown within the tolerance
# (it may ship in the best's place); its mean beyond the tolerance (it cannot ship, whatever its interval); its
# interval wholly below -tolerance (shown worse); or neither shown within nor beyond: the rows cannot tell.
# selection.reasons.VERDICT_WORDS says each in words.
Verdict = Literal["best", "within", "unsettled", "beyond", "worse"]


class SelectionRule(BaseModel):
    """How to choose among depths: the rule, its metric and cost, the hard limits, and the margins of the models made
    of the chosen depth.

    One object, passed whole to the rule, to successive halving and the search (which rank and compare by it), to
    the deployment gate (which ships a variant by its metric, confidence and `deployment_margin`) and to promotion
    (which compares champion and challenger by its metric, confidence and `promotion_margin`). Each decision has a
    margin of its own, so loosening one loosens no other; every one is judged by evidence.margin.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    rule: RuleName = Field(
        "tolerance", description="tolerance: cheapest within tolerance of the best; ratio: max metric/cost^alpha; "
        "pareto: tolerance on the Pareto front.",
        json_schema_extra={"flag": "--rule"},
    )
    metric: Metric = Field(
        "macro_f1", description="Validation metric the rule chooses by.",
        json_schema_extra={"flag": "--metric"},
    )
    tolerance: float = Field(
        0.01, ge=0, description="Quality a cheaper depth may give up against the best (the depth rule; the search's "
        "screen and confirmations judge by it too).",
        json_schema_extra={"flag": "--tolerance"},
    )
    confidence: float | None = Field(
        0.9, gt=0, lt=1,
        description="Confidence of the paired bootstrap interval of (depth - best) on the validation rows; a cheaper "
        "depth ties with the best when its mean and the interval's lower end are both at least -tolerance (the rows "
        "show it within). null = compare the means only.",
        json_schema_extra={"flag": "--confidence"},
    )
    promotion_margin: float = Field(
        0.01, ge=0, description="How much worse than the champion a challenger may be and still replace it: it is "
        "refused only when the test rows show it worse by more than this (the upper end of its paired interval below "
        "-promotion_margin; with confidence null, its mean)."
    )
    deployment_margin: float = Field(
        0.01, ge=0, description="Quality an ONNX or int8 ONNX variant may lose against the torch model and still ship "
        "with the version: its test mean, and the lower end of its paired interval, at least -deployment_margin."
    )
    alpha: float = Field(0.1, gt=0, description="Exponent of the cost in the ratio rule.")
    cost: CostName = Field(
        "flops_per_example", description="Cost the rule minimises among depths within tolerance.",
        json_schema_extra={"flag": "--cost"},
    )
    max_latency_ms: float | None = Field(
        None, gt=0, description="Hard limit on p50 latency at batch 1.",
        json_schema_extra={"flag": "--max-latency-ms"},
    )
    max_params: int | None = Field(
        None, strict=True, gt=0, description="Hard limit on parameter count.",
        json_schema_extra={"flag": "--max-params"},
    )


class DepthScore(Record):
    """One depth's quality over its seeds (mean and standard error) and its mean cost."""

    depth: int = Field(description="Encoder blocks.")
    family: FamilyName = Field("scratch", description=FAMILY_DESCRIPTION)
    mean: float = Field(description="Mean validation metric over its seeds.")
    std_error: float = Field(description="Standard error of that mean (0 with one seed).")
    seeds: int = Field(description="Seeds trained.")
    cost: float = Field(description="Mean cost, by the rule's cost.")
    vs_best: Interval | None = Field(
        None, description="Its metric minus the best depth's, with the paired bootstrap interval; none without "
        "saved predictions."
    )
    not_converged: bool = Field(False, description="A seed of it was still improving when its budget ended.")
    verdict: Verdict | None = Field(
        None, description="The rule's criterion on it against the best, judged once where the decision is made: best, "
        "within (shown within the tolerance: it may ship), unsettled (mean within, not shown within: the rows cannot "
        "tell), beyond (mean more than the tolerance below the best's) or worse (its interval wholly below "
        "-tolerance: shown worse). Summaries written before it are judged when read."
    )

    @property
    def may_ship(self) -> bool:
        """Whether the rule lets it ship in the best's place."""
        return self.verdict in ("best", "within")


class Decision(Record):
    """The summary's `rule` object: the settings it chose by, what it chose, and why in one sentence."""

    name: RuleName = Field(description="The rule: tolerance, ratio or pareto.")
    metric: Metric = Field(description="Validation metric it chose by.")
    tolerance: float = Field(description="Configured tolerance.")
    cost: CostName = Field(description="Cost it minimised.")
    reason: str = Field(description="The decision in one sentence, with its numbers.")
    selected_depth: int = Field(description="The chosen depth.")
    selected_family: FamilyName = Field(
        "scratch", description="The chosen depth's family: scratch, or the chosen checkpoint's name."
    )
    best_depth: int = Field(description="The depth with the best mean validation metric.")
    best_family: FamilyName = Field("scratch", description="Its family.")
    effective_tolerance: float = Field(
        description="Tolerance applied: the configured one, always (summaries of earlier versions, comparing means "
        "over seeds, widened it to the best depth's standard error)."
    )
    confidence: float | None = Field(None, description="Configured confidence of the intervals (null: means only).")
    evidence: str = Field(
        "", description="How depths were compared: the paired bootstrap and its size, or why means only."
    )
    validation_rows: int | None = Field(
        None, description="Validation rows the paired bootstrap compared the depths on; none by means only."
    )
    rows_to_resolve: int | None = Field(
        None, description="About how many validation rows would make the interval of the cheaper depth the rows could "
        "not settle (not shown within the tolerance, not shown beyond it) as narrow as the tolerance (widths shrink "
        "as 1/sqrt(rows)); none when nothing was unsettled."
    )
    alpha: float = Field(description="Exponent of the cost in the ratio rule.")
    max_latency_ms: float | None = Field(None, description="Hard limit on p50 latency, if set.")
    max_params: int | None = Field(None, description="Hard limit on parameters, if set.")
    pareto_front: list[int] = Field(description="Depths no other depth beats on both quality and cost.")
    pareto_families: list[FamilyName] = Field([], description="The family of each depth of the Pareto front.")
    scores: list[DepthScore] = Field(
        description="Per eligible depth: mean metric, standard error, seeds, mean cost and the rule's verdict."
    )

    @model_validator(mode="before")
    @classmethod
    def _judged(cls, values: object) -> object:
        """A decision written before each depth carried its verdict (a replayed summary) is judged on read, by the
        tolerance it applied."""
        if not isinstance(values, dict) or not values.get("scores"):
            return values
        scores = [DepthScore.model_validate(score) for score in values["scores"]]
        if all(score.verdict is not None for score in scores):
            return values
        arm = (values.get("best_family", "scratch"), values.get("best_depth"))
        best = next((score for score in scores if (score.family, score.depth) == arm), None)
        if best is None:
            return values  # validation names what is wrong
        tolerance = values.get("effective_tolerance", values.get("tolerance", 0.0))
        judged = [score if score.verdict is not None else
                  score.model_copy(update={"verdict": judge(score, best, tolerance)}) for score in scores]
        return {**values, "scores": judged}

    @property
    def selected_label(self) -> str:
        """`depth 2`, or `pretrained depth 2`."""
        return arm_label(self.selected_family, self.selected_depth)

    @property
    def best_label(self) -> str:
        return arm_label(self.best_family, self.best_depth)

    def selection_rule(self) -> SelectionRule:
        """The settings this decision was made with, to replay it: `choose_depth(candidates, d.selection_rule())`."""
        return SelectionRule(rule=self.name, metric=self.metric, tolerance=self.tolerance, alpha=self.alpha,
                             cost=self.cost, max_latency_ms=self.max_latency_ms, max_params=self.max_params,
                             confidence=self.confidence)


def score_of(decision: Decision, family: str, depth: int) -> DepthScore:
    """The decision's score of (family, depth)."""
    return next(s for s in decision.scores if (s.family, s.depth) == (family, depth))


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
    families = {c.family for c in candidates}
    named = families != {"scratch"}  # a sweep of the scratch family alone says "depth 2", others name the family
    label = lambda arm: arm_label(*arm, named=named)  # noqa: E731
    eligible, unusable, excluded = _eligible(candidates, rule, label)
    scores = aggregate(eligible, rule.metric, rule.cost)
    arms = sorted(scores, key=_order)
    best = max(arms, key=lambda a: scores[a].mean)  # ties: the shallower depth
    scores, evidence, rows = _with_intervals(scores, eligible, best, rule)
    scores = {arm: score.model_copy(update={"verdict": judge(score, scores[best], rule.tolerance)})
              for arm, score in scores.items()}
    front = pareto_front(list(scores.values()))
    to_resolve = None
    if rule.rule == "ratio":
        selected = max(arms, key=lambda a: _ratio(scores[a], rule.alpha))
        reason = ratio_reason(selected, best, scores, rule, label)
    else:
        pool = {a: scores[a] for a in (front if rule.rule == "pareto" else arms)}
        tied = [a for a in pool if scores[a].may_ship]
        selected = min(tied, key=lambda a: (pool[a].cost, _order(a)))
        reason, to_resolve = tolerance_reason(selected, best, scores, rule, label, rows)
    clauses = [reason + _other_families(selected, best, scores, rule.metric)]
    if unfinished := _not_converged(selected, best, scores, label):
        clauses.append(unfinished)
    if rule.cost == "params" and (embeddings := _embedding_share(selected, eligible, label)):
        clauses.append(embeddings)
    if rule.rule == "pareto":
        clauses.append(f"Pareto front: {_arms_text(front, label)}")
    if excluded:
        clauses.append(f"excluded by hard limits: {_excluded_text(excluded, label)}")
    if unusable:
        clauses.append(f"not considered: {_statuses(unusable, label)}")
    return Decision(
        name=rule.rule, metric=rule.metric, tolerance=rule.tolerance, cost=rule.cost, reason="; ".join(clauses),
        selected_depth=selected[1], selected_family=selected[0], best_depth=best[1], best_family=best[0],
        effective_tolerance=rule.tolerance, confidence=rule.confidence, evidence=evidence, validation_rows=rows,
        rows_to_resolve=to_resolve, alpha=rule.alpha,
        max_latency_ms=rule.max_latency_ms, max_params=rule.max_params, pareto_front=[a[1] for a in front],
        pareto_families=[a[0] for a in front], scores=[scores[a] for a in arms],
    )


def _eligible(
    candidates: list[Candidate], rule: SelectionRule, label
) -> tuple[list[Candidate], list[Candidate], dict[Arm, list[str]]]:
    """The candidates the rule chooses among, those it does not consider (screened ones are never candidates), and
    the depths the hard limits exclude, with why; ValueError when no candidate is left."""
    usable = [c for c in candidates if c.usable]
    unusable = [c for c in candidates if not c.usable and c.status != "screened"]
    if not usable:
        raise ValueError(f"no candidate depth finished training ({_statuses(candidates, label) or 'no candidates'})")
    limits = _limits(rule)
    excluded: dict[Arm, list[str]] = {}
    for candidate in usable:
        if why := _violations(candidate, limits):
            excluded.setdefault(_arm(candidate), why)
    eligible = [c for c in usable if _arm(c) not in excluded]
    if not eligible:
        raise ValueError(
            f"every trained depth exceeds the hard limits {_limits_text(limits)}: {_excluded_text(excluded, label)}"
        )
    return eligible, unusable, excluded


def _with_intervals(
    scores: dict[Arm, DepthScore], eligible: list[Candidate], best: Arm, rule: SelectionRule
) -> tuple[dict[Arm, DepthScore], str, int | None]:
    """The scores with each depth's paired interval against the best, how depths were compared, and on how many
    validation rows (None by means only)."""
    if rule.confidence is None:
        return scores, "means only (confidence: null)", None
    predictions = load_predictions(eligible)
    if isinstance(predictions, str):
        return scores, f"means only: {predictions}", None
    seeds = {arm: [c.seed for c in eligible if _arm(c) == arm] for arm in scores}
    intervals = compare_to_best(predictions, seeds, best, rule.metric, rule.confidence)
    and_seeds = " and of seeds" if any(len(s) > 1 for s in seeds.values()) else ""
    evidence = (f"paired bootstrap: {RESAMPLES} resamples of {predictions.rows:,} validation rows{and_seeds}, "
                f"{rule.confidence:.0%} intervals")
    with_intervals = {arm: score.model_copy(update={"vs_best": intervals[arm]}) for arm, score in scores.items()}
    return with_intervals, evidence, predictions.rows


def ties(score: DepthScore, best: DepthScore, tolerance: float) -> bool:
    """Whether a depth may ship in the best's place (evidence.margin.within): its mean no more than the
    tolerance below the best's, and, with the paired bootstrap, the lower end of its interval too."""
    lower = score.vs_best.low if score.vs_best is not None else None
    return within(score.mean - best.mean, tolerance, lower)


def judge(score: DepthScore, best: DepthScore, tolerance: float) -> Verdict:
    """The rule's verdict on a depth against the best, by evidence.margin's predicates: within when it
    ties (it may ship); worse when its interval's upper end is below −tolerance; beyond when its mean is more than
    the tolerance below the best's (it cannot ship, though the rows do not show it worse); unsettled otherwise."""
    if (score.family, score.depth) == (best.family, best.depth):
        return "best"
    if ties(score, best, tolerance):
        return "within"
    if score.vs_best is not None and shown_worse(score.vs_best.high, tolerance):
        return "worse"
    return "unsettled" if within(score.mean - best.mean, tolerance) else "beyond"


def _not_converged(selected: Arm, best: Arm, scores: dict[Arm, DepthScore], label) -> str:
    """`not converged: depth 6 (best) was still improving when its budget ended`, or ""."""
    roles = {arm: role for arm, role in ((best, "best"), (selected, "chosen")) if scores[arm].not_converged}
    if selected == best and roles:
        roles = {best: "best and chosen"}
    if not roles:
        return ""
    named = " and ".join(f"{label(arm)} ({role})" for arm, role in sorted(roles.items(), key=lambda i: _order(i[0])))
    verb = "were" if len(roles) > 1 else "was"
    return f"not converged: {named} {verb} still improving when {'their' if len(roles) > 1 else 'its'} budget ended"




def _embedding_share(selected: Arm, eligible: list[Candidate], label) -> str:
    """When size is the cost and embeddings are much of the chosen depth's parameters (DeBERTa-v3's vocabulary:
    about half), that fewer layers save less size than the depth suggests; else ""."""
    costs = [c.cost for c in eligible if _arm(c) == selected and c.cost and c.cost.params
             and c.cost.params_without_embeddings is not None]
    if not costs:
        return ""
    share = 1 - costs[0].params_without_embeddings / costs[0].params
    if share < EMBEDDING_SHARE:
        return ""
    return (f"embeddings are {share:.0%} of {label(selected)}'s parameters, and every depth keeps them: fewer "
            "layers save less size than the depth suggests")


# A share of parameters in the embeddings above which the decision says that depth buys less size than it seems.
EMBEDDING_SHARE = 0.25


def _arm(candidate: Candidate) -> Arm:
    return candidate.family, candidate.depth


def _order(arm: Arm) -> tuple[int, int]:
    """Shallower first, then scratch before pretrained: how ties are broken."""
    return arm[1], arm[0] != "scratch"


def _arms_text(arms: list[Arm], label) -> str:
    if len({family for family, _ in arms}) > 1 or any(family != "scratch" for family, _ in arms):
        return ", ".join(label(arm) for arm in arms)
    return "depths " + ", ".join(str(depth) for _, depth in arms)


def _other_families(selected: Arm, best: Arm, scores: dict[Arm, DepthScore], metric: str) -> str:
    """`; scratch best 0.820 at depth 4`: the best of each family the choice is not from (but the best's, whose
    best the sentence already names)."""
    others = []
    for family in sorted({family for family, _ in scores} - {selected[0], best[0]}):
        best = max((a for a in scores if a[0] == family), key=lambda a: scores[a].mean)
        others.append(f"{family} best {metric} {quality(scores[best])} at depth {best[1]}")
    return "".join(f"; {text}" for text in others)


def aggregate(candidates: list[Candidate], metric: str, cost: str) -> dict[Arm, DepthScore]:
    """Per (family, depth): mean and standard error of the metric over seeds, and the mean cost."""
    by_arm: dict[Arm, list[Candidate]] = {}
    for candidate in candidates:
        by_arm.setdefault(_arm(candidate), []).append(candidate)
    scores = {}
    for (family, depth), runs in sorted(by_arm.items(), key=lambda item: _order(item[0])):
        values = [_metric(c, metric) for c in runs]
        std_error = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0
        mean_cost = statistics.fmean(_cost(c, cost) for c in runs)
        scores[family, depth] = DepthScore(
            depth=depth, family=family, mean=statistics.fmean(values), std_error=std_error, seeds=len(values),
            cost=mean_cost, not_converged=any(c.not_converged for c in runs),
        )
    return scores


def pareto_front(scores: list[DepthScore]) -> list[Arm]:
    """(family, depth) of every depth no other beats on both quality (higher) and cost (lower), shallower first."""
    return sorted(
        ((s.family, s.depth) for s in scores
         if not any(o.mean >= s.mean and o.cost <= s.cost and (o.mean, o.cost) != (s.mean, s.cost) for o in scores)),
        key=_order,
    )


def _ratio(score: DepthScore, alpha: float) -> float:
    return score.mean / max(score.cost, 1e-12) ** alpha


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


def _excluded_text(excluded: dict[Arm, list[str]], label) -> str:
    return ", ".join(f"{label(arm)} ({' and '.join(why)})" for arm, why in sorted(excluded.items(),
                                                                                   key=lambda item: _order(item[0])))


def _statuses(candidates: list[Candidate], label) -> str:
    return ", ".join(f"{label(_arm(c))} {c.status}" for c in candidates)
