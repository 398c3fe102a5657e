"""Tables to plant defects in: the built-in topics dataset, split as the pipeline splits it."""

from __future__ import annotations

import numpy as np
import pandas as pd

from depthfinder.expectations.table.config import DataConfig
from depthfinder.expectations.table.load import load_table
from depthfinder.expectations.table.near_duplicates import DEFAULT_THRESHOLD, components, near_duplicate_pairs
from depthfinder.expectations.table.normalize import normalized_texts_and_keys, text_keys
from depthfinder.expectations.table.split import assign_splits


def topics_table(rows: int = 3000, seed: int = 1) -> pd.DataFrame:
    """The built-in topics dataset, canonical and split as the pipeline splits it, with no near-duplicate leak.

    The pipeline's split keeps near-duplicates together by chance, not by rule (see
    expectations/split.py), so a few templated topics texts straddle splits; each such
    cluster is moved whole into the split of its first row, and a planted defect is the
    only thing a check can find.
    """
    table = assign_splits(load_table(DataConfig(dataset="topics", dataset_rows=rows, seed=seed)), 0.1, 0.1, seed)
    return with_near_duplicates_joined(table)


def with_near_duplicates_joined(table: pd.DataFrame, threshold: float = DEFAULT_THRESHOLD) -> pd.DataFrame:
    """`table` with each near-duplicate cluster (transitively) in the split of its first row."""
    normalized, keys = normalized_texts_and_keys(table["text"])
    codes, _ = pd.factorize(keys)
    first_rows = np.unique(codes, return_index=True)[1]
    pairs = near_duplicate_pairs(normalized.iloc[first_rows].tolist(), threshold)
    clusters = components(len(first_rows), pairs)[codes]
    return table.assign(split=table["split"].groupby(clusters).transform("first").to_numpy())


def lone_rows(table: pd.DataFrame, split: str, count: int, skip: int = 0) -> list[int]:
    """Row labels in `split` whose normalised text occurs once, so planting touches no other row."""
    once = ~text_keys(table["text"]).duplicated(keep=False)
    return table.index[once & (table["split"] == split)][skip : skip + count].tolist()


def loner_rows(table: pd.DataFrame, split: str, count: int, label: str | None = None) -> list[int]:
    """Row labels in `split` (and of `label`) whose text occurs once and has no near-duplicate at all."""
    normalized, keys = normalized_texts_and_keys(table["text"])
    pairs = near_duplicate_pairs(normalized.tolist(), threshold=0.5)
    paired = set(pairs.left.tolist()) | set(pairs.right.tolist())
    positions = [
        i for i in range(len(table))
        if i not in paired and table["split"].iloc[i] == split and (label is None or table["label"].iloc[i] == label)
    ]
    once = ~keys.duplicated(keep=False).to_numpy()
    return [table.index[i] for i in positions if once[i]][:count]
