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

from evidence.bootstrap import Arm
from evidence.margin import rows_to_resolve
from selection.candidate import COST_NAMES, arm_label
from selection.decision import Decision, DepthScore
from selection.settings import SelectionRule

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
    selected: Arm, best: Arm, scores: dict[Arm, DepthScore], rule: SelectionRule, label: Label, rows: int | None,
) -> tuple[str, int | None]:
    """The sentence behind a tolerance choice, and the validation rows that would settle the cheaper depth the
    evidence could not (None when nothing is unsettled)."""
    chosen, top, metric, tolerance = scores[selected], scores[best], rule.metric, rule.tolerance
    cheaper = [arm for arm in scores if scores[arm].cost < chosen.cost]
    closest = max(cheaper, key=lambda arm: (scores[arm].mean, -scores[arm].cost)) if cheaper else None
    needed = _needed(scores[closest], tolerance, rows) if closest and rows else None
    if selected != best:
        share = chosen.cost / top.cost if top.cost else math.nan
        cost = f"at {share:.0%} of its {COST_NAMES[rule.cost]}"
        if chosen.vs_best is None:
            sentence = (f"{label(selected)} ships: its {metric} {quality(chosen)} is within the {tolerance:.3g} "
                        f"tolerance of the best, {quality(top)} at {label(best)}, {cost}")
        else:
            sentence = (f"{label(best)} scores {top.mean - chosen.mean:.3f} higher ({metric} {quality(top)} vs "
                        f"{quality(chosen)}), and the validation rows show {label(selected)} within the "
                        f"{tolerance:.3g} tolerance ({interval_words(chosen, selected, best, rule, label)}), so the "
                        f"cheaper {label(selected)} ships, {cost}")
    elif len(scores) == 1:
        return f"{label(best)} ships: the only depth to choose from ({metric} {quality(top)})", None
    elif closest is None:
        return (f"{label(best)} has the best {metric} {quality(top)} and is also the cheapest by "
                f"{COST_NAMES[rule.cost]}"), None
    else:
        sentence = _best_ships(best, closest, scores, rule, label)
    if needed is not None:
        sentence += "; " + _resolution(closest, scores[closest], rows, needed, tolerance, label)
    return sentence, needed


def _best_ships(best: Arm, closest: Arm, scores: dict[Arm, DepthScore], rule: SelectionRule, label: Label) -> str:
    """Why the best depth ships although cheaper ones exist, named by the closest of them."""
    top, near, metric, tolerance = scores[best], scores[closest], rule.metric, rule.tolerance
    head = f"{label(best)} ships: it has the best {metric} {quality(top)}"
    if near.vs_best is None:
        return (f"{head}, and no cheaper depth is within the {tolerance:.3g} tolerance (closest: {label(closest)} at "
                f"{near.mean:.3f})")
    interval = interval_words(near, closest, best, rule, label)
    if near.verdict == "unsettled":
        return (f"{head}; the cheaper {label(closest)}'s {near.mean:.3f} is within the {tolerance:.3g} tolerance, but "
                f"the validation rows do not show it within ({interval})")
    return (f"{head}, and every cheaper depth's mean is more than the {tolerance:.3g} tolerance below it (closest: "
            f"{label(closest)} at {near.mean:.3f}; {interval})")


def _needed(score: DepthScore, tolerance: float, rows: int) -> int | None:
    """The validation rows that would resolve the tolerance for a cheaper depth the rows could not settle: not
    shown within (the rule did not take it), not shown worse (its interval reaches −tolerance: unsettled, or its
    mean beyond the tolerance), and an interval wider than the tolerance; None otherwise."""
    if score.vs_best is None or score.verdict not in ("unsettled", "beyond"):
        return None
    return rows_to_resolve(rows, score.vs_best.half_width, tolerance)


def _resolution(arm: Arm, score: DepthScore, rows: int, needed: int, tolerance: float, label: Label) -> str:
    """`the 302 validation rows cannot settle depth 4: its interval (±0.027) is wider than the 0.01 tolerance, and one
    as narrow as the tolerance needs about 2,200 validation rows (...)`."""
    return (f"the {rows:,} validation rows cannot settle {label(arm)}: its interval (±{score.vs_best.half_width:.3f}) "
            f"is wider than the {tolerance:.3g} tolerance, and one as narrow as the tolerance needs about {needed:,} "
            "validation rows (or several seeds, or a larger tolerance)")


def depth_verdicts(decision: Decision, scores: list[DepthScore]) -> str:
    """`depth 1 −0.018 [−0.053, +0.000] (mean beyond the tolerance), depth 2 −0.004 (shown within the tolerance,
    may ship)`: each of `scores`' difference from the decision's best (with its paired interval, where there is
    one) and the verdict the rule gave it."""
    named = len({score.family for score in decision.scores}) > 1
    best = next(s for s in decision.scores if (s.family, s.depth) == (decision.best_family, decision.best_depth))
    clauses = []
    for score in scores:
        difference = (score.vs_best.text() if score.vs_best is not None
                      else f"{score.mean - best.mean:+.3f}".replace("-", "\u2212"))
        clauses.append(f"{arm_label(score.family, score.depth, named)} {difference} ({VERDICT_WORDS[score.verdict]})")
    return ", ".join(clauses)


def interval_words(score: DepthScore, arm: Arm, best: Arm, rule: SelectionRule, label: Label) -> str:
    """`90% interval of depth 1 − depth 2: −0.072 to +0.037`."""
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
