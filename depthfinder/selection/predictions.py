"""The candidates' saved validation predictions, read back for the paired bootstrap (evidence.bootstrap): every
candidate of a sweep predicts the same validation rows, so two depths are compared row by row."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from depthfinder.evidence.bootstrap import Predictions
from depthfinder.selection.candidate import Candidate


def load_predictions(candidates: Iterable[Candidate]) -> Predictions | str:
    """The saved predictions of `candidates` (the rule's eligible ones, or a screen and its probes), or why they
    cannot be compared row by row."""
    true: np.ndarray | None = None
    predicted = {}
    for candidate in candidates:
        if candidate.predictions is None:
            return f"{candidate.name} has no saved validation predictions"
        try:
            with np.load(candidate.predictions, allow_pickle=False) as saved:
                rows, classes = saved["true"], saved["predicted"]
        except (OSError, KeyError, ValueError) as exc:
            return f"{candidate.name}'s validation predictions cannot be read ({exc})"
        if true is None:
            true = rows
        elif not np.array_equal(rows, true):
            return f"{candidate.name} was validated on other rows than the rest"
        predicted[candidate.family, candidate.depth, candidate.seed] = classes
    if true is None:
        return "no candidate"
    return Predictions(true, predicted)
