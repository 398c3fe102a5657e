"""The search finds the cheapest depth tied with the best from where the screen points, in about log2(L) steps,
and the screen's guess widens the tolerance by the probes' own shortfall."""

from __future__ import annotations

import math

import pytest

from depthfinder.evidence.bootstrap import Interval
from depthfinder.selection.candidate import Candidate
from depthfinder.selection.search import first_guess, search, unresolvable


@pytest.mark.parametrize("layers", [2, 6, 12, 24])
def test_the_search_finds_the_cheapest_tied_depth_from_any_guess_in_about_log2_steps(layers: int) -> None:
    for answer in range(1, layers + 1):
        for guess in [None, *range(1, layers + 1)]:
            asked = []

            def confirm(depth: int, answer: int = answer, asked: list = asked) -> bool:
                asked.append(depth)
                return depth >= answer  # quality does not fall with depth: tied from the answer on

            found, steps = search(layers, guess, confirm)

            assert found == answer, (layers, answer, guess)
            assert len(asked) == len(set(asked)) == len(steps) <= math.ceil(math.log2(layers)) + 1
            assert layers not in asked  # the screen's own depth is confirmed already


def test_a_depth_that_fails_counts_as_not_tied_and_the_search_goes_deeper() -> None:
    found, steps = search(6, 3, lambda depth: None if depth == 3 else depth >= 2)

    assert found == 4 and steps == ["depth 3: failed", "depth 5: tied with the best", "depth 4: tied with the best"]


def screened(values: list[float]) -> list[Candidate]:
    return [Candidate(depth=k, status="screened", metrics={"macro_f1": v}) for k, v in enumerate(values, start=1)]


def test_the_screen_points_at_the_cheapest_probe_within_the_tolerance_and_the_probes_shortfall() -> None:
    reference = Candidate(depth=6, status="trained", metrics={"macro_f1": 0.94})

    # Probes of depths 1-5 under a separate depth-6 fine-tune: depth 5's probe falls 0.02 short of it.
    guess = first_guess(screened([0.58, 0.76, 0.89, 0.91, 0.92]), reference, "macro_f1", 0.01)

    assert guess == 4  # 0.91 >= 0.94 - 0.01 - 0.02; depth 3's 0.89 is not
    assert first_guess([], reference, "macro_f1", 0.01) == 6


def around(difference: float, half_width: float) -> Interval:
    return Interval(difference=difference, low=difference - half_width, high=difference + half_width)


def test_with_the_screens_intervals_it_points_at_the_cheapest_probe_the_rows_could_show_within() -> None:
    reference = Candidate(depth=6, status="trained", metrics={"macro_f1": 0.94})
    probes = screened([0.58, 0.76, 0.89, 0.91, 0.92])  # shortfall 0.02, as above
    # Lifted by the shortfall, depth 4's probe is 0.01 below depth 6 with an interval of ±0.015: its lower end,
    # -0.025, is not within; depth 5's, 0 ± 0.008, is.
    intervals = {4: around(-0.03, 0.015), 5: around(-0.02, 0.008)}

    assert first_guess(probes, reference, "macro_f1", 0.01, intervals) == 5
    assert first_guess(probes, reference, "macro_f1", 0.01, {**intervals, 4: around(-0.03, 0.0)}) == 4
    assert first_guess(probes, reference, "macro_f1", 0.01) == 4  # the means alone (confidence null)


def test_the_rows_cannot_resolve_the_tolerance_when_even_the_screens_narrowest_interval_is_wider() -> None:
    wide = {1: around(-0.09, 0.04), 4: around(-0.01, 0.015), 5: around(-0.006, 0.013)}

    why = unresolvable(wide, 304, 0.01)

    assert why == ("no depth below 6 confirmed: on the 304 validation rows even the screen's narrowest interval, "
                   "depth 5's probe against depth 6, is ±0.013, wider than the 0.01 tolerance, so none could be "
                   "shown within it; about 520 rows would resolve it")
    assert unresolvable({**wide, 4: around(-0.01, 0.009)}, 304, 0.01) is None  # one narrow enough: search
    assert unresolvable(wide, 304, 0.02) is None
    assert unresolvable({}, 0, 0.01) is None  # no evidence (confidence null): search as by the means


def test_the_sentence_names_exactly_the_depths_only_screened() -> None:
    from depthfinder.selection.search import Search

    record = Search(family="pretrained", layers=6, screened=[1, 5], confirmed=[2, 3, 4, 6],
                    steps=["depth 4: tied with the best"], seconds=700.0, full_seconds=280.0)

    assert "; depths 1, 5 only screened;" in record.sentence()
    assert "depths 1-2, 5 only screened" in record.model_copy(update={"screened": [1, 2, 5]}).sentence()


def decision_with(mean: float, low: float, high: float):
    """A decision of the search between a confirmed depth 3 and the best, depth 6 at 0.92, each depth judged."""
    from depthfinder.evidence.bootstrap import Interval
    from depthfinder.selection.decision import Decision, DepthScore, judge

    def score(depth: int, value: float, interval: Interval) -> DepthScore:
        return DepthScore(depth=depth, family="pretrained", mean=value, std_error=0, seeds=1, cost=depth,
                          vs_best=interval)

    best = score(6, 0.92, Interval(difference=0, low=0, high=0))
    scores = [score(3, mean, Interval(difference=mean - 0.92, low=low, high=high)), best]
    return Decision(name="tolerance", metric="macro_f1", tolerance=0.01, cost="flops_per_example", reason="",
                    selected_depth=6, selected_family="pretrained", best_depth=6, best_family="pretrained",
                    confidence=None, alpha=0.1, pareto_front=[3, 6],
                    scores=[s.model_copy(update={"verdict": judge(s, best, 0.01)}) for s in scores])


def test_a_confirmed_depth_is_tied_only_when_the_rule_would_ship_it_in_the_bests_place() -> None:
    from depthfinder.selection.search import tied

    assert tied(decision_with(0.915, -0.008, 0.003), "pretrained", 3)
    # A reported sweep's depth 3: 0.032 below, "not shown worse" by its interval's upper end: no longer tied.
    assert not tied(decision_with(0.888, -0.060, -0.003), "pretrained", 3)
    assert not tied(decision_with(0.915, -0.030, 0.02), "pretrained", 3)  # within on the mean, not shown within
    assert tied(decision_with(0.92, 0.0, 0.0), "pretrained", 6)


def test_the_probes_intervals_are_widened_by_what_the_confirmed_depths_showed() -> None:
    probes = {3: around(-0.05, 0.02), 4: around(-0.01, 0.010), 5: around(-0.007, 0.008)}

    # Depth 4 fine-tuned apart had an interval of ±0.015, 1.5x its probe's: depth 5's would be about ±0.012.
    why = unresolvable(probes, 304, 0.01, open_depths=[5], confirmed={4: 0.015})

    assert why == ("depth 5 not confirmed: the separate fine-tunes' intervals have been 1.50x their probes', depth "
                   "4's ±0.015 against ±0.010, so on the 304 validation rows even the narrowest left, depth 5's, would "
                   "be about ±0.012, wider than the 0.01 tolerance, and none could be shown within it; about 440 rows "
                   "would resolve it")
    assert unresolvable(probes, 304, 0.01, open_depths=[5], confirmed={4: 0.011}) is None  # 1.1x: ±0.0088
    assert unresolvable(probes, 304, 0.01, open_depths=[5]) is None  # the probe's own ±0.008
    assert unresolvable(probes, 304, 0.01, open_depths=[], confirmed={4: 0.015}) is None  # nothing left open
