"""The rows a run used, in all and per split, read the same in the summary, the terminal and the decision artifact
(the MLflow params: tests/flows/test_retrain.py)."""

from __future__ import annotations

from depthfinder.flows.report import decision_markdown, format_summary
from depthfinder.flows.summary import RowsUsed, RunSummary
from depthfinder.selection.candidate import Candidate, Cost
from depthfinder.selection.rule import choose_depth
from depthfinder.selection.settings import SelectionRule
from depthfinder.tasks.data import write_table
from depthfinder.tracking.records import ModelVersionRef
from tests.expectations.planting import topics_table


def test_the_rows_used_are_the_prepared_tables_and_every_page_says_the_same(tmp_path) -> None:
    table = topics_table(300)
    dataset = write_table(table, tmp_path)
    rows = RowsUsed.of(dataset.rows, dataset.split_rows)
    candidates = [Candidate(depth=1, status="trained", metrics={"macro_f1": 0.9}, test_metrics={"macro_f1": 0.9},
                            cost=Cost(params=1e6, flops_per_example=1e7, latency_ms_p50=1.0))]
    decision = choose_depth(candidates, SelectionRule(confidence=None))
    summary = RunSummary(data_hash="d", candidates=candidates, rule=decision, selected_depth=1, rows=rows,
                         model=ModelVersionRef(name="m", version="1", uri="models:/m/1"), promoted=True,
                         promotion="no champion yet")

    counts = table["split"].value_counts()
    assert (rows.total, rows.train, rows.val, rows.test) == (300, counts["train"], counts["val"], counts["test"])
    said = (f"Data: {rows.total:,} rows: train {rows.train:,}, validation {rows.val:,}, test {rows.test:,}")
    assert said in format_summary(summary).splitlines()
    assert f"{said}." in decision_markdown(summary).split("\n\n")
    assert RunSummary.from_dict(summary.to_dict()).rows == rows
