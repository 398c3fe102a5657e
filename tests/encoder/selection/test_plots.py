from __future__ import annotations

from pathlib import Path

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
