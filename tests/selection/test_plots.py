from __future__ import annotations

from pathlib import Path

import pytest

from depthfinder.selection.plots import plot_metric_vs_cost, plot_metric_vs_depth
from depthfinder.selection.rule import choose_depth
from depthfinder.selection.settings import SelectionRule
from tests.selection.test_rule import SWEEP

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_both_plots_are_written_as_png(tmp_path: Path) -> None:
    decision = choose_depth(SWEEP, SelectionRule(rule="pareto", metric="macro_f1", tolerance=0.01))

    by_depth = plot_metric_vs_depth(decision, tmp_path / "plots" / "metric_vs_depth.png")
    by_cost = plot_metric_vs_cost(decision, tmp_path / "plots" / "metric_vs_cost.png")

    for path in (by_depth, by_cost):
        assert path.read_bytes().startswith(PNG_MAGIC)
        assert path.stat().st_size > 5_000  # axes, points and labels, not an empty canvas


def test_the_depth_plot_shows_differences_from_the_best_with_intervals_and_the_pruned_at_their_budget() -> None:
    from depthfinder.selection.candidate import Candidate, Cost
    from depthfinder.selection.plots import depth_points

    decision = choose_depth(SWEEP, SelectionRule(tolerance=0.01, confidence=None))
    pruned = Candidate(depth=8, status="pruned", epochs=4, metrics={"macro_f1": 0.90}, cost=Cost(params=1))

    points = {p["depth"]: p for p in depth_points(decision, [pruned])}

    assert points[6]["difference"] == 0.0  # the best
    assert points[2]["difference"] == pytest.approx(0.941 - 0.946)
    assert points[8] == {"family": "scratch", "depth": 8, "difference": pytest.approx(0.90 - 0.946),
                         "low": pytest.approx(0.90 - 0.946), "high": pytest.approx(0.90 - 0.946), "pruned": 4,
                         "status": "pruned"}


def test_costs_are_written_as_a_reader_wants_them() -> None:
    from depthfinder.selection.plots import cost_text

    assert cost_text("flops_per_example", 4.79e6) == "4.79 MFLOPs"
    assert cost_text("latency_ms_p50", 1.234) == "1.23 ms"
    assert cost_text("params", 2_500_000) == "2.5 M"


def paired(decision, intervals: dict, families: dict | None = None):
    """The decision with paired intervals set by hand (and its families renamed: model_copy does not validate, as a
    checkpoint's family name would not on this branch's FamilyName), each depth judged again by the rule's
    criterion (the verdicts the decision was made with were judged by means only)."""
    from depthfinder.evidence.bootstrap import Interval
    from depthfinder.selection.decision import judge

    scores = [s.model_copy(update={"vs_best": Interval(difference=s.mean - 0.946, low=s.mean - 0.946 + low,
                                                       high=s.mean - 0.946 + high),
                                   "family": (families or {}).get(s.depth, s.family)})
              for s in decision.scores for low, high in [intervals[s.depth]]]
    best = next(s for s in scores if s.depth == decision.best_depth)
    scores = [s.model_copy(update={"verdict": judge(s, best, decision.tolerance)}) for s in scores]
    settings = decision.settings.model_copy(update={"confidence": 0.9})
    return decision.model_copy(update={"scores": scores, "settings": settings})


def test_each_depth_is_judged_by_the_rules_own_criterion_against_minus_tolerance() -> None:
    """Depth 2's interval clears −0.01 (within: it may ship), depth 4's reaches below it without being shown
    beyond it (unsettled), depth 1's lies wholly below (worse): the verdicts the rule's predicate gives."""
    from depthfinder.selection.decision import ties
    from depthfinder.selection.plots import depth_points

    decision = paired(choose_depth(SWEEP, SelectionRule(tolerance=0.01, confidence=None)),
                      {1: (-0.01, 0.01), 2: (-0.004, 0.004), 4: (-0.03, 0.03), 6: (0.0, 0.0)})
    best = next(s for s in decision.scores if s.depth == 6)

    verdicts = {p["depth"]: p["verdict"] for p in depth_points(decision)}

    assert verdicts == {1: "worse", 2: "within", 4: "unsettled", 6: "best"}
    assert {s.depth for s in decision.scores if s.depth != 6 and ties(s, best, 0.01)} == {
        depth for depth, word in verdicts.items() if word == "within"}


def test_the_plots_say_when_the_validation_rows_cannot_resolve_the_tolerance() -> None:
    from depthfinder.selection.plots import evidence_note

    decision = choose_depth(SWEEP, SelectionRule(tolerance=0.01, confidence=None))

    assert evidence_note(decision) is None
    assert evidence_note(decision.model_copy(update={"validation_rows": 124, "rows_to_resolve": 3100})) == (
        "124 validation rows cannot resolve the 0.01 tolerance; about 3,100 would")


def test_families_of_any_name_get_a_colour_each_and_the_cost_plot_has_intervals(tmp_path: Path) -> None:
    from depthfinder.selection.plots import cost_points, family_colors

    names = {1: "minilm-l6", 2: "minilm-l6", 4: "bert-tiny", 6: "scratch"}
    decision = paired(choose_depth(SWEEP, SelectionRule(tolerance=0.01, confidence=None)),
                      {1: (-0.01, 0.01), 2: (-0.004, 0.004), 4: (-0.03, 0.03), 6: (0.0, 0.0)}, names)
    decision = decision.model_copy(update={"best_family": "scratch", "selected_family": "minilm-l6",
                                           "pareto_families": [names[d] for d in decision.pareto_front]})

    colors = family_colors(["minilm-l6", "bert-tiny", "scratch"])
    points = {p["depth"]: p for p in cost_points(decision)}

    assert len(set(colors.values())) == 3
    assert points[4]["low"] == pytest.approx(0.944 - 0.03) and points[4]["high"] == pytest.approx(0.944 + 0.03)
    for plot in (plot_metric_vs_depth(decision, tmp_path / "depth.png"),
                 plot_metric_vs_cost(decision, tmp_path / "cost.png")):
        assert plot.read_bytes().startswith(PNG_MAGIC)


def legend(decision, folder: Path) -> list[str]:
    """The depth plot's legend entries, read from the figure before it is closed."""
    from depthfinder.selection import plots

    entries: list[str] = []
    save = plots._save

    def keep(fig, path):
        entries.extend(text.get_text() for text in fig.axes[0].get_legend().get_texts())
        return save(fig, path)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plots, "_save", keep)
        plots.plot_metric_vs_depth(decision, folder / "depth.png")
    return entries


def test_a_depth_whose_mean_is_beyond_the_tolerance_is_not_called_shown_worse(tmp_path: Path) -> None:
    """A reported depth: its mean 0.03 below the best's, its interval reaching above −tolerance (the plot drew it
    up to 0.000 and called it "shown worse than the tolerance"). It cannot ship because of its mean, and the plot
    says so; "shown worse" is what an interval wholly below −tolerance shows."""
    from depthfinder.selection.plots import depth_points
    from tests.selection.test_rule import PAIRED, paired_sweep

    beyond = choose_depth(paired_sweep(tmp_path, 300, 60, 51), PAIRED)
    worse = choose_depth(paired_sweep(tmp_path, 300, 9, 0), PAIRED)

    assert beyond.scores[0].mean - beyond.scores[1].mean == pytest.approx(-0.03)
    assert beyond.scores[0].vs_best.high >= -0.01 > worse.scores[0].vs_best.high
    assert [p["verdict"] for p in depth_points(beyond)] == [s.verdict for s in beyond.scores] == ["beyond", "best"]
    assert [p["verdict"] for p in depth_points(worse)] == ["worse", "best"]
    beyond_legend, worse_legend = legend(beyond, tmp_path), legend(worse, tmp_path)
    assert "mean beyond the tolerance" in beyond_legend and "shown worse than the tolerance" not in beyond_legend
    assert "shown worse than the tolerance" in worse_legend and "mean beyond the tolerance" not in worse_legend
