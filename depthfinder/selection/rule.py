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

Each depth's verdict against the best (`DepthScore.verdict`, selection.decision.judge) is judged once, here, where the
decision is made; the sentence (selection.reasons), the plots, the terminal, the Prefect artifact and the model card
read it and never judge again.

Functions of typed candidates (selection.candidate) and the prediction files they
name, so a decision can be replayed from a summary JSON:
`choose_depth(summary.candidates, summary.rule.settings)`.
With several seeds a depth appears once per seed; its score is the mean.
"""

from __future__ import annotations

import math
import statistics

from depthfinder.evidence.bootstrap import RESAMPLES, Arm, compare_to_best, metric_of
from depthfinder.selection.candidate import Candidate, arm_label, base_family, teacher_of
from depthfinder.selection.crossfit import OutOfFold
from depthfinder.selection.decision import Decision, DepthScore, judge
from depthfinder.selection.pool import Pool, label_clause, on_pool, rows_to_label
from depthfinder.selection.predictions import load_predictions
from depthfinder.selection.reasons import quality, ratio_reason, tolerance_reason
from depthfinder.selection.settings import SelectionRule


def choose_depth(candidates: list[Candidate], rule: SelectionRule, out_of_fold: OutOfFold | None = None,
                 pool: Pool | None = None) -> Decision:
    """Choose a depth by `rule`.

    Args:
        candidates: the sweep's candidates; a depth trained with several seeds appears once per
            seed; only usable ones (trained, cached) are considered.
        rule: the rule and its settings.
        out_of_fold: cross-fitting's predictions (selection.crossfit), for the depths it cross-fitted, the best
            among them: those depths are compared with the best on them instead of the validation rows.
        pool: unlabelled texts predicted by the best and the depths to settle (selection.pool): a depth the labelled
            rows leave unsettled is bounded on them, and ships when the bound shows it within the tolerance.

    Returns:
        The Decision, with a reason that names the numbers.

    Raises:
        ValueError: on a candidate without the metric or cost, or when no candidate is eligible.
    """
    families = {base_family(c.family) for c in candidates}
    named = families != {"scratch"}  # a sweep of the scratch family alone says "depth 2", others name the family
    label = lambda arm: arm_label(*arm, named=named)  # noqa: E731
    eligible, unusable, excluded = _eligible(candidates, rule, label)
    scores = aggregate(eligible, rule.metric, rule.cost)
    arms = sorted(scores, key=_order)
    best, best_on = max(arms, key=lambda a: scores[a].mean), "validation"  # ties: the shallower depth
    if out_of_fold is not None and out_of_fold.chooses_best and rule.confidence is not None and (
            found := _best_out_of_fold(arms, out_of_fold, rule.metric)) is not None:
        best, best_on = found, "out-of-fold"  # every depth judged out of fold: the best chosen there
    scores, evidence, rows = _with_intervals(scores, eligible, best, rule)
    if out_of_fold is not None and rows is not None:
        scores, evidence = _out_of_fold(scores, evidence, best, rule, out_of_fold)
    scores = _with_verdicts(scores, best, rule)
    compared = any(score.compared_on == "out-of-fold" for score in scores.values())
    if pool is not None and rows is not None:
        scores = _with_verdicts(on_pool(scores, best, rule, pool), best, rule)
        evidence = _pool_evidence(evidence, scores)
    front = pareto_front(list(scores.values()))
    to_resolve = None
    if rule.rule == "ratio":
        selected = max(arms, key=lambda a: _ratio(scores[a], rule.alpha))
        reason = ratio_reason(selected, best, scores, rule, label)
    else:
        among = {a: scores[a] for a in (front if rule.rule == "pareto" else arms)}
        tied = [a for a in among if scores[a].may_ship]
        selected = min(tied, key=lambda a: (among[a].cost, _order(a)))
        reason, to_resolve = tolerance_reason(selected, best, scores, rule, label, _rows(rows, out_of_fold, pool),
                                              best_on)
    clauses = [reason + _other_families(selected, best, scores, rule.metric)]
    to_label = rows_to_label(list(scores.values()), best, selected, pool, rule.metric) if pool is not None else []
    if unbounded := _unbounded(scores, selected, best):
        clauses.append(label_clause(unbounded, scores[unbounded].pool, rule.tolerance, rule.metric, len(to_label),
                                    label))
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
    bounded = any(score.pool is not None for score in scores.values())
    return Decision(
        settings=rule, reason="; ".join(clauses), selected_depth=selected[1], selected_family=selected[0],
        best_depth=best[1], best_family=best[0], evidence=evidence, validation_rows=rows, rows_to_resolve=to_resolve,
        out_of_fold_rows=out_of_fold.predictions.rows if compared else None,
        folds=out_of_fold.folds if compared else None,
        unlabeled_rows=pool.rows if bounded else None, labelled_texts=pool.labelled if bounded else None,
        rows_to_label=len(to_label) or None,
        pareto_front=[a[1] for a in front], pareto_families=[a[0] for a in front], scores=[scores[a] for a in arms],
    )


def _eligible(
    candidates: list[Candidate], rule: SelectionRule, label
) -> tuple[list[Candidate], list[Candidate], dict[Arm, list[str]]]:
    """The candidates the rule chooses among, those it does not consider (screened ones are never candidates), and
    the depths the hard limits exclude, with why; ValueError when no candidate is left."""
    usable = [c for c in candidates if c.usable and not c.kept_twin]  # a student that kept its twin is its twin
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

def _out_of_fold(scores: dict[Arm, DepthScore], evidence: str, best: Arm, rule: SelectionRule,
                 out_of_fold: OutOfFold) -> tuple[dict[Arm, DepthScore], str]:
    """The scores with the depths cross-fitted compared with the best on their out-of-fold predictions (the best
    among them), and the evidence saying so; unchanged when the best was not cross-fitted or nothing beside it."""
    predicted = out_of_fold.predictions.predicted
    seeds = {arm: sorted(seed for family, depth, seed in predicted if (family, depth) == arm) for arm in scores}
    arms = {arm: found for arm, found in seeds.items() if found}
    if best not in arms or len(arms) < 2:
        return scores, evidence
    intervals = compare_to_best(out_of_fold.predictions, arms, best, rule.metric, rule.confidence)
    updated = {arm: score.model_copy(update={"vs_best": intervals[arm], "compared_on": "out-of-fold"})
               if arm in arms and arm != best else score for arm, score in scores.items()}
    return updated, (f"{evidence}; cross-fitted depths on {out_of_fold.predictions.rows:,} out-of-fold train and "
                     f"validation rows ({out_of_fold.folds} folds, {RESAMPLES} resamples)")


def _best_out_of_fold(arms: list[Arm], out_of_fold: OutOfFold, metric: str) -> Arm | None:
    """The depth with the best mean out-of-fold metric over its seeds (ties: the shallower), among those cross-fitting
    predicted (every depth the validation rows did not show worse: selection.crossfit.judges_every_depth); None when
    it predicted fewer than two, and the validation rows' best stands."""
    predicted = out_of_fold.predictions.predicted
    seeds = {arm: found for arm in arms if (found := [key for key in predicted if key[:2] == arm])}
    if len(seeds) < 2:
        return None
    true = out_of_fold.predictions.true
    return max(seeds, key=lambda arm: statistics.fmean(metric_of(true, predicted[key], metric) for key in seeds[arm]))


def _rows(validation: int | None, out_of_fold: OutOfFold | None, pool: Pool | None) -> dict[str, int]:
    """The rows each kind of evidence compared depths on, by DepthScore.compared_on."""
    rows = {"validation": validation} if validation else {}
    rows |= {"out-of-fold": out_of_fold.predictions.rows} if out_of_fold is not None else {}
    return rows | ({"unlabeled": pool.rows} if pool is not None else {})


def _with_verdicts(scores: dict[Arm, DepthScore], best: Arm, rule: SelectionRule) -> dict[Arm, DepthScore]:
    """The scores with each depth's verdict against the best (selection.decision.judge)."""
    return {arm: score.model_copy(update={"verdict": judge(score, scores[best], rule.tolerance)})
            for arm, score in scores.items()}


def _pool_evidence(evidence: str, scores: dict[Arm, DepthScore]) -> str:
    """The evidence, saying which depths were bounded on the unlabelled texts."""
    bounded = [score for score in scores.values() if score.pool is not None]
    if not bounded:
        return evidence
    pool = bounded[0].pool
    labelled = f", {pool.labelled:,} of their disagreements labelled" if any(s.pool.labelled for s in bounded) else ""
    return (f"{evidence}; depths the labelled rows could not settle bounded by their disagreement with the best on "
            f"{pool.rows:,} unlabelled texts{labelled}")


def _unbounded(scores: dict[Arm, DepthScore], selected: Arm, best: Arm) -> Arm | None:
    """The cheaper depth than the chosen one closest to being bounded within the tolerance on the pool, among those
    it could not bound; None when there is none."""
    cost = scores[selected].cost
    left = [arm for arm, score in scores.items() if score.pool is not None and score.compared_on != "unlabeled"
            and score.cost < cost and arm != best]
    return min(left, key=lambda arm: (scores[arm].pool.worse_by_at_most, scores[arm].cost), default=None)


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
    return arm[1], base_family(arm[0]) != "scratch"


def _arms_text(arms: list[Arm], label) -> str:
    if len({family for family, _ in arms}) > 1 or any(base_family(family) != "scratch" for family, _ in arms):
        return ", ".join(label(arm) for arm in arms)
    return "depths " + ", ".join(str(depth) for _, depth in arms)


def _other_families(selected: Arm, best: Arm, scores: dict[Arm, DepthScore], metric: str) -> str:
    """`; scratch best 0.820 at depth 4`: the best of each family the choice is not from (but the best's, whose
    best the sentence already names)."""
    others = []
    # Students are named with their teacher where they matter (the choice, the best, a depth's verdict), not here.
    for family in sorted({family for family, _ in scores if teacher_of(family) is None} - {selected[0], best[0]}):
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
    if rule.max_size_mb is not None:
        limits["size_mb"] = ("max_size_mb", float(rule.max_size_mb))
    return limits


def limit_violations(candidate: Candidate, rule: SelectionRule) -> list[str]:
    """The hard limits of `rule` (max_latency_ms, max_params, max_size_mb) `candidate` exceeds, each as
    `latency_ms_p50 7.2 > max_latency_ms 5`; none when it meets them all, or when none is set."""
    return _violations(candidate, _limits(rule))


def limits_text(rule: SelectionRule) -> str:
    """`max_latency_ms=5, max_size_mb=8`: the hard limits set; "" for none."""
    return _limits_text(_limits(rule))


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
