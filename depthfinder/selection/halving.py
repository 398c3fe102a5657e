"""Successive halving over candidate depths: train every depth briefly, keep the better half, go on.

Rung r trains the surviving depths to `first_epochs * 2**r` epochs in all, ranks them and
keeps the better half (never fewer than two); when two depths are left, or the next budget
would reach the recipe's `max_epochs`, the survivors train to the end (early stopping as
usual) and the rule chooses among them. A candidate continues from its own checkpoint, so
a survivor ends exactly where the full grid's run of it ends (`encoder.training`).

The rank is the rule's own (`selection.rule.choose_depth` applied again and again to the
rest): with the `tolerance` rule, depths within tolerance of the best count as tied and
the cheaper comes first. Halving therefore keeps the cheap depth the final rule would pick
over a slightly better deep one, instead of dropping it for being a little behind early.
Stopping at two keeps the last comparison one between finished models. A depth outside the
better half whose validation curve is still rising steeply enough to come within the halving
margin (`halving_margin`) of the weakest kept depth within one more window of epochs, with the
kept depths going on at their own pace (`late_bloomers`), is kept too: deep models often learn
late. The grid strategy (selection.strategies) runs the rungs.

Across families (several checkpoints, scratch beside them), the cheaper families sweep first, and at each rung of a
costlier one a depth that costs more than the choice among the cheaper families' finished candidates, and that even
at its projected best would leave that choice within the tolerance of it, is outclassed: it cannot change the
decision (the rule ships the cheapest within the tolerance of the best), so it stops there (`outclassed`); but
never a family's last kept depth: its cheapest trains on, so the decision can say what each family gave.
"""

from __future__ import annotations

import math
import statistics
from typing import Literal

from pydantic import Field, field_validator

from depthfinder.encoder.config import FamilyName, TrainConfig, yaml_switch
from depthfinder.evidence.margin import within
from depthfinder.runtime.records import Record
from depthfinder.selection.candidate import Candidate, recent_gain
from depthfinder.selection.decision import score_of
from depthfinder.selection.rule import choose_depth
from depthfinder.selection.settings import SelectionRule, SweepPart


class Rung(Record):
    """One halving rung of a family: the budget, the depths it ranked and those it kept."""

    family: FamilyName = Field("scratch", description="The family whose depths it ranked.")
    epochs: int = Field(description="Epochs in all at this rung.")
    depths: list[int] = Field(description="Depths ranked at this rung.")
    kept: list[int] = Field(description="Depths kept for the next rung.")
    late_bloomers: list[int] = Field(
        [], description="Kept depths outside the better half: still rising fast enough to catch up (late_bloomers)."
    )
    outclassed: list[int] = Field(
        [], description="Depths stopped because a cheaper family's finished candidate is already as good: each costs "
        "more, and even at its projected best would leave that candidate within the tolerance (outclassed)."
    )


class Halving(Record):
    """What successive halving did and saved."""

    rungs: list[Rung] = Field(description="The rungs, in order.")
    train_seconds: float | None = Field(None, description="Training time spent, pruned candidates included, s.")
    full_grid_train_seconds: float | None = Field(
        None, description="Estimated training time of the full grid (every depth to the end), s."
    )
    saved_fraction: float | None = Field(None, description="1 - train_seconds / full_grid_train_seconds.")
    margin: float | None = Field(
        None, description="The halving margin late bloomers were judged by (sweep.halving_margin)."
    )


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


def rank_depths(candidates: list[Candidate], rule: SelectionRule) -> list[int]:
    """Depths best first by the rule: its choice, then its choice among the rest, and so on.

    Args:
        candidates: the candidates at the same budget; unusable ones are ignored.
        rule: the selection rule.

    Returns:
        Every usable depth once; those beyond the hard limits last, better metric first.
    """
    remaining = [c for c in candidates if c.usable]
    order: list[int] = []
    while remaining:
        try:
            chosen = choose_depth(remaining, rule).selected_depth
        except ValueError:  # the rest exceed the hard limits
            break
        order.append(chosen)
        remaining = [c for c in remaining if c.depth != chosen]
    beyond_limits = {c.depth for c in remaining}
    mean_metric = {d: statistics.fmean(c.metrics[rule.metric] for c in remaining if c.depth == d)
                   for d in beyond_limits}
    return order + sorted(beyond_limits, key=lambda d: (-mean_metric[d], d))


def halve(candidates: list[Candidate], rule: SelectionRule, family: FamilyName, epochs: int, window: int,
          margin: float) -> Rung:
    """One rung over `candidates` (every seed of the depths it ranks, at `epochs`): the better half by the rule,
    and the late bloomers within `margin` (`late_bloomers`)."""
    depths = sorted({c.depth for c in candidates})
    better = rank_depths(candidates, rule)[: kept_count(len(depths))]
    bloomers = late_bloomers(candidates, better, window, margin)
    return Rung(family=family, epochs=epochs, depths=depths, kept=sorted(better + bloomers), late_bloomers=bloomers)


def late_bloomers(candidates: list[Candidate], kept: list[int], window: int, margin: float) -> list[int]:
    """Depths outside `kept` that a rung should keep anyway: still rising (`Candidate.not_converged`) so much
    faster than the kept depths that, if every depth went on for one more `window` of epochs at its recent pace,
    its best validation macro-F1 would come within `margin` (the halving margin) of the weakest kept depth's. A
    deep model often learns late; this keeps halving from pruning it on an unfinished curve, and keeps nothing that
    is merely rising as fast as the rest. A curve shorter than two windows cannot tell rising from noise: none is judged
    at such a rung."""
    def projected(depth: int) -> float:
        runs = [c for c in candidates if c.depth == depth and c.usable and c.history]
        return statistics.fmean(_projected_best(c, window) for c in runs) if runs else -math.inf

    weakest = min(projected(depth) for depth in kept)
    rising = {c.depth for c in candidates
              if c.usable and c.not_converged and c.depth not in kept and len(c.history) >= 2 * window}
    if weakest == -math.inf:  # a kept depth without a curve: nothing to measure the rising ones against
        return sorted(rising)
    return sorted(depth for depth in rising if within(projected(depth) - weakest, margin))


def outclassed(candidates: list[Candidate], reference: list[Candidate], rule: SelectionRule, window: int) -> list[int]:
    """Depths of `candidates` (one family at a rung) that can no longer change the decision made among `reference`
    (the cheaper families' finished candidates): each costs more by the rule's cost than the reference's choice,
    and its projected metric (its own plus its gain over the last `window` epochs once more) is not more than the
    tolerance above the choice's (evidence.margin.within), so the choice would ship beside it. A depth
    that already finished (early-stopped) costs nothing more: it stays for the decision to see."""
    usable = [c for c in reference if c.usable]
    if not usable:
        return []
    decision = choose_depth(usable, rule)
    chosen = score_of(decision, decision.selected_family, decision.selected_depth)
    depths = sorted({c.depth for c in candidates if c.usable and c.cost and c.cost.value(rule.cost) is not None}
                    - {c.depth for c in candidates if c.finished})
    gone = []
    for depth in depths:
        runs = [c for c in candidates if c.depth == depth and c.usable]
        cost = statistics.fmean(c.cost.value(rule.cost) for c in runs)
        projected = statistics.fmean(
            c.metrics[rule.metric] + max(recent_gain(c.history, window) or 0.0, 0.0) for c in runs)
        if cost > chosen.cost and within(chosen.mean - projected, rule.tolerance):
            gone.append(depth)
    return gone


def _projected_best(candidate: Candidate, window: int) -> float:
    """The best of a validation curve plus its gain over the last `window` epochs once more."""
    return max(candidate.history) + max(recent_gain(candidate.history, window) or 0.0, 0.0)


def halving_summary(rungs: list[Rung], candidates: list[Candidate], margin: float | None = None) -> Halving:
    """The rungs, and training time spent against an estimate of the full grid's (none without a finished candidate);
    `margin`: the halving margin they judged late bloomers by.

    A pruned candidate's full-grid time is its seconds per epoch so far times the mean
    epochs of the candidates that trained to the end (what early stopping let them run).
    """
    finished = [c for c in candidates if c.usable]
    pruned = [c for c in candidates if c.status == "pruned"]
    if not finished:
        return Halving(rungs=rungs, margin=margin)
    full_epochs = statistics.fmean(c.epochs for c in finished)
    spent_finished = sum(c.cost.train_seconds for c in finished)
    spent_pruned = sum(c.cost.train_seconds for c in pruned)
    full_pruned = sum(c.cost.train_seconds / c.epochs * max(full_epochs, c.epochs) for c in pruned)
    spent, full = spent_finished + spent_pruned, spent_finished + full_pruned
    return Halving(rungs=rungs, train_seconds=spent, full_grid_train_seconds=full, saved_fraction=1 - spent / full,
                   margin=margin)


class HalvingConfig(SweepPart):
    """Successive halving of each family's depths (sweep.halving)."""

    mode: Literal["auto", "on", "off"] = Field(
        "auto", description="Successive halving: train every depth for `epochs`, keep the better half by the "
        "rule, double the budget, until two depths are left; they train to the end. auto = on with 4 or more depths.",
        json_schema_extra={"flag": "--halving"},
    )
    epochs: int | None = Field(
        None, strict=True, ge=1,
        description="Epochs of the first halving rung (each later rung doubles it); null = the recipe's min_epochs "
        "(train.min_epochs; a pretrained family's finetune_min_epochs), the epochs a depth may spend on its initial "
        "loss plateau.",
    )

    _switch = field_validator("mode", mode="before")(yaml_switch)

    def halves(self, depths: int) -> bool:
        """Whether a family sweeping this many depths uses successive halving."""
        return self.mode == "on" or (self.mode == "auto" and depths >= 4)

    def rung_budgets(self, depths: int, recipe: TrainConfig) -> list[int]:
        """Epoch budgets of the halving rungs for this many depths (empty without halving); the first is
        `epochs`, by default the recipe's `min_epochs`: a depth may sit on its initial loss plateau until then."""
        if not self.halves(depths):
            return []
        return rung_budgets(depths, self.epochs or recipe.min_epochs, recipe.max_epochs)

    def checks(self, depths: int, recipe: TrainConfig) -> list[int]:
        """Epoch budgets at which a family swept after cheaper ones stops the depths they outclass (the rungs it
        would halve at, and at least the first; none with halving off)."""
        if self.mode == "off":
            return []
        return rung_budgets(max(depths, 3), self.epochs or recipe.min_epochs, recipe.max_epochs)
