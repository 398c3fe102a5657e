"""The JSON forms earlier versions wrote read back as today's records, through flows.older alone."""

from __future__ import annotations

from depthfinder.flows.older import upgrade_decision, upgrade_summary
from depthfinder.flows.summary import RunSummary
from depthfinder.selection.decision import Decision
from depthfinder.selection.rule import choose_depth
from tests.selection.test_rule import SWEEP, Sweep


def test_a_decision_an_earlier_version_wrote_reads_back_as_the_same_decision() -> None:
    decision = choose_depth(SWEEP, Sweep(tolerance=0.01, promotion_margin=0.05))
    written = decision.to_dict()

    # effective_tolerance beside the tolerance: the same decision.
    assert Decision.from_dict(upgrade_decision({**written, "effective_tolerance": 0.01})) == decision
    # Before the intervals a summary had no confidence: it compared means only.
    means_only = {key: value for key, value in written.items() if key != "confidence"}
    assert Decision.from_dict(upgrade_decision(means_only)).settings.confidence is None
    # Today's form passes unchanged, and a summary's decision is upgraded as it is read.
    assert upgrade_decision(written) == written
    older = RunSummary(data_hash="d", rule=decision).to_dict()
    older["rule"] = {**older["rule"], "effective_tolerance": 0.01}
    assert upgrade_summary(older)["rule"] == written
    assert RunSummary.from_dict(older).rule == decision
