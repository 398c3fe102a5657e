"""A hard size limit holds after the deployment gate (issue 46): the rule holds each depth to its smallest form,
and when the gate refuses the forms that fit, the next depth the rule lets ship whose shipped forms fit ships
instead, or nothing is registered."""

from __future__ import annotations

import pytest

import flows.retrain as retrain
from encoder.deployment import Deployment, Variant
from flows.config import SweepConfig
from selection.candidate import Candidate, Cost
from selection.rule import choose_depth

# Each depth's forms: (name, MiB, whether the gate ships it). Depth 1's int8 form fits 8 MiB but the gate refuses it.
FORMS = {1: [("torch", 20.0, True), ("onnx-int8", 6.0, False)], 2: [("torch", 30.0, True), ("onnx-int8", 7.5, True)],
         3: [("torch", 40.0, True), ("onnx-int8", 10.0, True)]}


def _candidates() -> list[Candidate]:
    return [Candidate(depth=depth, status="trained", metrics={"macro_f1": 0.90 + 0.001 * depth},
                      cost=Cost(flops_per_example=float(depth), size_mb=min(size for _, size, _ in FORMS[depth])),
                      bundle=f"bundle-{depth}") for depth in FORMS]


def _deployment(candidate: Candidate, *_) -> Deployment:
    variants = [Variant(name=name, metrics={"macro_f1": 0.9}, latency_ms={}, size_mb=size, shipped=ships)
                for name, size, ships in FORMS[candidate.depth]]
    return Deployment(metric="macro_f1", margin=0.01, variants=variants, sentence=f"depth {candidate.depth}'s forms")


@pytest.fixture()
def gate(monkeypatch):
    monkeypatch.setattr(retrain, "prepare_deployment", _deployment)


def _deployed(limit: float | None, tmp_path):
    sweep = SweepConfig(confidence=None, max_size_mb=limit)
    decision = choose_depth(_candidates(), sweep)
    assert decision.selected_depth == 1  # every depth within the tolerance of depth 3: the cheapest is chosen
    return retrain.deployed(_candidates(), decision, None, sweep, tmp_path)


def test_the_next_depth_whose_shipped_forms_fit_ships_when_the_gate_refuses_the_chosen_ones(gate, tmp_path) -> None:
    chosen, deployment, decision = _deployed(8.0, tmp_path)

    assert chosen.depth == decision.selected_depth == 2 and deployment.sentence == "depth 2's forms"
    assert decision.reason.endswith("depth 2 ships instead: depth 1's smallest form the gate shipped weighs 20.00 "
                                    "MiB, over max_size_mb 8")


def test_no_depth_within_the_limit_after_the_gate_is_one_line_and_nothing_ships(gate, tmp_path) -> None:
    """At 7 MiB the rule excludes depths 2 and 3 (their smallest forms weigh 7.5 and 10 MiB); depth 1's fitting form
    is refused by the gate."""
    with pytest.raises(ValueError, match="no depth the rule lets ship has a form within max_size_mb 7 .*depth 1's "
                                         "smallest form the gate shipped weighs 20.00 MiB"):
        _deployed(7.0, tmp_path)


def test_without_a_limit_the_chosen_depth_ships_whatever_its_size(gate, tmp_path) -> None:
    chosen, _, decision = _deployed(None, tmp_path)

    assert chosen.depth == decision.selected_depth == 1 and "instead" not in decision.reason
