"""Each depth's verdict against the best is judged once, where the decision is made (DepthScore.verdict), and every
page reads it: the depth plot, the decision's sentence, the terminal and the Prefect artifact (evidence_sentence)
and the model card say the same of each depth; a summary written before the field existed is judged on read."""

from __future__ import annotations

from pathlib import Path

from depthfinder.expectations.audit.report import AuditReport
from depthfinder.flows.card import model_card
from depthfinder.flows.older import upgrade_decision
from depthfinder.flows.report import evidence_sentence
from depthfinder.flows.summary import AuditInforms, RunAudit, RunSummary
from depthfinder.selection.decision import Decision
from depthfinder.selection.plots import depth_points
from depthfinder.selection.reasons import VERDICT_WORDS
from depthfinder.selection.rule import choose_depth
from depthfinder.tracking.records import ModelVersionRef
from tests.selection.test_rule import PAIRED, paired_sweep


def summary_of(decision: Decision) -> RunSummary:
    audit = RunAudit(**AuditReport.from_checks([], rows=300).model_dump(),
                     informs=AuditInforms(class_weights=False, metric="accuracy", near_duplicates_grouped=False,
                                          dropped_rows=0))
    model = ModelVersionRef(name="m", version="1", uri="models:/m/1", family="scratch", depth=decision.selected_depth)
    return RunSummary(data_hash="d", audit=audit, rule=decision, selected_depth=decision.selected_depth, model=model,
                      promoted=True, promotion="no champion yet", mlflow_run_id="r")


def pages(decision: Decision) -> dict[str, str]:
    """What the plot, the terminal / artifact and the card say of depth 1."""
    words = {p["depth"]: VERDICT_WORDS[p["verdict"]] for p in depth_points(decision)}
    card = model_card(summary_of(decision), {})
    return {"plot": words[1], "evidence": evidence_sentence(decision),
            "card": next(line for line in card.splitlines() if line.startswith("**Each depth against the best"))}


def test_the_plot_the_sentence_and_the_card_say_the_verdict_the_decision_carries(tmp_path: Path) -> None:
    decision = choose_depth(paired_sweep(tmp_path, 300, 60, 51), PAIRED)  # mean 0.03 below, interval to above −0.01

    said = pages(decision)

    assert decision.scores[0].verdict == "beyond" and said["plot"] == "mean beyond the tolerance"
    assert f"depth 1 {decision.scores[0].vs_best.text()} (mean beyond the tolerance)" in said["evidence"]
    assert f"depth 1 {decision.scores[0].vs_best.text()} (mean beyond the tolerance)" in said["card"]
    assert "every cheaper depth's mean is more than the 0.01 tolerance below it" in decision.reason
    # They read the field, not a judgement of their own: another verdict in it, and every page says that one.
    other = decision.model_copy(update={"scores": [decision.scores[0].model_copy(update={"verdict": "unsettled"}),
                                                   decision.scores[1]]})
    said = pages(other)
    assert said["plot"] == VERDICT_WORDS["unsettled"]
    assert f"({VERDICT_WORDS['unsettled']})" in said["evidence"] and f"({VERDICT_WORDS['unsettled']})" in said["card"]


def test_a_summary_written_before_the_verdict_existed_is_judged_on_read(tmp_path: Path) -> None:
    for newly_wrong, newly_right, verdict in ((60, 51, "beyond"), (9, 0, "worse"), (20, 4, "within"),
                                              (30, 29, "unsettled")):
        decision = choose_depth(paired_sweep(tmp_path, 300 if verdict != "within" else 4000, newly_wrong,
                                             newly_right), PAIRED)
        old = decision.to_dict()
        for score in old["scores"]:
            del score["verdict"]

        assert [s.verdict for s in decision.scores] == [verdict, "best"]
        assert Decision.from_dict(upgrade_decision(old)) == decision
