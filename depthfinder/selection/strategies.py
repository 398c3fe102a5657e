"""How a sweep learns one family's depths: a strategy says what to train next, from the candidates so far.

The flow (flows/sweep.py) asks a strategy for its next step, trains the step's (depth, seed)s to the step's epochs,
records the results, and asks again until the strategy is done. It never asks which strategy it holds, and nothing
here calls back into it. A strategy is one class with a unique `name`, the setting `sweep.strategy`:

- `grid` (GridStrategy): every depth fine-tuned on its own, by successive halving when the sweep asks for it
  (selection.halving), and candidates still rising at the end extended when the sweep asks for that;
- `search` (SearchStrategy): one fine-tune of the deepest depth with a probe on each layer screens every depth,
  then separate fine-tunes confirm the depths the screen cannot rule out (selection.search).

Either flags a candidate still rising when its budget ended (`Candidate.not_converged`, by the convergence gain).
A new strategy is one class here, registered under its name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import ClassVar, Literal

from depthfinder.encoder.config import FamilyName
from depthfinder.evidence.bootstrap import Interval
from depthfinder.selection.candidate import Candidate, still_rising
from depthfinder.selection.decision import score_of
from depthfinder.selection.halving import Rung, halve, outclassed
from depthfinder.selection.rule import choose_depth
from depthfinder.selection.search import NOT_TIED, Bisection, Search, first_guess, screen_intervals, tied, unresolvable
from depthfinder.selection.settings import SelectionRule

StrategyName = Literal["grid", "search"]  # the names of STRATEGIES (a test holds the two together)
DepthSeed = tuple[int, int]


@dataclass(frozen=True)
class SweepPlan:
    """What one family's sweep may spend, and the window its curves are judged over (by the rule's
    `halving_margin` and `convergence_gain`)."""

    seeds: list[int]
    rungs: list[int]  # epochs in all at each halving rung before the last; empty: no halving
    max_epochs: int
    window: int  # epochs a curve is judged over: the recipe's patience
    checks: list[int] = field(default_factory=list)  # epochs at which depths outclassed by cheaper families stop
    extension: int = 0  # epochs more for a candidate still rising at max_epochs; 0: none


@dataclass(frozen=True)
class Step:
    """What a strategy asks for next: first record `pruned` as pruned and log `notes` and `warnings` (what it
    decided since the step before); then train every (depth, seed) of `grids` to `epochs` in all, continuing from
    `previous` where it holds one, with a probe on every layer when `probes`. A step may train nothing."""

    grids: list[DepthSeed]
    epochs: int
    probes: bool = False
    previous: dict[DepthSeed, Candidate] = field(default_factory=dict)
    pruned: list[Candidate] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


class Strategy(ABC):
    """One family's sweep: its steps in turn, each made from the results recorded before it was asked for."""

    name: ClassVar[StrategyName]

    def __init__(self, rule: SelectionRule, family: FamilyName, depths: list[int], plan: SweepPlan,
                 reference: list[Candidate] = ()) -> None:
        self.rule, self.family, self.depths, self.plan = rule, family, sorted(depths), plan
        self.reference = [c for c in reference if c.usable]  # the cheaper families' finished candidates
        self.latest: dict[DepthSeed, Candidate] = {}  # each (depth, seed)'s latest result
        self.rungs: list[Rung] = []  # what successive halving did
        self._steps = self.steps()
        self._asked: Step | None = None
        self._pruned: list[Candidate] = []
        self._notes: list[str] = []
        self._warnings: list[str] = []

    @abstractmethod
    def steps(self) -> Iterator[Step]:
        """The steps, each made when asked for (`next_step`), from `latest`."""

    @abstractmethod
    def candidates(self) -> list[Candidate]:
        """The family's candidates once done, in (depth, seed) order."""

    @property
    def search(self) -> Search | None:
        """What the search screened and confirmed; None for a strategy that does not search."""
        return None

    def next_step(self) -> Step | None:
        """What to do next, or None when this family's sweep is done; `record` each step's results before asking
        again."""
        step = next(self._steps, None)
        if step is None and (self._pruned or self._notes or self._warnings):
            step = Step([], self.plan.max_epochs)  # what was decided after the last training
        if step is not None:
            step = replace(step, pruned=self._pruned, notes=self._notes, warnings=self._warnings)
            self._pruned, self._notes, self._warnings = [], [], []
        self._asked = step
        return step

    def record(self, results: dict[DepthSeed, Candidate]) -> None:
        """The results of the step last asked for, each flagged when still rising at the end of its budget (by the
        convergence gain); a candidate that failed in an extension keeps what it had."""
        extension = self._asked is not None and self._asked.epochs > self.plan.max_epochs
        for grid, candidate in results.items():
            if candidate.status == "failed" and extension:
                self._warnings.append(f"{candidate.name} keeps its result at {self.plan.max_epochs} epochs")
                continue
            rising = candidate.usable and still_rising(candidate.history, self.plan.window, self.rule.convergence_gain)
            self.latest[grid] = candidate.model_copy(update={"not_converged": rising})

    def _train(self, grids: list[DepthSeed], epochs: int, probes: bool = False) -> Step:
        return Step(grids, epochs, probes, previous={grid: self.latest[grid] for grid in grids if grid in self.latest})


STRATEGIES: dict[str, type[Strategy]] = {}


def register(strategy: type[Strategy]) -> type[Strategy]:
    """Add a strategy class under its name (a class decorator); ValueError on a name already taken."""
    if strategy.name in STRATEGIES:
        raise ValueError(f"duplicate strategy name {strategy.name!r}: {strategy.__name__} and "
                         f"{STRATEGIES[strategy.name].__name__}")
    STRATEGIES[strategy.name] = strategy
    return strategy


def strategy_named(name: str) -> type[Strategy]:
    """The strategy class called `name`; ValueError naming the ones there are."""
    if name not in STRATEGIES:
        raise ValueError(f"no strategy {name!r}; strategies: {', '.join(STRATEGIES)}")
    return STRATEGIES[name]


@register
class GridStrategy(Strategy):
    """Every depth fine-tuned on its own: through the halving rungs the plan has (each keeps the better half by the
    rule, and the late bloomers; and, after cheaper families, stops the depths they outclass but its cheapest), the
    survivors to the end, then, with an extension, the candidates still rising."""

    name: ClassVar[StrategyName] = "grid"

    def steps(self) -> Iterator[Step]:
        depths, end = self.depths, self.plan.max_epochs
        checks = self.plan.checks if self.reference else []
        for epochs in [*sorted({*self.plan.rungs, *checks} - {end}), end]:
            unfinished = [grid for grid in self._grids(depths)
                          if not (grid in self.latest and self.latest[grid].finished)]
            if unfinished:
                yield self._train(unfinished, epochs)
            if epochs < end and depths:
                depths = self._halve(depths, epochs, halving=epochs in self.plan.rungs).kept
        rising = [grid for grid in self._grids(depths) if self.latest[grid].usable and self.latest[grid].not_converged]
        if self.plan.extension and rising:
            self._notes.append(f"{', '.join(self.latest[grid].name for grid in rising)} still improving at the end "
                               f"of the budget: {self.plan.extension} epochs more")
            yield self._train(rising, end + self.plan.extension)

    def candidates(self) -> list[Candidate]:
        return [self.latest[grid] for grid in self._grids(self.depths) if grid in self.latest]  # a budget stops it

    def _grids(self, depths: list[int]) -> list[DepthSeed]:
        return [(depth, seed) for depth in depths for seed in self.plan.seeds]

    def _halve(self, depths: list[int], epochs: int, halving: bool = True) -> Rung:
        """A rung over `depths` at `epochs` (halving, or only the cheaper families' check): the rest pruned (here,
        and to be recorded by the flow)."""
        candidates = [self.latest[grid] for grid in self._grids(depths)]
        if halving:
            rung = halve(candidates, self.rule, self.family, epochs, self.plan.window, self.rule.halving_margin)
        else:
            rung = Rung(family=self.family, epochs=epochs, depths=depths, kept=depths)
        gone = [d for d in outclassed(candidates, self.reference, self.rule, self.plan.window) if d in rung.kept]
        if gone == rung.kept:  # never the family's last: its cheapest trains on, to say what the family gives
            gone = gone[1:]
        if gone:
            rung = rung.model_copy(update={"kept": [d for d in rung.kept if d not in gone], "outclassed": gone})
            self._notes.append(f"{self.family} depths {gone} stop at {epochs} epochs: a cheaper family's candidate is "
                               "already as good (each costs more, and even its projected best leaves that one within "
                               "the tolerance)")
        pruned = [c for c in candidates if c.usable and c.depth not in rung.kept]
        self.latest |= {(c.depth, c.seed): c.model_copy(update={"status": "pruned"}) for c in pruned}
        self._pruned += pruned
        if rung.late_bloomers:
            self._notes.append(f"successive halving keeps depths {rung.late_bloomers} still rising fast enough to "
                               "catch up")
        if pruned and halving:
            pruned_depths = sorted({c.depth for c in pruned})
            self._notes.append(f"successive halving keeps depths {rung.kept}, prunes {pruned_depths}")
        if halving or gone:
            self.rungs.append(rung)
        return rung


@register
class SearchStrategy(Strategy):
    """The screen (the deepest depth L with probes, the first seed; its other seeds without), then separate
    fine-tunes of the depths it points to, until the cheapest depth tied with the best is found."""

    name: ClassVar[StrategyName] = "search"

    def __init__(self, rule: SelectionRule, family: FamilyName, depths: list[int], plan: SweepPlan,
                 reference: list[Candidate] = ()) -> None:
        super().__init__(rule, family, depths, plan, reference)
        self.layers = max(self.depths)
        self.bisection: Bisection | None = None  # once the screen has trained

    def steps(self) -> Iterator[Step]:
        layers, seeds, end = self.layers, self.plan.seeds, self.plan.max_epochs
        yield self._train([(layers, seeds[0])], end, probes=True)
        if seeds[1:]:
            yield self._train([(layers, seed) for seed in seeds[1:]], end)
        screen = self.latest[layers, seeds[0]]
        if not screen.usable:
            return
        intervals, rows = screen_intervals(screen, self.rule.metric, self.rule.confidence)
        self.bisection = Bisection(layers, first_guess(screen.screen, screen, self.rule.metric, self.rule.tolerance,
                                                       intervals))
        confirmed: dict[int, float] = {}  # each confirmed depth's interval half-width against the best
        while (depth := self.bisection.next()) is not None:
            open_depths = list(range(self.bisection.low, self.bisection.high))
            if why := unresolvable(intervals, rows, self.rule.tolerance, open_depths, confirmed):
                self.bisection.close(why)
                self._notes.append(f"search: {self.family} {why}")
                break
            yield self._train([(depth, seed) for seed in seeds], end)
            verdict, interval = self._verdict(depth)
            self.bisection.record(depth, verdict)
            if interval is not None:
                confirmed[depth] = interval.half_width

    def _verdict(self, depth: int) -> tuple[bool | None, Interval | None]:
        """Whether the confirmed `depth` may ship in the best confirmed one's place, by the rule (None when a seed
        of it failed), and its interval against the best."""
        if not all(self.latest[depth, seed].usable for seed in self.plan.seeds):
            return None, None
        decision = choose_depth([c for c in self.latest.values() if c.usable], self.rule)
        verdict = tied(decision, self.family, depth)
        self._notes.append(f"search: {self.family} depth {depth} {'tied with the best' if verdict else NOT_TIED}")
        return verdict, score_of(decision, self.family, depth).vs_best

    def _screened(self) -> list[Candidate]:
        """The screen's probes of the depths no separate fine-tune confirmed."""
        screen = self.latest.get((self.layers, self.plan.seeds[0]))
        trained = {depth for depth, _ in self.latest}
        return [c for c in (screen.screen if screen else []) if c.depth not in trained]

    def candidates(self) -> list[Candidate]:
        return sorted([*self.latest.values(), *self._screened()], key=lambda c: (c.depth, c.seed))

    @property
    def search(self) -> Search:
        screen = self.latest.get((self.layers, self.plan.seeds[0]))
        full = screen.cost.train_seconds if screen is not None and screen.cost and screen.cost.train_seconds else 0.0
        return Search(family=self.family, layers=self.layers, screened=[c.depth for c in self._screened()],
                      confirmed=sorted({depth for depth, _ in self.latest}),
                      steps=self.bisection.steps if self.bisection else [],
                      seconds=sum(c.cost.train_seconds or 0.0 for c in self.latest.values() if c.cost),
                      full_seconds=full)
