"""Rows the user asked to drop before the audit and training (`audit.drop`), counted per reason."""

from __future__ import annotations

import numpy as np
import pandas as pd

from depthfinder.expectations.audit.checks.base import USABLE_COLUMN, distinct_per_text
from depthfinder.expectations.audit.checks.cross_split_near_duplicates import find_near_duplicates
from depthfinder.expectations.audit.config import AuditConfig
from depthfinder.expectations.audit.run import prepare_audit_table

# Which copy of a leaking text stays: the earliest split in this order.
SPLIT_RANK = {"train": 0, "val": 1, "test": 2}


def drop_rows(table: pd.DataFrame, config: AuditConfig) -> tuple[pd.DataFrame, dict[str, int]]:
    """Remove the rows `config.drop` names, in the order empty, conflicts, leaks.

    Args:
        table: the canonical, split table.
        config: `drop` lists what to remove; `near_duplicate_threshold` defines a near-copy.

    Returns:
        The kept rows (index and `row` untouched) and how many rows each kind removed
        (a row is counted under the first kind that removed it).
    """
    kept = table
    counts: dict[str, int] = {}
    for kind in ("empty", "conflicts", "leaks"):
        if kind not in config.drop:
            continue
        prepared = prepare_audit_table(kept)
        if kind == "empty":
            dropped = ~prepared[USABLE_COLUMN].to_numpy(dtype=bool)
        elif kind == "conflicts":
            dropped = distinct_per_text(prepared, "label").to_numpy() > 1
        else:
            dropped = leaking_copies(prepared, config.near_duplicate_threshold)
        counts[kind] = int(dropped.sum())
        kept = kept[~dropped]
    return kept, counts


def leaking_copies(prepared: pd.DataFrame, threshold: float) -> np.ndarray:
    """Rows whose text, or a near-duplicate of it, also has a row in an earlier split (train < val < test)."""
    usable = prepared[USABLE_COLUMN].to_numpy(dtype=bool)
    matches = find_near_duplicates(prepared, threshold)
    rank = prepared["split"].map(SPLIT_RANK).fillna(len(SPLIT_RANK)).to_numpy(dtype=np.int64)
    codes = matches.codes[usable]
    earliest = np.full(int(codes.max(initial=-1)) + 1, len(SPLIT_RANK), dtype=np.int64)
    np.minimum.at(earliest, codes, rank[usable])  # the earliest split of each distinct text
    reach = earliest.copy()  # ... and of its near-duplicates
    np.minimum.at(reach, matches.pairs.left, earliest[matches.pairs.right])
    np.minimum.at(reach, matches.pairs.right, earliest[matches.pairs.left])
    dropped = np.zeros(len(prepared), dtype=bool)
    dropped[usable] = rank[usable] > reach[codes]
    return dropped
