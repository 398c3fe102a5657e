"""A grouped train/val/test split in which growing the data never moves an old row.

A row's split is a function of the seed and of the row alone: u = hash(seed, key) in
[0, 1) goes to test when u < test_fraction, to val when u < test_fraction +
val_fraction, else to train. Appending rows, reordering them, or adding near-copies
that bridge old near-duplicates cannot change an old row's key, so an old row never
changes split, and a champion is re-evaluated on the test rows it was evaluated on. No
stateless rule can keep that promise and look at other rows: a row's split must be the
same in the table holding only it as in every table that contains it, so it can depend
on the row alone. Grouping by near-duplicate cluster (the cluster's smallest key
decides) moved 6 of 2,787 old rows when sms_spam.csv grew from its first half to all of
it.

The key that decides a row's split:
- the row's user group, when `user_groups` gives one: a user group never straddles;
- else, for a text with a letter or digit, a content key: KEY_HASHES MinHash values
  (each the smallest seeded hash over the text's SHINGLE_BYTES-byte character shingles),
  hashed together. Equal normalised texts get equal keys, so exact duplicates never
  straddle; near-duplicates share the key with probability about J**KEY_HASHES, J their
  Jaccard similarity over these shingles;
- else (no letter or digit), the normalised-text key: exact duplicates only.

The trade-off: near-duplicates share a split by chance, not by rule. A pair that does
not share its key straddles with probability 1 - sum(fraction**2), 0.34 at 80/10/10.
One MinHash over 5-byte shingles (the most a single key keeps together, J) is not
usable: every text whose smallest shingle is a common one (" you ") shares its key; on
sms_spam.csv one key held up to 7.6 % of the rows and a class's val or test share
ranged from 4 % to 28 % over ten seeds. Three MinHashes over 12-byte shingles are
rarely shared by unrelated texts: over the same seeds a class's share stays within
8.2-12.9 % (exact grouping alone: 7.9-11.5 %), and of the file's 129 near-duplicate
pairs 13-29 straddle (exact grouping alone: 32-54; cluster grouping: none). Texts
cut from one template (a fixed frame around a few varying characters) share a key
when all three minimums fall in the frame, so a seed-dependent part of them stays
together: of 400 "your order number 000123 has shipped" texts, 6 % in the median seed
and 56 % in the worst of twenty. The audit's `cross_split_near_duplicates` check
reports the near-duplicates that straddle.

A text that is in a user group and also outside it (or in two groups) is placed by its
groups, so its exact duplicates can straddle; `cross_split_duplicates` reports them.

Stratification holds *in expectation*, not exactly: the hash is independent of the
label, so every class is split in the same proportions on average, but a small class
can by chance end up with few (or no) rows in val or test. The audit's
`class_imbalance` check catches a class that cannot be evaluated.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
import pandas as pd

from depthfinder.expectations.audit.tokens import SEPARATOR, mix64, text_buffer
from depthfinder.expectations.table.normalize import has_usable_token, normalized_texts_and_keys

SHINGLE_BYTES = 12
KEY_HASHES = 3
CHUNK_TEXTS = 100_000

_UNIT_SCALE = float(2**64)
_COMBINE = np.uint64(0x9E3779B97F4A7C15)  # odd: folds one 64-bit hash into another


def split_unit(seed: int, key: str) -> float:
    """The group's uniform draw in [0, 1): blake2b of (seed, key), stable across runs and machines."""
    digest = hashlib.blake2b(f"{seed}:{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / _UNIT_SCALE


def assign_splits(
    table: pd.DataFrame, val_fraction: float, test_fraction: float, seed: int,
    group_near_duplicates: bool = True, *, user_groups: pd.Series | None = None,
) -> pd.DataFrame:
    """Add `split` (train/val/test) and `group` (the key that decided the split) to a table.

    Args:
        table: the canonical table (needs `text`; must not have `split` or `group`).
        val_fraction: expected share of groups in val, in (0, 1).
        test_fraction: expected share of groups in test, in (0, 1).
        seed: seed of the split; another seed gives an independent split.
        group_near_duplicates: key texts by content, so near-duplicates tend to share a
            split (a pair shares the key with a probability that grows with its
            similarity; see the module docstring); False groups exact duplicates only.
        user_groups: the user's group of each row, aligned with `table` (null: none);
            rows of one group always share a split, whatever their texts.

    Returns:
        A copy of `table` with `split` and `group` columns; rows with equal `group`
        share a split, and each row's split depends on that row (and the seed) alone.

    Raises:
        ValueError: when the fractions are out of range, the columns
            already exist, or `user_groups` is not aligned with the table.
    """
    _check_arguments(table, val_fraction, test_fraction, user_groups)
    normalized, keys = normalized_texts_and_keys(table["text"])
    groups = content_keys(normalized, keys, seed) if group_near_duplicates else keys
    if user_groups is not None:
        grouped = user_groups.notna().to_numpy()
        values = groups.to_numpy(dtype=object).copy()
        values[grouped] = [f"user:{_group_id(value)}" for value in user_groups[grouped].tolist()]
        groups = pd.Series(values, index=table.index, dtype="str", name="group")
    codes, unique_groups = pd.factorize(groups)
    units = np.array([split_unit(seed, key) for key in unique_groups], dtype=np.float64)
    names = np.select(
        [units < test_fraction, units < test_fraction + val_fraction], ["test", "val"], default="train"
    )
    result = table.copy()
    result["split"] = pd.Series(names[codes], index=table.index, dtype="str")
    result["group"] = groups
    return result


def _check_arguments(
    table: pd.DataFrame, val_fraction: float, test_fraction: float, user_groups: pd.Series | None
) -> None:
    """Raise ValueError on what assign_splits cannot work with."""
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
    if user_groups is not None and not user_groups.index.equals(table.index):
        raise ValueError("user_groups must have the table's index (one group or null per row)")


def _group_id(value: object) -> str:
    """A user group id as text; 3.0 reads "3", so a null elsewhere in an int column does not move the group."""
    if isinstance(value, float | np.floating) and float(value).is_integer():
        return str(int(value))
    return str(value)


def content_keys(normalized: pd.Series, keys: pd.Series, seed: int) -> pd.Series:
    """Each row's content key: 16 hex digits of its text's MinHash key, or its text key without a letter or digit.

    Args:
        normalized: each row's normalised text.
        keys: each row's key (text_key of the same text).
        seed: seed of the split; it seeds the MinHash functions too.

    Returns:
        A str Series named `group` with the index of `keys`.
    """
    codes, unique_keys = pd.factorize(keys)
    first_rows = np.unique(codes, return_index=True)[1]
    unique_texts = normalized.to_numpy(dtype=object)[first_rows]
    usable = np.flatnonzero(has_usable_token(pd.Series(unique_texts, dtype=object)))
    representative = np.asarray(unique_keys, dtype=object).copy()
    minhash_keys = text_minhash_keys(unique_texts[usable].tolist(), seed)
    representative[usable] = [f"{key:016x}" for key in minhash_keys.tolist()]
    return pd.Series(representative[codes], index=keys.index, dtype="str", name="group")


def text_minhash_keys(texts: Sequence[str], seed: int) -> np.ndarray:
    """One uint64 per normalised text: its KEY_HASHES seeded MinHash values, hashed together."""
    salts = [
        int.from_bytes(hashlib.blake2b(f"{seed}:{index}".encode(), digest_size=8).digest(), "big")
        for index in range(KEY_HASHES)
    ]
    result = np.empty(len(texts), dtype=np.uint64)
    for first in range(0, len(texts), CHUNK_TEXTS):
        shingles, starts = shingle_hashes(texts[first : first + CHUNK_TEXTS])
        key = np.zeros(len(starts), dtype=np.uint64)
        for salt in salts:
            smallest = np.minimum.reduceat(mix64(shingles ^ np.uint64(salt)), starts)
            key = mix64(key * _COMBINE ^ smallest)
        result[first : first + len(starts)] = key
    return result


def shingle_hashes(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """64-bit hashes of every SHINGLE_BYTES-byte window of each text, and where each text's windows start.

    Each text is padded like near_duplicates.py pads it (a space at both ends, then to
    the shingle length), so every text has at least one window. A window is hashed from
    its first and last 8 bytes, which together cover it (SHINGLE_BYTES <= 16).
    """
    buffer = text_buffer([f" {text} ".ljust(SHINGLE_BYTES) for text in texts])
    data = buffer.data
    windows = len(data) - SHINGLE_BYTES + 1
    hashes = mix64(_packed_bytes(data, 0, min(SHINGLE_BYTES, 8), windows))
    if SHINGLE_BYTES > 8:
        hashes = mix64(hashes * _COMBINE ^ _packed_bytes(data, SHINGLE_BYTES - 8, 8, windows))
    separators = np.concatenate([[0], np.cumsum(data == SEPARATOR)])
    inside = separators[SHINGLE_BYTES : SHINGLE_BYTES + windows] == separators[:windows]
    positions = np.flatnonzero(inside)
    return hashes[positions], np.searchsorted(positions, buffer.starts).astype(np.int64)


def _packed_bytes(data: np.ndarray, offset: int, width: int, windows: int) -> np.ndarray:
    """The `width` (<= 8) bytes from `offset` of each window, packed into one uint64 per window."""
    packed = np.zeros(windows, dtype=np.uint64)
    for shift in range(width):
        packed |= data[offset + shift : offset + shift + windows].astype(np.uint64) << np.uint64(8 * shift)
    return packed
