"""Every depth 1..L answered at about the price of two fine-tunes: a screen, then a search that confirms.

The screen is one fine-tune of the deepest depth L with a probe on each of its layers (encoder.probes): the
network trains exactly as its separate fine-tune would, so depth L is a confirmed depth, and the probes say,
for every k < L, how much of the task its bottom k layers hold. Probes underestimate what a k-layer network
fine-tuned on its own reaches, so the rule never decides on them; they say where to look. The search then
confirms depths with separate fine-tunes, each compared with the best confirmed depth by the rule's own test
(selection.decision.judge): a depth the rows show within the tolerance is tied, and the search goes cheaper;
one not shown within rules out every shallower depth too (quality does not fall as depth grows, up to noise),
and the search goes deeper. It starts where the screen points (the cheapest depth whose probe, lifted by the
probes' own shortfall at depth L−1, the rule could tie with the best: its mean and the lower end of its paired
interval against depth L within the tolerance), then halves the depths still open: about log2(L) separate
fine-tunes of fewer than L layers each, besides the screen (`Bisection`). Before each confirmation it asks whether
the validation rows could show any depth still open within the tolerance (`unresolvable`): each one's interval is
estimated from its probe's, widened by how much wider the confirmed depths' intervals have been than their
probes'. When even the narrowest estimate is wider than the tolerance, a confirmation would cost a fine-tune and
could ship only by outscoring the best on rows too few to tell the two apart, so the search stops and says how
many rows would resolve the tolerance. The rule then decides among the confirmed depths, with intervals, as for
the grid. The search strategy (selection.strategies) asks for these trainings one step at a time.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

from pydantic import Field

from depthfinder.encoder.config import FAMILY_DESCRIPTION
from depthfinder.evidence.bootstrap import Interval, compare_to_best
from depthfinder.evidence.margin import rows_to_resolve, within
from depthfinder.runtime.records import Record
from depthfinder.selection.candidate import Candidate
from depthfinder.selection.decision import Decision, score_of
from depthfinder.selection.predictions import load_predictions


class Search(Record):
    """What the search strategy of one family screened, confirmed, and paid."""

    family: str = Field(description=FAMILY_DESCRIPTION)
    layers: int = Field(description="The deepest depth L: the screen's.")
    screened: list[int] = Field(description="Depths only the screen's probes saw.")
    confirmed: list[int] = Field(description="Depths trained on their own (the screen's depth L among them).")
    steps: list[str] = Field(description="Each confirmation and what it showed, in order.")
    seconds: float = Field(description="Training seconds of the screen and every confirmation.")
    full_seconds: float = Field(description="Training seconds of the screen: about one fine-tune of depth L.")

    @property
    def cost_vs_full(self) -> float:
        return self.seconds / self.full_seconds if self.full_seconds else float("nan")

    def sentence(self) -> str:
        grid = (self.layers + 1) / 2  # every depth by separate fine-tunes: sum of k/L
        screened = (f"depth{'s' if len(self.screened) > 1 else ''} {_depth_ranges(self.screened)}" if self.screened
                    else "no depth")
        return (f"{self.family} depths 1-{self.layers} screened by one fine-tune of depth {self.layers} with a probe "
                f"on each layer; confirmed by separate fine-tunes: {', '.join(map(str, self.confirmed))} "
                f"({'; '.join(self.steps)}); {screened} only screened; {self.seconds:.0f} s of training, "
                f"{self.cost_vs_full:.1f}x one fine-tune of depth {self.layers} (every depth apart: about {grid:.1f}x)")


def screen_intervals(screen: Candidate, metric: str, confidence: float | None) -> tuple[dict[int, Interval], int]:
    """Each screened depth's probe minus the screen (depth L) on the validation rows, with the paired bootstrap
    interval at `confidence` (the rule's): how finely these rows resolve a depth below L; and how many rows. Nothing
    with `confidence` null or without saved predictions."""
    if confidence is None or not screen.screen:
        return {}, 0
    predictions = load_predictions([screen, *screen.screen])
    if isinstance(predictions, str):
        return {}, 0
    arms = {(c.family, c.depth): [c.seed] for c in [screen, *screen.screen]}
    intervals = compare_to_best(predictions, arms, (screen.family, screen.depth), metric, confidence)
    return {depth: interval for (_, depth), interval in intervals.items() if depth != screen.depth}, predictions.rows


def first_guess(screen: list[Candidate], reference: Candidate, metric: str, tolerance: float,
                intervals: dict[int, Interval] | None = None) -> int:
    """Where the screen points: the cheapest depth the rule could tie with the reference if its separate fine-tune
    made up the probes' own shortfall (how far the probe of depth L−1 falls below the reference): its probe's mean,
    lifted by the shortfall, within the tolerance of the reference's metric, and, with the screen's `intervals`,
    the lifted lower end of its interval too."""
    if not screen:
        return reference.depth
    best = reference.metrics[metric]
    shortfall = max(0.0, best - screen[-1].metrics[metric])
    intervals = intervals or {}

    def could_tie(probe: Candidate) -> bool:
        found = intervals.get(probe.depth)
        return within(probe.metrics[metric] - best + shortfall, tolerance,
                      found.low + shortfall if found is not None else None)

    close = [c.depth for c in screen if could_tie(c)]
    return min(close) if close else reference.depth


def unresolvable(intervals: dict[int, Interval], rows: int, tolerance: float, open_depths: list[int] | None = None,
                 confirmed: dict[int, float] | None = None) -> str | None:
    """Why no separate fine-tune of the `open_depths` (every depth below L by default) could be shown within the
    tolerance, or None when one could.

    Each depth's interval against depth L is estimated from its probe's (the screen's `intervals`), widened by how
    much wider the intervals of the separate fine-tunes `confirmed` so far (depth -> half-width against the best)
    have been than their probes' (the mean ratio). Before any is confirmed the probe's own interval stands: a probe
    reads depth L's own lower layers and agrees with it more than a network fine-tuned apart does, so its interval
    is the narrower of the two. When even the narrowest estimate is wider than the tolerance, a depth that matched
    L's mean would still not be shown within it."""
    depths = [d for d in (intervals if open_depths is None else open_depths) if d in intervals]
    if not depths:
        return None
    seen = {d: (half, intervals[d].half_width) for d, half in (confirmed or {}).items()
            if d in intervals and intervals[d].half_width > 0}
    widen = statistics.fmean(half / probe for half, probe in seen.values()) if seen else 1.0
    depth = min(depths, key=lambda d: (intervals[d].half_width, -d))
    estimate = widen * intervals[depth].half_width
    needed = rows_to_resolve(rows, estimate, tolerance)
    if needed is None:
        return None
    layers = max(intervals) + 1
    if not seen:
        return (f"no depth below {layers} confirmed: on the {rows:,} validation rows even the screen's narrowest "
                f"interval, depth {depth}'s probe against depth {layers}, is ±{estimate:.3f}, wider than the "
                f"{tolerance:.3g} tolerance, so none could be shown within it; about {needed:,} rows would resolve it")
    named = f"depth {depths[0]}" if len(depths) == 1 else f"depths {_depth_ranges(depths)}"
    shown = ", ".join(f"depth {d}'s ±{half:.3f} against ±{probe:.3f}" for d, (half, probe) in seen.items())
    return (f"{named} not confirmed: the separate fine-tunes' intervals have been {widen:.2f}x their probes', "
            f"{shown}, so on the {rows:,} validation rows even the narrowest left, depth {depth}'s, would be about "
            f"±{estimate:.3f}, wider than the {tolerance:.3g} tolerance, and none could be shown within it; about "
            f"{needed:,} rows would resolve it")


def tied(decision: Decision, family: str, depth: int) -> bool:
    """Whether a confirmed depth may ship in the best confirmed one's place: the rule's own verdict on it."""
    return score_of(decision, family, depth).may_ship


# What a confirmation that did not tie showed: the rows did not show it within the tolerance (it may be worse by
# more, or the rows too few to tell; the decision's sentence says which).
NOT_TIED = "not shown within the tolerance"


def next_depth(low: int, high: int, guess: int | None) -> int:
    """The next depth to confirm in the open range [low, high): the screen's guess first, then the middle."""
    if guess is not None and low <= guess < high:
        return guess
    return (low + high) // 2


class Bisection:
    """The search's open range of depths, narrowed one confirmation at a time: depth `layers` is confirmed already
    (the screen); what is not shown within the tolerance rules out every shallower depth, what is tied every
    deeper one. `high` is the cheapest depth tied with the best so far."""

    def __init__(self, layers: int, guess: int | None) -> None:
        self.low, self.high, self.guess = 1, layers, guess
        self.steps: list[str] = []

    def next(self) -> int | None:
        """The depth to confirm next, or None when the range is closed."""
        return next_depth(self.low, self.high, self.guess) if self.low < self.high else None

    def close(self, why: str) -> None:
        """End the search, for the reason given: `high` stays the cheapest depth tied with the best."""
        self.low = self.high
        self.steps.append(why)

    def record(self, depth: int, verdict: bool | None) -> None:
        """What confirming `depth` showed: tied with the best (True), not shown within (False), failed (None)."""
        self.guess = None
        if verdict:
            self.high = depth
        else:
            self.low = depth + 1
        self.steps.append(f"depth {depth}: " + ("tied with the best" if verdict else "failed" if verdict is None
                                                else NOT_TIED))


def search(layers: int, guess: int | None, confirm: Callable[[int], bool | None]) -> tuple[int, list[str]]:
    """The cheapest depth tied with the best, and each step, with `confirm(depth)` saying whether a depth trained
    on its own is tied with the best confirmed one (None: it failed): the Bisection run to its end in one go. The
    search strategy (selection.strategies) runs it a step at a time instead, training between steps."""
    bisection = Bisection(layers, guess)
    while (depth := bisection.next()) is not None:
        bisection.record(depth, confirm(depth))
    return bisection.high, bisection.steps


def _depth_ranges(depths: list[int]) -> str:
    """`1, 5` or `1-2, 5`: the depths as runs of consecutive ones."""
    runs: list[list[int]] = []
    for depth in sorted(depths):
        if runs and depth == runs[-1][-1] + 1:
            runs[-1].append(depth)
        else:
            runs.append([depth])
    return ", ".join(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)
