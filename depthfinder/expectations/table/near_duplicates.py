"""Near-duplicate texts by MinHash and LSH banding: near-linear in the number of texts, never all-pairs.

Each distinct normalised text becomes the set of its 5-byte character shingles (with a
space at both ends, so word boundaries count). MinHash keeps, for each of 64 hash
functions, the smallest hash over the set: two texts agree on one of them with
probability equal to their Jaccard similarity. LSH cuts the 64 values into 16 bands of
4; texts equal on a whole band become candidate pairs (a pair of similarity 0.8 is a
candidate with probability 0.9998, a pair of 0.3 with 0.12), and a candidate is kept
when its 64 values agree at least `threshold` of the time. Inside a band, texts with
the same band value are paired only with their next `MAX_BUCKET_NEIGHBOURS` peers, so a
huge bucket of look-alike texts costs linear time, not quadratic.

Everything is deterministic (fixed hash seeds): the audit finds the same pairs on every run.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from depthfinder.expectations.audit.tokens import char_shingles, mix64, text_buffer

DEFAULT_THRESHOLD = 0.8
SHINGLE_BYTES = 5
NUM_HASHES = 64
BAND_ROWS = 4
MAX_BUCKET_NEIGHBOURS = 8
CHUNK_TEXTS = 100_000
_SEED = 20261129


@dataclass(frozen=True)
class NearDuplicatePairs:
    """Pairs (left[k], right[k]) of text indices, left < right, with their estimated Jaccard similarity."""

    left: np.ndarray
    right: np.ndarray
    similarity: np.ndarray

    def __len__(self) -> int:
        return len(self.left)


def _hash_family() -> tuple[np.ndarray, np.ndarray]:
    """Multipliers (odd) and offsets of the hash functions x -> a*x + b mod 2^32."""
    rng = np.random.default_rng(_SEED)
    multipliers = rng.integers(0, 2**31, size=NUM_HASHES, dtype=np.uint32) * np.uint32(2) + np.uint32(1)
    offsets = rng.integers(0, 2**32, size=NUM_HASHES, dtype=np.uint32)
    return multipliers, offsets


def minhash_signatures(texts: Sequence[str]) -> np.ndarray:
    """One row of NUM_HASHES uint32 MinHash values per normalised text.

    Args:
        texts: normalised texts (see normalize.py); a text shorter than a shingle is
            padded with spaces, so an empty text matches only other empty texts.

    Returns:
        A (len(texts), NUM_HASHES) uint32 array.
    """
    multipliers, offsets = _hash_family()
    signatures = np.empty((len(texts), NUM_HASHES), dtype=np.uint32)
    for first in range(0, len(texts), CHUNK_TEXTS):
        chunk = [f" {text} ".ljust(SHINGLE_BYTES) for text in texts[first : first + CHUNK_TEXTS]]
        shingles, starts = char_shingles(text_buffer(chunk), SHINGLE_BYTES)
        permuted = np.empty_like(shingles)
        block = signatures[first : first + len(chunk)]  # a view: filled in place
        for column in range(NUM_HASHES):
            np.multiply(shingles, multipliers[column], out=permuted)
            permuted += offsets[column]
            block[:, column] = np.minimum.reduceat(permuted, starts)
    return signatures


def near_duplicate_pairs(texts: Sequence[str], threshold: float = DEFAULT_THRESHOLD) -> NearDuplicatePairs:
    """Pairs of distinct positions in `texts` whose estimated Jaccard similarity is at least `threshold`.

    Args:
        texts: normalised texts, ideally distinct (equal texts pair with similarity 1).
        threshold: estimated Jaccard similarity of character 5-gram sets, in (0, 1].

    Returns:
        The pairs, each once with left < right, sorted.
    """
    if not 0 < threshold <= 1:
        raise ValueError(f"near-duplicate threshold must be in (0, 1], got {threshold}")
    signatures = minhash_signatures(texts)
    count = len(signatures)
    found: list[np.ndarray] = []
    for left, right in _band_candidates(signatures):
        # Verify each band's candidates at once, so only true pairs are kept in memory.
        keep = _agreement(signatures, left, right) >= threshold - 1e-9
        found.append(np.minimum(left[keep], right[keep]) * count + np.maximum(left[keep], right[keep]))
    codes = np.unique(np.concatenate(found)) if found else np.empty(0, dtype=np.int64)
    left, right = codes // max(count, 1), codes % max(count, 1)
    return NearDuplicatePairs(left=left, right=right, similarity=_agreement(signatures, left, right))


def _band_candidates(signatures: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """For each LSH band, pairs of rows with equal band values (each with its next few bucket peers)."""
    for band in range(NUM_HASHES // BAND_ROWS):
        columns = signatures[:, band * BAND_ROWS : (band + 1) * BAND_ROWS].astype(np.uint64)
        key = mix64(columns[:, 0] | (columns[:, 1] << np.uint64(32)))
        key = mix64(key ^ (columns[:, 2] | (columns[:, 3] << np.uint64(32))))
        order = np.argsort(key, kind="stable")
        ordered = key[order]
        for distance in range(1, MAX_BUCKET_NEIGHBOURS + 1):
            same = np.flatnonzero(ordered[distance:] == ordered[:-distance])
            if not same.size:
                break
            yield order[same].astype(np.int64), order[same + distance].astype(np.int64)


def _agreement(signatures: np.ndarray, left: np.ndarray, right: np.ndarray, chunk: int = 200_000) -> np.ndarray:
    """Share of MinHash values two rows agree on: the estimate of their Jaccard similarity."""
    result = np.empty(len(left), dtype=np.float64)
    for first in range(0, len(left), chunk):
        a, b = left[first : first + chunk], right[first : first + chunk]
        result[first : first + chunk] = (signatures[a] == signatures[b]).mean(axis=1)
    return result


def components(count: int, pairs: NearDuplicatePairs) -> np.ndarray:
    """Connected-component label of each of `count` items, joining every pair (transitively)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    graph = coo_matrix((np.ones(len(pairs), dtype=np.int8), (pairs.left, pairs.right)), shape=(count, count))
    return connected_components(graph, directed=False)[1]
