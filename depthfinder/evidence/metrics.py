"""Quality metrics of a classifier, computed the same way for every candidate and the champion."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

METRICS = ("accuracy", "balanced_accuracy", "macro_f1")


def classification_metrics(y_true: Sequence[str], y_pred: Sequence[str]) -> dict[str, float]:
    """Accuracy, balanced accuracy (mean recall over true classes) and macro-F1 over true classes."""
    true, pred = np.asarray(y_true, dtype=object), np.asarray(y_pred, dtype=object)
    if len(true) == 0 or len(true) != len(pred):
        raise ValueError(f"need equally long, non-empty label lists, got {len(true)} and {len(pred)}")
    recalls, f1s = [], []
    for cls in np.unique(true):
        hits = np.sum((pred == cls) & (true == cls))
        recall = hits / np.sum(true == cls)
        predicted = np.sum(pred == cls)
        precision = hits / predicted if predicted else 0.0
        recalls.append(recall)
        f1s.append(2 * precision * recall / (precision + recall) if precision + recall else 0.0)
    return {
        "accuracy": float(np.mean(true == pred)),
        "balanced_accuracy": float(np.mean(recalls)),
        "macro_f1": float(np.mean(f1s)),
    }
