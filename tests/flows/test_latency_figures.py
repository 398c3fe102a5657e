"""One network, one figure per measure: the depth-decision page shows the cost table's batch-1 latency of the chosen
network and the deployment's torch latency of the same network, and says what each measures, with the cost
table's figure written in the sentence as the table writes it."""

from __future__ import annotations

from depthfinder.encoder.verdict import Variant, apply_gate, beside_cost_table
from depthfinder.flows.report import COST_NOTE, decision_markdown
from depthfinder.flows.summary import RunSummary
from depthfinder.selection.candidate import Candidate, Cost
from depthfinder.selection.rule import choose_depth
from depthfinder.selection.settings import SelectionRule
from depthfinder.tracking.records import ModelVersionRef


def form(name: str, p50: float) -> Variant:
    return Variant(name=name, metrics={"macro_f1": 0.9}, latency_ms={"b1_p50": p50}, size_mb=1.0, shipped=False)


def test_the_decision_page_says_what_each_latency_of_the_chosen_network_measures() -> None:
    """The cost table said 3.58 ms and the deployment 7.79 ms for one model, with nothing to tell the
    reader they measure different things."""
    candidates = [Candidate(depth=depth, status="trained", metrics={"macro_f1": 0.9}, test_metrics={"macro_f1": 0.9},
                            cost=Cost(params=1e6 * depth, flops_per_example=1e7 * depth, latency_ms_p50=3.58 * depth))
                  for depth in (1, 2)]
    decision = choose_depth(candidates, SelectionRule(confidence=None))
    chosen = next(c for c in candidates if c.depth == decision.selected_depth)
    forms = {"torch": form("torch", 7.79), "onnx-int8": form("onnx-int8", 1.2)}
    deployment = beside_cost_table(apply_gate(forms, "macro_f1", 0.01, ""), chosen.cost.latency_ms_p50)
    summary = RunSummary(data_hash="d", candidates=candidates, rule=decision, selected_depth=decision.selected_depth,
                         deployment=deployment, model=ModelVersionRef(name="m", version="1", uri="models:/m/1"),
                         promoted=True, promotion="no champion yet")

    page = decision_markdown(summary)

    cost_table = page.split("## Cost")[1]
    header, _, *rows = [line.split("|")[1:-1] for line in cost_table.splitlines() if line.startswith("|")]
    p50 = [cells[[h.strip() for h in header].index("p50 ms")].strip() for cells in rows
           if cells[[h.strip() for h in header].index("depth")].strip() == str(chosen.depth)][0]
    assert COST_NOTE in cost_table and "median train length" in COST_NOTE
    assert p50 == "3.58"
    assert ("torch's 7.79 ms here is per test text as served" in page
            and f"the cost table's {p50} ms for the same network is its forward alone" in page)
    # Without a cost table figure, or without ONNX forms (no torch latency in the sentence), nothing to reconcile.
    assert "cost table" not in beside_cost_table(apply_gate(forms, "macro_f1", 0.01, ""), None).sentence
    alone = apply_gate({"torch": form("torch", 7.79)}, "macro_f1", 0.01, "ONNX variants not measured: ...")
    assert beside_cost_table(alone, 3.58).sentence == "ONNX variants not measured: ..."


def test_the_decision_pages_heading_is_the_outcome_and_the_promotions_reason_is_below_it() -> None:
    """The heading was the whole promotion sentence, six lines of title."""
    candidates = [Candidate(depth=1, status="trained", metrics={"macro_f1": 0.9}, test_metrics={"macro_f1": 0.9},
                            cost=Cost(params=1e6, flops_per_example=1e7, latency_ms_p50=1.0))]
    reason = "challenger +0.010 [-0.004, +0.024] vs champion on the champion's own 302 test rows"
    summary = RunSummary(data_hash="d", candidates=candidates, rule=choose_depth(candidates, SelectionRule()),
                         selected_depth=1, model=ModelVersionRef(name="m", version="2", uri="models:/m/2"),
                         promoted=True, promotion=reason)

    heading, first, *_ = decision_markdown(summary).split("\n\n")

    assert heading == "# Depth 1 registered as m/2, promoted"
    assert first == f"**Promotion.** C{reason[1:]}."
