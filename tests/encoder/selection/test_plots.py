from __future__ import annotations

from pathlib import Path

import pytest

from encoder.selection.plots import plot_metric_vs_cost, plot_metric_vs_depth
from encoder.selection.rule import SelectionRule, choose_depth
from tests.encoder.selection.test_rule import SWEEP

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_both_plots_are_written_as_png(tmp_path: Path) -> None:
    decision = choose_depth(SWEEP, SelectionRule(rule="pareto", metric="macro_f1", tolerance=0.01))

    by_depth = plot_metric_vs_depth(decision, tmp_path / "plots" / "metric_vs_depth.png")
    by_cost = plot_metric_vs_cost(decision, tmp_path / "plots" / "metric_vs_cost.png")

    for path in (by_depth, by_cost):
        assert path.read_bytes().startswith(PNG_MAGIC)
        assert path.stat().st_size > 5_000  # axes, points and labels, not an empty canvas


def test_the_depth_plot_shows_differences_from_the_best_with_intervals_and_the_pruned_at_their_budget() -> None:
    from encoder.selection.candidate import Candidate, Cost
    from encoder.selection.plots import depth_points

    decision = choose_depth(SWEEP, SelectionRule(tolerance=0.01, confidence=None))
    pruned = Candidate(depth=8, status="pruned", epochs=4, metrics={"macro_f1": 0.90}, cost=Cost(params=1))

    points = {p["depth"]: p for p in depth_points(decision, [pruned])}

    assert points[6]["difference"] == 0.0  # the best
    assert points[2]["difference"] == pytest.approx(0.941 - 0.946)
    assert points[8] == {"family": "scratch", "depth": 8, "difference": pytest.approx(0.90 - 0.946),
                         "low": pytest.approx(0.90 - 0.946), "high": pytest.approx(0.90 - 0.946), "pruned": 4,
                         "status": "pruned"}


def test_costs_are_written_as_a_reader_wants_them() -> None:
    from encoder.selection.plots import cost_text

    assert cost_text("flops_per_example", 4.79e6) == "4.79 MFLOPs"
    assert cost_text("latency_ms_p50", 1.234) == "1.23 ms"
    assert cost_text("params", 2_500_000) == "2.5 M"
