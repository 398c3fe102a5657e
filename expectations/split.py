"""A grouped, stable train/val/test split: a row keeps its split as the data grows.

Rows are grouped by their normalised-text key (`text_keys`), so texts that are equal
after normalisation never straddle splits. A group's split is a function of the seed
and its key alone: u = hash(seed, key) in [0, 1) goes to test when u < test_fraction,
to val when u < test_fraction + val_fraction, else to train. Appending rows never moves
an old row; only a new group's rows are placed, and an old group keeps its split.

Stratification holds *in expectation*, not exactly: the hash is independent of the
label, so every class is split in the same proportions on average, but a small class
can by chance end up with few (or no) rows in val or test. The audit's
`class_imbalance` check catches a class that cannot be evaluated.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

from expectations.normalize import text_keys

_UNIT_SCALE = float(2**64)


def split_unit(seed: int, key: str) -> float:
    """The group's uniform draw in [0, 1): blake2b of (seed, key), stable across runs and machines."""
    digest = hashlib.blake2b(f"{seed}:{key}".encode("ascii"), digest_size=8).digest()
    return int.from_bytes(digest, "big") / _UNIT_SCALE


def assign_splits(table: pd.DataFrame, val_fraction: float, test_fraction: float, seed: int) -> pd.DataFrame:
    """Add `split` (train/val/test) and `group` (the normalised-text key) to a table without splits.

    Args:
        table: the canonical table (needs `text`; must not have `split` or `group`).
        val_fraction: expected share of groups in val, in (0, 1).
        test_fraction: expected share of groups in test, in (0, 1).
        seed: seed of the split; another seed gives an independent split.

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
    keys = text_keys(table["text"])
    codes, unique_keys = pd.factorize(keys)
    units = np.array([split_unit(seed, key) for key in unique_keys], dtype=np.float64)
    names = np.select(
        [units < test_fraction, units < test_fraction + val_fraction], ["test", "val"], default="train"
    )
    result = table.copy()
    result["split"] = pd.Series(names[codes], index=table.index, dtype="str")
    result["group"] = keys
    return result
