"""The training recipe's own decisions: class weights follow the audit only when asked to (`auto`)."""

from __future__ import annotations

import pytest

from depthfinder.encoder.config import TrainConfig


@pytest.mark.parametrize(("setting", "warnings", "weighted"), [
    ("auto", ["class_imbalance"], True),
    ("auto", ["suspected_label_noise"], False),  # another warning is no reason to weight the loss
    ("auto", [], False),
    ("on", [], True),
    ("off", ["class_imbalance"], False),
])
def test_class_weights_are_used_when_asked_for_or_auto_and_the_audit_warned_of_imbalance(
    setting: str, warnings: list[str], weighted: bool
) -> None:
    assert TrainConfig(class_weights=setting).uses_class_weights(warnings) is weighted
