"""Vectorised hashing of normalised texts: word tokens, word bigrams and character shingles.

A batch of normalised texts (see normalize.py: casefolded, no punctuation, single
spaces) is joined into one UTF-8 byte buffer, so a million short texts hash in a few
numpy passes instead of a Python loop per text. Hashes are 64-bit and deterministic
across runs and machines: the near-duplicate grouping of the split depends on them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

SEPARATOR = 10  # "\n" joins texts: normalisation turns every newline into a space
SPACE = 32
_BASE = np.uint64(0x100000001B3)  # polynomial base of the token hash (odd)
_PAIR = np.uint64(0x9E3779B97F4A7C15)  # combines two token hashes into a bigram hash
_SHINGLE_MULTIPLIER = np.uint64(0xD6E8FEB86659FD93)


def mix64(values: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: every input bit flips about half the output bits."""
    x = values.astype(np.uint64, copy=True)
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


@dataclass(frozen=True)
class TextBuffer:
    """Texts joined by SEPARATOR into one byte array; text i is data[starts[i]:ends[i]]."""

    data: np.ndarray  # uint8
    starts: np.ndarray  # int64, one per text
    ends: np.ndarray  # int64, one per text

    def __len__(self) -> int:
        return len(self.starts)

    def decode(self, start: int, end: int) -> str:
        """The text between two byte offsets."""
        return bytes(self.data[start:end]).decode("utf-8", errors="replace")


def text_buffer(texts: Sequence[str]) -> TextBuffer:
    """Join normalised texts into a TextBuffer (a text must not contain a newline)."""
    data = np.frombuffer("\n".join(texts).encode("utf-8"), dtype=np.uint8)
    separators = np.flatnonzero(data == SEPARATOR)
    if len(separators) != max(len(texts) - 1, 0):
        raise ValueError("a normalised text contains a newline; normalise the texts first")
    starts = np.concatenate([[0], separators + 1]).astype(np.int64)
    ends = np.concatenate([separators, [len(data)]]).astype(np.int64)
    return TextBuffer(data=data, starts=starts[: len(texts)], ends=ends[: len(texts)])


@dataclass(frozen=True)
class Tokens:
    """Hashed word tokens (or bigrams) of a TextBuffer: which text, which hash, which bytes."""

    text: np.ndarray  # int64 text index of each token
    hash: np.ndarray  # uint64
    start: np.ndarray  # int64 byte offsets into the buffer
    end: np.ndarray


def word_tokens(buffer: TextBuffer) -> Tokens:
    """Every space-separated token of every text, hashed (same token, same hash)."""
    is_token = (buffer.data != SPACE) & (buffer.data != SEPARATOR)
    if not is_token.any():
        empty = np.empty(0, dtype=np.int64)
        return Tokens(text=empty, hash=np.empty(0, dtype=np.uint64), start=empty, end=empty)
    starts = np.flatnonzero(is_token[1:] & ~is_token[:-1]) + 1
    ends = np.flatnonzero(is_token[:-1] & ~is_token[1:]) + 1
    if is_token[0]:
        starts = np.concatenate([[0], starts])
    if is_token[-1]:
        ends = np.concatenate([ends, [len(is_token)]])
    texts = np.searchsorted(buffer.starts, starts, side="right") - 1
    return Tokens(text=texts, hash=_span_hashes(buffer.data, starts, ends), start=starts, end=ends)


def word_bigrams(tokens: Tokens) -> Tokens:
    """Pairs of consecutive tokens of the same text, hashed from their two token hashes."""
    same_text = tokens.text[1:] == tokens.text[:-1]
    left, right = np.flatnonzero(same_text), np.flatnonzero(same_text) + 1
    hashes = mix64(tokens.hash[left] * _PAIR + tokens.hash[right])
    return Tokens(text=tokens.text[left], hash=hashes, start=tokens.start[left], end=tokens.end[right])


def _span_hashes(data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Polynomial hash of each byte span by Horner's rule, one pass per byte position, then mixed.

    Work is proportional to the total bytes; the number of passes to the longest span.
    """
    lengths = ends - starts
    hashes = np.zeros(len(starts), dtype=np.uint64)
    alive = np.flatnonzero(lengths > 0)
    offset = 0
    while alive.size:
        hashes[alive] = hashes[alive] * _BASE + (data[starts[alive] + offset].astype(np.uint64) + np.uint64(1))
        offset += 1
        alive = alive[lengths[alive] > offset]
    return mix64(hashes ^ lengths.astype(np.uint64))


def char_shingles(buffer: TextBuffer, size: int) -> tuple[np.ndarray, np.ndarray]:
    """32-bit hashes of all `size`-byte windows of each text, and where each text's windows start.

    Every text must be at least `size` bytes long (pad short ones). Returns (hashes,
    offsets): text i's shingles are hashes[offsets[i]:offsets[i + 1]]. The hash is
    multiply-shift (the high half of packed bytes times an odd constant): cheap, and
    universal enough for MinHash, which permutes it again.
    """
    if not 1 <= size <= 8:
        raise ValueError(f"shingle size must be 1..8 bytes (packed into 64 bits), got {size}")
    if len(buffer) and int((buffer.ends - buffer.starts).min()) < size:
        raise ValueError(f"every text needs at least {size} bytes for {size}-byte shingles; pad short texts")
    data = buffer.data
    windows = len(data) - size + 1
    # Pack each window's bytes into one integer with contiguous shifted slices (no gathers).
    packed = np.zeros(max(windows, 0), dtype=np.uint64)
    crosses = np.zeros(max(windows, 0), dtype=bool)
    for shift in range(size):
        part = data[shift : shift + windows]
        packed |= part.astype(np.uint64) << np.uint64(8 * shift)
        crosses |= part == SEPARATOR
    positions = np.flatnonzero(~crosses)
    offsets = np.searchsorted(positions, buffer.starts).astype(np.int64)
    hashes = (packed[positions] * _SHINGLE_MULTIPLIER) >> np.uint64(32)
    return hashes.astype(np.uint32), offsets
