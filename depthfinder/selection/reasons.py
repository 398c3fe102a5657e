"""The decision in one sentence, with its numbers: what the best depth gains, what the validation rows show of the
cheaper ones, and, when they cannot settle the one that matters, how many rows would.

The rule (selection.rule) decides; these functions only say it. A sentence never reads like a
contradiction: a depth is "shown within" the tolerance only when its interval's lower end clears −tolerance, and
one whose rows cannot tell is said to be unsettled, with the validation rows that would resolve the tolerance
(an interval's width shrinks as 1/sqrt(rows)) and what else would (several seeds, a larger tolerance).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from depthfinder.evidence.bootstrap import Arm
from depthfinder.evidence.margin import rows_to_resolve
from depthfinder.selection.candidate import COST_NAMES, arm_label, base_family
from depthfinder.selection.decision import Decision, DepthScore, difference_from_best
from depthfinder.selection.settings import SelectionRule

Label = Callable[[Arm], str]

# The rule's verdict on a depth (DepthScore.verdict, judged once by selection.decision.judge) in the words every
# page uses: the plot's legend, the terminal, the Prefect artifact, the model card.
VERDICT_WORDS = {
    "best": "the best",
    "within": "shown within the tolerance, may ship",
    "unsettled": "cannot tell: mean within the tolerance, not shown within",
    "beyond": "mean beyond the tolerance",
    "worse": "shown worse than the tolerance",
}


def quality(score: DepthScore) -> str:
    """`0.950`, or `0.950 ± 0.020 over 2 seeds`."""
    spread = f" ± {score.std_error:.3f} over {score.seeds} seeds" if score.seeds > 1 else ""
    return f"{score.mean:.3f}{spread}"


def tolerance_reason(
    selected: Arm, best: Arm, scores: dict[Arm, DepthScore], rule: SelectionRule, label: Label,
    rows: dict[str, int], best_on: str = "validation",
) -> tuple[str, int | None]:
    """The sentence behind a tolerance choice, and the labelled rows that would settle the cheaper depth the
    evidence could not (None when nothing is unsettled); `rows` are those each kind of evidence compared depths on
    (DepthScore.compared_on: validation, out-of-fold, unlabeled), none by means only; `best_on`, the rows the best
    was chosen on (out-of-fold when cross-fitting judged every depth)."""
    chosen, top, metric, tolerance = scores[selected], scores[best], rule.metric, rule.tolerance
    cheaper = [arm for arm in scores if scores[arm].cost < chosen.cost]
    closest = (max(cheaper, key=lambda arm: (difference_from_best(scores[arm], top), -scores[arm].cost))
               if cheaper else None)
    needed = _needed(scores[closest], tolerance, rows) if closest and rows else None
    if selected != best:
        share = chosen.cost / top.cost if top.cost else math.nan
        cost = f"at {share:.0%} of its {COST_NAMES[rule.cost]}"
        if chosen.vs_best is None:
            sentence = (f"{label(selected)} ships: its {metric} {quality(chosen)} is within the {tolerance:.3g} "
                        f"tolerance of the best, {quality(top)} at {label(best)}, {cost}")
        else:
            seen = "those rows" if chosen.compared_on == "out-of-fold" else _rows_words(chosen, rows)
            interval = interval_words(chosen, selected, best, rule, label)
            sentence = (f"{label(best)} scores {_lead(chosen, top, metric, rows)}, and {seen} show {label(selected)} "
                        f"within the {tolerance:.3g} tolerance ({interval}), so the cheaper {label(selected)} ships, "
                        f"{cost}"
                        + _on_validation(rows, f"{metric} {quality(top)} vs {quality(chosen)}", chosen.compared_on))
    elif len(scores) == 1:
        return f"{label(best)} ships: the only depth to choose from ({metric} {quality(top)})", None
    elif closest is None:
        where = (f" on the {rows['out-of-fold']:,} out-of-fold rows" if best_on == "out-of-fold" else
                 f" {quality(top)}")
        return (f"{label(best)} has the best {metric}{where} and is also the cheapest by {COST_NAMES[rule.cost]}"
                + _on_validation(rows, f"{metric} {quality(top)}", best_on)), None
    else:
        sentence = _best_ships(best, closest, scores, rule, label, rows, best_on)
    if needed is not None:
        sentence += "; " + _resolution(closest, scores[closest], rows, needed, tolerance, label)
    return sentence, needed


def _lead(chosen: DepthScore, top: DepthScore, metric: str, rows: dict[str, int]) -> str:
    """`0.004 higher (macro_f1 0.950 vs 0.946)` on the validation rows, or `0.002 higher on the 2,700 out-of-fold
    rows`: on the rows the chosen depth was compared on, and on those alone."""
    if chosen.compared_on != "out-of-fold":
        return f"{top.mean - chosen.mean:.3f} higher ({metric} {quality(top)} vs {quality(chosen)})"
    gap = -difference_from_best(chosen, top)
    return f"{abs(gap):.3f} {'higher' if gap >= 0 else 'lower'} on the {rows['out-of-fold']:,} out-of-fold rows"


def _on_validation(rows: dict[str, int], means: str, rests_on: str) -> str:
    """`; on the 296 validation rows, macro_f1 0.983 vs 0.975`: the validation means of a verdict that rests on other
    rows (`rests_on`: out-of-fold, unlabeled), as a clause of its own (one source per clause); "" for a verdict on
    the validation rows."""
    if rests_on == "validation" or "validation" not in rows:
        return ""
    return f"; on the {rows['validation']:,} validation rows, {means}"


def _best_ships(best: Arm, closest: Arm, scores: dict[Arm, DepthScore], rule: SelectionRule, label: Label,
                rows: dict[str, int], best_on: str) -> str:
    """Why the best depth ships although cheaper ones exist, named by the closest of them."""
    top, near, metric, tolerance = scores[best], scores[closest], rule.metric, rule.tolerance
    head, tail = f"{label(best)} ships: it has the best {metric} {quality(top)}", ""
    if best_on == "out-of-fold":
        head = f"{label(best)} ships: it has the best {metric} on the {rows['out-of-fold']:,} out-of-fold rows"
        tail = _on_validation(rows, f"{label(best)} {metric} {quality(top)}, {label(closest)} {near.mean:.3f}",
                              best_on)
    if near.vs_best is None:
        return (f"{head}, and no cheaper depth is within the {tolerance:.3g} tolerance (closest: {label(closest)} at "
                f"{near.mean:.3f})")
    interval, seen = interval_words(near, closest, best, rule, label), _rows_words(near, rows)
    if near.verdict == "unsettled":
        mean = (f"'s {near.mean:.3f} is" if near.compared_on == "validation" else
                f" is, on average over {seen} ({difference_from_best(near, top):+.3f}),")
        return (f"{head}; the cheaper {label(closest)}{mean} within the {tolerance:.3g} tolerance, but {seen} do not "
                f"show it within ({interval}){tail}")
    where = (f" at {near.mean:.3f}" if near.compared_on == "validation" else
             f", {difference_from_best(near, top):+.3f} on {seen.removeprefix('the ')}")
    return (f"{head}, and every cheaper depth's mean is more than the {tolerance:.3g} tolerance below it (closest: "
            f"{label(closest)}{where}; {interval}){tail}")


def _rows_words(score: DepthScore, rows: dict[str, int]) -> str:
    """`the validation rows`, or `the 2,700 out-of-fold rows`: what a depth was compared with the best on."""
    if score.compared_on == "out-of-fold":
        return f"the {rows['out-of-fold']:,} out-of-fold rows"
    if score.compared_on == "unlabeled":
        return f"the {rows['unlabeled']:,} unlabelled texts"
    return "the validation rows"


def _needed(score: DepthScore, tolerance: float, rows: dict[str, int]) -> int | None:
    """The labelled rows that would resolve the tolerance for a cheaper depth the rows could not settle: not
    shown within (the rule did not take it), not shown worse (its interval reaches −tolerance: unsettled, or its
    mean beyond the tolerance), and an interval wider than the tolerance; None otherwise."""
    if score.vs_best is None or score.verdict not in ("unsettled", "beyond"):
        return None
    return rows_to_resolve(rows[score.compared_on], score.vs_best.half_width, tolerance)


def _resolution(arm: Arm, score: DepthScore, rows: dict[str, int], needed: int, tolerance: float,
                label: Label) -> str:
    """`the 302 validation rows cannot settle depth 4: its interval (±0.027) is wider than the 0.01 tolerance, and one
    as narrow as the tolerance needs about 2,200 validation rows (...)`; out of fold, about so many labelled rows."""
    kind = "validation" if score.compared_on == "validation" else "out-of-fold"
    more = "validation rows" if kind == "validation" else "labelled train and validation rows"
    return (f"the {rows[kind]:,} {kind} rows cannot settle {label(arm)}: its interval "
            f"(±{score.vs_best.half_width:.3f}) is wider than the {tolerance:.3g} tolerance, and one as narrow as the "
            f"tolerance needs about {needed:,} {more} (or several seeds, or a larger tolerance)")


def depth_verdicts(decision: Decision, scores: list[DepthScore]) -> str:
    """`depth 1 −0.018 [−0.053, +0.000] (mean beyond the tolerance), depth 2 −0.004 (shown within the tolerance,
    may ship)`: each of `scores`' difference from the decision's best (with its paired interval, where there is
    one) and the verdict the rule gave it."""
    named = len({base_family(score.family) for score in decision.scores}) > 1
    best = next(s for s in decision.scores if (s.family, s.depth) == (decision.best_family, decision.best_depth))
    mixed = len({score.compared_on for score in scores}) > 1  # then each clause names its rows, validation's too
    clauses = []
    for score in scores:
        difference = (score.vs_best.text() if score.vs_best is not None
                      else f"{score.mean - best.mean:+.3f}".replace("-", "\u2212"))
        rows = _verdict_rows(decision, score.compared_on) if mixed or score.compared_on != "validation" else ""
        clauses.append(f"{arm_label(score.family, score.depth, named)} {difference}{rows} "
                       f"({VERDICT_WORDS[score.verdict]})")
    return ", ".join(clauses)


def _verdict_rows(decision: Decision, compared_on: str) -> str:
    """` on the 2,698 out-of-fold rows`: the rows a depth's verdict rests on, where its clause must say so."""
    if compared_on == "out-of-fold" and decision.out_of_fold_rows:
        return f" on the {decision.out_of_fold_rows:,} out-of-fold rows"
    if compared_on == "unlabeled" and decision.unlabeled_rows:
        return f" on the {decision.unlabeled_rows:,} unlabelled texts"
    return f" on the {decision.validation_rows:,} validation rows" if decision.validation_rows else ""


def interval_words(score: DepthScore, arm: Arm, best: Arm, rule: SelectionRule, label: Label) -> str:
    """`90% interval of depth 1 − depth 2: −0.072 to +0.037`; for a depth bounded on unlabelled texts, `disagreement
    0.4% [0.3%, 0.6%] with depth 2: its macro_f1 at most 0.006 below, 95% bound`."""
    if score.compared_on == "unlabeled" and score.pool is not None:
        pool, one_sided = score.pool, 1 - (1 - rule.confidence) / 2
        labelled = f", {pool.labelled:,} of them labelled" if pool.labelled else ""
        return (f"{pool.share_text()} with {label(best)}{labelled}: "
                f"its {rule.metric} {pool.bound_text()}, {one_sided:.0%} bound")
    low, high = (f"{value:+.3f}".replace("-", "\u2212") for value in (score.vs_best.low, score.vs_best.high))
    return f"{rule.confidence:.0%} interval of {label(arm)} \u2212 {label(best)}: {low} to {high}"


def ratio_reason(selected: Arm, best: Arm, scores: dict[Arm, DepthScore], rule: SelectionRule, label: Label) -> str:
    """One sentence with the numbers behind a ratio choice."""
    chosen, top = scores[selected], scores[best]
    head = (f"{label(selected)} maximises {rule.metric} / ({COST_NAMES[rule.cost]})^{rule.alpha:g}: "
            f"{quality(chosen)} at {chosen.cost:.3g}")
    if selected == best:
        return head + ", also the best quality"
    return head + f" vs best {quality(top)} at {label(best)} for {top.cost / chosen.cost:.1f}x the cost"
