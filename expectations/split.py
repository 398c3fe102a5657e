"""A grouped, stable train/val/test split: a row keeps its split as the data grows.

Rows are grouped first by their normalised-text key (`text_keys`), so texts that are
equal after normalisation never straddle splits, then near-duplicate texts (estimated
Jaccard similarity of character 5-grams at least `near_duplicate_threshold`, found by
MinHash/LSH, see near_duplicates.py) are joined into one group, transitively. A group's
split is a function of the seed and one key alone, its smallest member key: u =
hash(seed, key) in [0, 1) goes to test when u < test_fraction, to val when u <
test_fraction + val_fraction, else to train.

Stability, and what near-duplicate grouping costs it: a group of exact duplicates never
moves, whatever rows are appended. A near-duplicate cluster keeps its split too unless
new rows change its smallest key: a new member whose key sorts first (probability
1/(size+1) for a random key), or a new text that bridges two old clusters. Then the
whole cluster takes the split of the new smallest key, which is another split with
probability val_fraction + test_fraction or so. That is the price of never leaking a
near-duplicate across splits; singletons (most rows) pay nothing.

A chain of near-duplicates can grow into one huge cluster (templated texts such as
"order 1001 shipped", "order 1002 shipped", ...). Placing it whole would skew the split
shares, so a cluster of more than MAX_CLUSTER_SHARE of the rows (at least
MIN_CLUSTER_CAP rows) is not joined: its texts keep their exact-duplicate groups, and the
audit's `cross_split_near_duplicates` check reports the near-duplicates that straddle.

Stratification holds *in expectation*, not exactly: the hash is independent of the
label, so every class is split in the same proportions on average, but a small class
can by chance end up with few (or no) rows in val or test. The audit's
`class_imbalance` check catches a class that cannot be evaluated.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

from expectations.near_duplicates import DEFAULT_THRESHOLD, components, near_duplicate_pairs
from expectations.normalize import has_usable_token, normalized_texts_and_keys

MAX_CLUSTER_SHARE = 0.02
MIN_CLUSTER_CAP = 20

_UNIT_SCALE = float(2**64)


def split_unit(seed: int, key: str) -> float:
    """The group's uniform draw in [0, 1): blake2b of (seed, key), stable across runs and machines."""
    digest = hashlib.blake2b(f"{seed}:{key}".encode("ascii"), digest_size=8).digest()
    return int.from_bytes(digest, "big") / _UNIT_SCALE


def assign_splits(
    table: pd.DataFrame, val_fraction: float, test_fraction: float, seed: int,
    near_duplicate_threshold: float | None = DEFAULT_THRESHOLD,
) -> pd.DataFrame:
    """Add `split` (train/val/test) and `group` (the group's smallest normalised-text key) to a table.

    Args:
        table: the canonical table (needs `text`; must not have `split` or `group`).
        val_fraction: expected share of groups in val, in (0, 1).
        test_fraction: expected share of groups in test, in (0, 1).
        seed: seed of the split; another seed gives an independent split.
        near_duplicate_threshold: Jaccard similarity at which texts join one group;
            None groups exact duplicates only.

    Returns:
        A copy of `table` with `split` and `group` columns.

    Raises:
        ValueError: when the fractions are out of range or the columns already exist.
    """
    if not (0 < val_fraction < 1 and 0 < test_fraction < 1 and val_fraction + test_fraction < 1):
        raise ValueError(
            f"val_fraction={val_fraction} and test_fraction={test_fraction}: "
            "expected each in (0, 1) and their sum below 1"
        )
    for column in ("split", "group"):
        if column in table.columns:
            raise ValueError(f"table already has a {column!r} column; assign_splits makes it")
    if "text" not in table.columns:
        raise ValueError(f"table has no 'text' column (columns: {', '.join(map(str, table.columns))})")
    normalized, keys = normalized_texts_and_keys(table["text"])
    groups = keys
    if near_duplicate_threshold is not None:
        groups = near_duplicate_groups(normalized, keys, near_duplicate_threshold)
    codes, unique_groups = pd.factorize(groups)
    units = np.array([split_unit(seed, key) for key in unique_groups], dtype=np.float64)
    names = np.select(
        [units < test_fraction, units < test_fraction + val_fraction], ["test", "val"], default="train"
    )
    result = table.copy()
    result["split"] = pd.Series(names[codes], index=table.index, dtype="str")
    result["group"] = groups
    return result


def near_duplicate_groups(normalized: pd.Series, keys: pd.Series, threshold: float) -> pd.Series:
    """Each row's group: the smallest key of its near-duplicate cluster (its own key when alone).

    Args:
        normalized: each row's normalised text.
        keys: each row's key (text_key of the same text).
        threshold: estimated Jaccard similarity at which two texts are near-duplicates.

    Returns:
        A str Series with the index of `keys`.
    """
    codes, unique_keys = pd.factorize(keys)
    first_rows = np.unique(codes, return_index=True)[1]
    unique_texts = normalized.to_numpy(dtype=object)[first_rows]
    usable = np.flatnonzero(has_usable_token(pd.Series(unique_texts, dtype=object)))
    pairs = near_duplicate_pairs(unique_texts[usable].tolist(), threshold)
    if not len(pairs):
        return keys.copy()
    labels = np.arange(len(unique_keys))
    labels[usable] = len(unique_keys) + components(len(usable), pairs)
    rows_per_key = np.bincount(codes, minlength=len(unique_keys))
    labels = np.unique(labels, return_inverse=True)[1]
    rows_per_cluster = np.bincount(labels, weights=rows_per_key)
    cap = max(MIN_CLUSTER_CAP, MAX_CLUSTER_SHARE * len(keys))
    too_big = rows_per_cluster[labels] > cap
    labels[too_big] = len(rows_per_cluster) + np.flatnonzero(too_big)  # back to exact groups
    representative = pd.Series(np.asarray(unique_keys, dtype=object)).groupby(labels).transform("min")
    return pd.Series(representative.to_numpy()[codes], index=keys.index, dtype="str", name="group")
