"""A strategy, asked for its next step after given results, says what to train next: no Prefect, no training.

The grid asks for every depth, then (halving) the kept half continuing from their rung, then an extension of the
candidates still rising; the search asks for the screen, then the depths it points to, one at a time. Each judges
by its own setting: the search by the depth rule's tolerance, halving's late bloomers by the halving margin,
convergence by the convergence gain.
"""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import numpy as np
import pytest

from depthfinder.evidence.bootstrap import metric_of, save_predictions
from depthfinder.selection.candidate import Candidate, Cost
from depthfinder.selection.halving import Rung
from depthfinder.selection.settings import SelectionRule
from depthfinder.selection.strategies import (
    STRATEGIES,
    GridStrategy,
    SearchStrategy,
    StrategyName,
    SweepPlan,
    register,
    strategy_named,
)

RULE = SelectionRule(metric="macro_f1", tolerance=0.01)
SEARCH_PLAN = SweepPlan(seeds=[1], rungs=[], max_epochs=3, window=5)  # a search of one seed, to three epochs


def result(depth: int, history: list[float], family: str = "scratch", finished: bool = False,
           screen: list[Candidate] | None = None) -> Candidate:
    """A trained candidate whose cost grows with depth and whose metric is the best of its curve."""
    return Candidate(depth=depth, family=family, status="trained", metrics={"macro_f1": max(history)},
                     history=history, epochs=len(history), finished=finished, screen=screen or [],
                     cost=Cost(flops_per_example=depth * 1e6, train_seconds=10.0 * depth))


def test_strategies_are_chosen_by_name_and_a_name_is_taken_once() -> None:
    assert strategy_named("grid") is GridStrategy and strategy_named("search") is SearchStrategy
    assert set(get_args(StrategyName)) == set(STRATEGIES)  # the config's choices are the registered strategies
    with pytest.raises(ValueError, match="no strategy 'halving'; strategies: grid, search"):
        strategy_named("halving")

    class Another(GridStrategy):
        name = "grid"

    with pytest.raises(ValueError, match="duplicate strategy name 'grid': Another and GridStrategy"):
        register(Another)
    assert STRATEGIES["grid"] is GridStrategy


def test_the_grid_halves_then_trains_the_kept_half_on_from_its_rung_and_prunes_the_rest() -> None:
    grid = GridStrategy(RULE, "scratch", [6, 1, 4, 2], SweepPlan(seeds=[1], rungs=[2], max_epochs=6, window=2))

    first = grid.next_step()
    assert (first.grids, first.epochs, first.previous, first.pruned, first.probes) == (
        [(1, 1), (2, 1), (4, 1), (6, 1)], 2, {}, [], False)
    grid.record({(1, 1): result(1, [0.4, 0.5]), (2, 1): result(2, [0.5, 0.6]), (4, 1): result(4, [0.7, 0.8]),
                 (6, 1): result(6, [0.7, 0.81])})
    second = grid.next_step()

    # depth 4 is within the tolerance of depth 6 and cheaper: the rule's rank is 4, 6, 2, 1; the better half goes on.
    assert (second.grids, second.epochs) == ([(4, 1), (6, 1)], 6)
    assert second.previous == {(4, 1): grid.latest[4, 1], (6, 1): grid.latest[6, 1]}
    assert second.previous[4, 1].history == [0.7, 0.8]  # continued from its rung, not trained again
    assert [c.depth for c in second.pruned] == [1, 2]
    assert second.notes == ["successive halving keeps depths [4, 6], prunes [1, 2]"]
    grid.record({(4, 1): result(4, [0.7, 0.8, 0.85], finished=True), (6, 1): result(6, [0.7, 0.81, 0.84],
                                                                                     finished=True)})
    assert grid.next_step() is None
    assert [(c.depth, c.status, c.epochs) for c in grid.candidates()] == [
        (1, "pruned", 2), (2, "pruned", 2), (4, "trained", 3), (6, "trained", 3)]
    assert grid.rungs == [Rung(family="scratch", epochs=2, depths=[1, 2, 4, 6], kept=[4, 6])]


# One rung of four epochs (windows of two): depths 1 and 2 are the better half; depth 4 still rises fast and is
# projected to 0.58 + 0.28 = 0.86 against the weakest kept depth's 0.80 + 0.10 = 0.90, 0.04 short.
RUNG = {1: [0.50, 0.70, 0.78, 0.80], 2: [0.40, 0.62, 0.76, 0.79], 4: [0.20, 0.30, 0.45, 0.58],
        6: [0.20, 0.25, 0.30, 0.34]}


def halved(rule: SelectionRule, halving_margin: float) -> list[int]:
    """The depths a rung of RUNG keeps under `rule` and `halving_margin`."""
    plan = SweepPlan(seeds=[1], rungs=[4], max_epochs=8, window=2)
    grid = GridStrategy(rule.model_copy(update={"halving_margin": halving_margin}), "scratch", list(RUNG), plan)
    grid.next_step()
    grid.record({(depth, 1): result(depth, history) for depth, history in RUNG.items()})
    return sorted(depth for depth, _ in grid.next_step().grids)


def test_late_bloomers_follow_the_halving_margin_not_the_depth_tolerance() -> None:
    assert halved(RULE.model_copy(update={"tolerance": 0.05}), halving_margin=0.01) == [1, 2]  # loose tie: no help
    assert halved(RULE.model_copy(update={"tolerance": 0.0}), halving_margin=0.05) == [1, 2, 4]
    assert halved(RULE, halving_margin=0.04) == [1, 2, 4]  # exactly the margin short: kept, as the rule counts it


FLAT = [0.30, 0.70, 0.80, 0.804, 0.801, 0.806]  # +0.006 over its last three epochs
RISING = [0.30, 0.50, 0.60, 0.66, 0.71, 0.75]


def test_convergence_follows_the_convergence_gain_and_an_extension_trains_only_what_still_rises() -> None:
    for tolerance, gain, flat_rising in ((0.05, 0.005, True), (0.001, 0.01, False)):
        plan = SweepPlan(seeds=[1], rungs=[], max_epochs=6, window=3, extension=2)
        rule = RULE.model_copy(update={"tolerance": tolerance, "convergence_gain": gain})
        grid = GridStrategy(rule, "scratch", [1, 2], plan)
        assert grid.next_step().grids == [(1, 1), (2, 1)]
        grid.record({(1, 1): result(1, FLAT), (2, 1): result(2, RISING)})

        assert (grid.latest[1, 1].not_converged, grid.latest[2, 1].not_converged) == (flat_rising, True)
        extension = grid.next_step()
        assert extension.epochs == 8 and extension.grids == [(1, 1), (2, 1)][0 if flat_rising else 1:]
        assert extension.notes[0].endswith("still improving at the end of the budget: 2 epochs more")


def test_a_candidate_that_fails_in_its_extension_keeps_what_it_had_and_says_so() -> None:
    plan = SweepPlan(seeds=[1], rungs=[], max_epochs=6, window=3, extension=2)
    grid = GridStrategy(RULE, "scratch", [2], plan)
    grid.next_step()
    grid.record({(2, 1): result(2, RISING)})
    extension = grid.next_step()
    assert extension.previous == {(2, 1): grid.latest[2, 1]}

    grid.record({(2, 1): Candidate(depth=2, status="failed", error="out of memory")})

    last = grid.next_step()
    assert (last.grids, last.warnings) == ([], ["depth 2 seed 1 keeps its result at 6 epochs"])
    assert grid.next_step() is None
    assert [(c.status, c.epochs) for c in grid.candidates()] == [("trained", 6)]


def probes(values: list[float]) -> list[Candidate]:
    return [Candidate(depth=k, family="pretrained", status="screened", metrics={"macro_f1": v})
            for k, v in enumerate(values, start=1)]


# Probes of depths 1-5 on the depth-6 fine-tune, which scores 0.94: depth 5's probe falls 0.02 short of it.
SCREEN = result(6, [0.9, 0.94], family="pretrained", screen=probes([0.58, 0.76, 0.89, 0.91, 0.92]))


def test_the_search_asks_for_the_screen_then_one_depth_at_a_time_from_where_it_points() -> None:
    search = SearchStrategy(RULE, "pretrained", [1, 2, 3, 4, 5, 6], SEARCH_PLAN)

    screen = search.next_step()
    assert (screen.grids, screen.epochs, screen.probes) == ([(6, 1)], 3, True)
    search.record({(6, 1): SCREEN})
    asked, told = [], {4: 0.935, 2: 0.80, 3: 0.90}  # depth 4 within the tolerance of depth 6; 2 and 3 not
    while (step := search.next_step()) is not None:
        assert not step.probes
        asked.append((step.grids, step.notes))
        for depth, _ in step.grids:
            search.record({(depth, 1): result(depth, [told[depth]], family="pretrained")})

    assert asked == [  # the screen points at 4 (0.91 >= 0.94 - 0.01 - 0.02), then the range [1, 4) is halved
        ([(4, 1)], []),
        ([(2, 1)], ["search: pretrained depth 4 tied with the best"]),
        ([(3, 1)], ["search: pretrained depth 2 not shown within the tolerance"]),
        ([], ["search: pretrained depth 3 not shown within the tolerance"]),
    ]
    assert [(c.depth, c.status) for c in search.candidates()] == [
        (1, "screened"), (2, "trained"), (3, "trained"), (4, "trained"), (5, "screened"), (6, "trained")]
    record = search.search
    assert (record.confirmed, record.screened, record.layers) == ([2, 3, 4, 6], [1, 5], 6)
    assert record.steps == ["depth 4: tied with the best", "depth 2: not shown within the tolerance",
                            "depth 3: not shown within the tolerance"]
    assert (record.seconds, record.full_seconds) == (150.0, 60.0)


def test_the_search_points_by_the_depth_tolerance_and_stops_when_the_screen_fails() -> None:
    plan = SweepPlan(seeds=[1], rungs=[], max_epochs=3, window=5)
    rule = RULE.model_copy(update={"tolerance": 0.03, "halving_margin": 0.5, "convergence_gain": 0.5})
    search = SearchStrategy(rule, "pretrained", [1, 2, 3, 4, 5, 6], plan)
    search.next_step()
    search.record({(6, 1): SCREEN})
    assert search.next_step().grids == [(3, 1)]  # 0.89 >= 0.94 - 0.03 - 0.02; other margins play no part

    failed = SearchStrategy(RULE, "pretrained", [1, 2, 3], SweepPlan(seeds=[1, 2], rungs=[], max_epochs=3, window=5))
    assert failed.next_step().grids == [(3, 1)]
    failed.record({(3, 1): Candidate(depth=3, family="pretrained", status="failed", error="no")})
    assert failed.next_step().grids == [(3, 2)]  # the screen's other seeds, without probes
    failed.record({(3, 2): result(3, [0.9], family="pretrained")})
    assert failed.next_step() is None
    assert failed.search.steps == [] and failed.search.screened == []


def saved(folder: Path, true: np.ndarray, depth: int, predicted: np.ndarray, status: str = "trained") -> Candidate:
    """A pretrained candidate whose validation predictions are saved in `folder`, its metric computed from them."""
    path = save_predictions(folder / f"depth-{depth}-{status}.npz", true, predicted)
    return Candidate(depth=depth, family="pretrained", status=status, predictions=str(path), epochs=3,
                     metrics={"macro_f1": metric_of(true, predicted, "macro_f1")},
                     cost=Cost(flops_per_example=depth * 1e6, train_seconds=10.0 * depth))


def screen_on(folder: Path, rows: int, shares: list[float]) -> tuple[Candidate, np.ndarray, np.ndarray]:
    """A depth-6 screen with its saved validation predictions on `rows` rows (right on 94% of them), whose probe
    of depth k disagrees with it on a share `shares[k - 1]` of them; and the rows' true and depth 6's classes."""
    rng = np.random.default_rng(3)
    true = rng.integers(0, 2, rows)
    deep = np.where(rng.random(rows) < 0.94, true, 1 - true)
    probes = [saved(folder, true, k, np.where(rng.random(rows) < share, 1 - deep, deep), status="screened")
              .model_copy(update={"cost": None}) for k, share in enumerate(shares, start=1)]
    return saved(folder, true, 6, deep).model_copy(update={"screen": probes}), true, deep


def test_the_search_confirms_nothing_when_the_rows_could_not_show_any_cheaper_depth_within(tmp_path: Path) -> None:
    search = SearchStrategy(RULE, "pretrained", [1, 2, 3, 4, 5, 6], SEARCH_PLAN)
    search.next_step()
    # 300 rows, depth 5's probe off on 4% of them: its paired interval against depth 6 is about ±0.02.
    search.record({(6, 1): screen_on(tmp_path, 300, [0.3, 0.2, 0.1, 0.06, 0.04])[0]})

    last = search.next_step()

    assert last.grids == []
    assert last.notes == ["search: pretrained no depth below 6 confirmed: on the 300 validation rows even the "
                          "screen's narrowest interval, depth 5's probe against depth 6, is ±0.020, wider than the "
                          "0.01 tolerance, so none could be shown within it; about 1,300 rows would resolve it"]
    assert search.next_step() is None
    record = search.search
    assert (record.confirmed, record.screened) == ([6], [1, 2, 3, 4, 5])
    assert record.steps == [last.notes[0].removeprefix("search: pretrained ")]


def test_the_search_confirms_where_the_rows_can_resolve_the_tolerance(tmp_path: Path) -> None:
    search = SearchStrategy(RULE, "pretrained", [1, 2, 3, 4, 5, 6], SEARCH_PLAN)
    search.next_step()
    # 5,000 rows, depth 5's probe off on 0.5% of them: its interval is about ±0.002, about 0.004 below depth 6.
    search.record({(6, 1): screen_on(tmp_path, 5_000, [0.3, 0.2, 0.1, 0.06, 0.005])[0]})

    step = search.next_step()

    assert step.grids == [(5, 1)] and step.notes == []  # depth 4's probe, 0.06 off, is not within


def wide(depth: int, history: list[float]) -> Candidate:
    """A candidate of a costlier checkpoint: ten times the FLOPs of a small one's at the same depth."""
    return result(depth, history, family="wide").model_copy(
        update={"cost": Cost(flops_per_example=depth * 1e7, train_seconds=100.0 * depth)})


def test_a_costlier_checkpoints_depths_stop_at_the_first_rung_once_a_cheaper_one_is_as_good() -> None:
    small = [result(2, [0.85, 0.90], family="small", finished=True)]  # finished, cheaper than any wide depth
    plan = SweepPlan(seeds=[1], rungs=[], checks=[2], max_epochs=6, window=2)
    grid = GridStrategy(RULE, "wide", [1, 2, 4], plan, reference=small)

    assert grid.next_step().epochs == 2  # no halving of its own (three depths), but a check against the cheaper
    grid.record({(1, 1): wide(1, [0.5, 0.6]), (2, 1): wide(2, [0.86, 0.88]), (4, 1): wide(4, [0.80, 0.95])})
    step = grid.next_step()

    # depth 1 (0.6 + its gain 0.1 once more) and depth 2 (0.88 + 0.02) cannot beat small's 0.90 by more than the
    # tolerance; depth 4 (0.95 + 0.15) may: it goes on, and only it
    assert (step.grids, step.epochs) == ([(4, 1)], 6)
    assert sorted(c.depth for c in step.pruned) == [1, 2]
    (rung,) = grid.rungs
    assert (rung.family, rung.epochs, rung.outclassed, rung.kept) == ("wide", 2, [1, 2], [4])
    assert any("stop at 2 epochs: a cheaper family's candidate is already as good" in note for note in step.notes)


def test_a_family_outclassed_whole_keeps_its_cheapest_depth_to_say_what_it_gives() -> None:
    small = [result(2, [0.85, 0.95], family="small", finished=True)]
    grid = GridStrategy(RULE, "wide", [1, 2, 4], SweepPlan(seeds=[1], rungs=[], checks=[2], max_epochs=6, window=2),
                        reference=small)
    grid.next_step()
    grid.record({(1, 1): wide(1, [0.5, 0.6]), (2, 1): wide(2, [0.86, 0.88]), (4, 1): wide(4, [0.88, 0.9])})

    assert grid.next_step().grids == [(1, 1)]  # 4 (0.9 + 0.02) cannot beat 0.95 by more than 0.01 either
    assert grid.rungs[0].outclassed == [2, 4]


def test_without_a_cheaper_family_or_with_halving_off_nothing_is_outclassed() -> None:
    plan = SweepPlan(seeds=[1], rungs=[], checks=[2], max_epochs=6, window=2)
    alone = GridStrategy(RULE, "wide", [1, 2, 4], plan)
    assert alone.next_step().epochs == 6  # no reference: straight to the end
    off = GridStrategy(RULE, "wide", [1, 2, 4], SweepPlan(seeds=[1], rungs=[], max_epochs=6, window=2),
                       reference=[result(2, [0.9], family="small", finished=True)])
    assert off.next_step().epochs == 6


def test_the_search_stops_once_separate_fine_tunes_show_the_rows_cannot_resolve_the_depths_left(
        tmp_path: Path) -> None:
    search = SearchStrategy(RULE, "pretrained", [1, 2, 3, 4, 5, 6], SEARCH_PLAN)
    search.next_step()
    # 2,000 rows; the probes of depths 4 and 5 are off on about 1% of them: intervals of about ±0.004, narrow enough.
    screen, true, deep = screen_on(tmp_path, 2_000, [0.3, 0.2, 0.1, 0.012, 0.01])
    search.record({(6, 1): screen})
    assert search.next_step().grids == [(4, 1)]
    # Depth 4 fine-tuned apart is as good as depth 6 but disagrees with it on 12% of the rows (every row depth 6
    # gets wrong, and as many it gets right): its interval is about ±0.013, three times its probe's.
    wrong = np.flatnonzero(deep != true)
    right = np.random.default_rng(4).choice(np.flatnonzero(deep == true), len(wrong), replace=False)
    apart = deep.copy()
    apart[np.concatenate([wrong, right])] ^= 1
    search.record({(4, 1): saved(tmp_path, true, 4, apart)})

    last = search.next_step()

    assert last.grids == [] and last.notes[0] == "search: pretrained depth 4 not shown within the tolerance"
    assert last.notes[1].startswith("search: pretrained depth 5 not confirmed: the separate fine-tunes' intervals "
                                    "have been ")  # its probe's interval alone (about ±0.004) would confirm it
    assert ", wider than the 0.01 tolerance, and none could be shown within it; about " in last.notes[1]
    assert search.next_step() is None
    assert (search.search.confirmed, search.search.screened) == ([4, 6], [1, 2, 3, 5])
