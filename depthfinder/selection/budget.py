"""A sweep's compute budget in training FLOPs, and what it left untried.

FLOPs and not seconds: a candidate's FLOPs are counted, not timed (encoder.cost), so the same sweep spends the
same budget on any machine, under any load, and a rerun after a kill stops where the first run would have. A
candidate's training FLOPs are about three forwards (forward and backward) per training row and epoch:
3 x `flops_per_example` x train rows x epochs. The sweep checks the budget before each step (a step once started
runs to its end), so it is a limit on starting work, not an exact bound on what is spent.
"""

from __future__ import annotations

from pydantic import Field

from depthfinder.runtime.records import Record
from depthfinder.selection.candidate import Candidate, arm_label

# A training step is one forward and one backward, and the backward costs about two forwards.
FORWARDS_PER_TRAINING_EXAMPLE = 3


class Budget(Record):
    """What the sweep was allowed to spend, what it spent, and what it left untried."""

    flops: float = Field(description="The budget in training FLOPs (sweep.budget_flops).")
    spent_flops: float = Field(
        description="Training FLOPs spent: 3 x FLOPs per example x train rows x epochs, summed over every candidate "
        "(pruned and reused ones included)."
    )
    untried: list[str] = Field(
        [], description="Candidates the budget left untried (or stopped short of their end), as `family depth k`."
    )

    @property
    def sentence(self) -> str:
        """`the budget of 2e+14 training FLOPs (2.3e+14 spent) left untried: all-mpnet-base-v2 depths 6, 12`."""
        head = f"the budget of {self.flops:.2g} training FLOPs ({self.spent_flops:.2g} spent)"
        if not self.untried:
            return f"{head} left nothing untried"
        return f"{head} left untried: {', '.join(self.untried)}"


def training_flops(candidates: list[Candidate], train_rows: int) -> float:
    """Training FLOPs the candidates took (those with a measured cost; a screened depth is a probe of another's)."""
    return sum(FORWARDS_PER_TRAINING_EXAMPLE * c.cost.flops_per_example * train_rows * c.epochs
               for c in candidates if c.cost is not None and c.cost.flops_per_example is not None)


class Spending:
    """A sweep's budget as it goes: whether it is spent, and the (family, depth)s it left untried."""

    def __init__(self, flops: float | None, train_rows: int) -> None:
        self.flops, self.rows = flops, train_rows
        self.untried: list[tuple[str, int]] = []

    def spent(self, candidates: list[Candidate]) -> bool:
        """Whether `candidates` (every one so far) took the budget; never without one."""
        return self.flops is not None and training_flops(candidates, self.rows) >= self.flops

    def budget(self, candidates: list[Candidate], named: bool) -> Budget | None:
        """What the budget allowed, what `candidates` spent and what was left untried (None without a budget); a
        family is named when the sweep held several or it is a checkpoint's."""
        if self.flops is None:
            return None
        named = named or any(family != "scratch" for family, _ in self.untried)
        untried = [arm_label(family, depth, named=named) for family, depth in dict.fromkeys(self.untried)]
        return Budget(flops=self.flops, spent_flops=training_flops(candidates, self.rows), untried=untried)
