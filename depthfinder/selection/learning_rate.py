"""Does the best peak learning rate move with depth? A short check of the depth-aware recipe.

The scratch recipe scales the residual blocks' rate by 1/sqrt(depth) (Depth-muP,
encoder.module) so that one peak rate serves every depth; fine-tuning uses one rate for
every layer. The check trains the shallowest and the deepest candidate for the first
halving budget at the recipe's rate, a third of it and three times it, and compares the
best rate of the two: if it moved, the depths were not compared on equal terms, and the
decision says so.
"""

from __future__ import annotations

from pydantic import Field

from depthfinder.encoder.config import FAMILY_DESCRIPTION, FamilyName
from depthfinder.runtime.records import Record

RATE_FACTORS = (1 / 3, 1.0, 3.0)


class RateTrial(Record):
    """One depth trained briefly at one peak rate."""

    depth: int = Field(description="Encoder blocks.")
    learning_rate: float = Field(description="Peak learning rate.")
    metric: float | None = Field(description="Best validation macro-F1 within the budget; none if it failed.")


class RateCheck(Record):
    """The learning-rate check of one family: its trials and the verdict."""

    family: FamilyName = Field(description=FAMILY_DESCRIPTION)
    epochs: int = Field(description="Epochs each trial trained (the first halving budget).")
    trials: list[RateTrial] = Field(description="Every (depth, rate) tried.")
    best_rates: dict[int, float] = Field(description="Depth -> the rate with the best validation macro-F1.")
    moved: bool | None = Field(description="Whether the best rate differs between the depths; none if undecided.")
    sentence: str = Field(description="The verdict in one sentence.")


def judge_rates(family: FamilyName, epochs: int, recipe_rate: float, trials: list[RateTrial]) -> RateCheck:
    """The best rate per depth (ties: the recipe's) and whether it moved between the shallowest and deepest."""
    best_rates = {}
    for depth in sorted({t.depth for t in trials}):
        tried = [t for t in trials if t.depth == depth and t.metric is not None]
        if tried:
            top = max(t.metric for t in tried)
            best_rates[depth] = min((t for t in tried if t.metric == top),
                                    key=lambda t: abs(t.learning_rate - recipe_rate)).learning_rate
    where = f"learning-rate check ({family}, {epochs} epochs at {_rates(trials)})"
    if len(best_rates) < 2:
        return RateCheck(family=family, epochs=epochs, trials=trials, best_rates=best_rates, moved=None,
                         sentence=f"{where}: undecided, a depth has no finished trial")
    shallow, deep = min(best_rates), max(best_rates)
    moved = best_rates[shallow] != best_rates[deep]
    verdict = ("the best rate moved with depth: one recipe does not serve these depths equally, and the "
               "comparison between them is not on equal terms" if moved else "the best rate did not move with depth")
    return RateCheck(
        family=family, epochs=epochs, trials=trials, best_rates=best_rates, moved=moved,
        sentence=f"{where}: best {best_rates[shallow]:.2g} at depth {shallow}, {best_rates[deep]:.2g} at depth "
        f"{deep}; {verdict}",
    )


def _rates(trials: list[RateTrial]) -> str:
    return ", ".join(f"{rate:.2g}" for rate in sorted({t.learning_rate for t in trials}))
