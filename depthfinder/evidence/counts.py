"""F1 from counts per type, the arithmetic that classes and entity types share.

A class of a classifier and an entity type of a tagger are scored alike: how many items of the type the truth holds
(`gold`), how many the model predicted and how many of those match (`hits`). Summed over the rows of a resample,
weighted by how often the resample draws each row, they give every F1 the rule uses.
"""

from __future__ import annotations

import numpy as np

AVERAGES = ("micro", "macro")


def f1_of_counts(gold: np.ndarray, predicted: np.ndarray, hits: np.ndarray, average: str) -> np.ndarray:
    """F1 per resample from (resamples, types) counts: micro, 2 Σ hits / (Σ gold + Σ predicted) over every type (0
    where neither holds any), or macro, the mean of each type's 2 hits / (gold + predicted) over the types with gold
    items (a type that is only predicted lowers no mean: it has no F1 to average)."""
    if average == "micro":
        total = gold.sum(axis=1) + predicted.sum(axis=1)
        return np.divide(2 * hits.sum(axis=1), total, out=np.zeros(len(gold), dtype=np.float64), where=total > 0)
    if average != "macro":
        raise ValueError(f"unknown average {average!r}; expected one of {', '.join(AVERAGES)}")
    present = gold > 0
    per_type = np.divide(2 * hits, gold + predicted, out=np.zeros_like(hits), where=present)
    return per_type.sum(axis=1) / np.maximum(present.sum(axis=1), 1)
