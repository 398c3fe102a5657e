from __future__ import annotations

import numpy as np
import pytest

from depthfinder.expectations.audit.tokens import char_shingles, text_buffer, word_bigrams, word_tokens
from depthfinder.expectations.table.near_duplicates import (
    BAND_ROWS,
    MAX_BUCKET_NEIGHBOURS,
    NUM_HASHES,
    _band_candidates,
    minhash_signatures,
    near_duplicate_pairs,
)


def random_texts(count: int, seed: int = 0, words: int = 8) -> list[str]:
    """Distinct texts of random 6-letter words (no two near-duplicates)."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    return [" ".join("".join(rng.choice(letters, 6)) for _ in range(words)) for _ in range(count)]


def jaccard(a: str, b: str, size: int = 5) -> float:
    """Exact Jaccard similarity of the padded texts' character shingles, as near_duplicates defines it."""
    a, b = f" {a} ", f" {b} "
    first = {a[i : i + size] for i in range(len(a) - size + 1)}
    second = {b[i : i + size] for i in range(len(b) - size + 1)}
    return len(first & second) / len(first | second)


def test_minhash_agreement_estimates_jaccard_without_bias() -> None:
    rng = np.random.default_rng(3)
    left = random_texts(400, seed=1)
    right = []
    for text in left:  # replace 0-4 of 8 words: true similarities from about 0.2 to 1
        words = text.split()
        for position in rng.choice(len(words), size=int(rng.integers(0, 5)), replace=False):
            words[position] = "".join(rng.choice(list("xyzw"), 6))
        right.append(" ".join(words))
    signatures = minhash_signatures(left + right)
    estimate = (signatures[:400] == signatures[400:]).mean(axis=1)
    truth = np.array([jaccard(a, b) for a, b in zip(left, right, strict=True)])
    error = estimate - truth
    assert abs(error.mean()) < 0.01
    middle = (truth > 0.1) & (truth < 0.9)
    z = error[middle] / np.sqrt(truth[middle] * (1 - truth[middle]) / NUM_HASHES)
    assert 0.7 < z.std() < 1.3  # as noisy as ideal MinHash with 64 hashes, no more


def test_planted_near_duplicates_are_found_exactly() -> None:
    texts = random_texts(2000)
    planted = {(3, 2000): texts[3] + " indeed", (10, 2001): "well " + texts[10], (500, 2002): texts[500][:-1] + "q"}
    texts += [texts[3] + " indeed", "well " + texts[10], texts[500][:-1] + "q"]
    pairs = near_duplicate_pairs(texts, threshold=0.8)
    assert set(zip(pairs.left.tolist(), pairs.right.tolist(), strict=True)) == set(planted)
    assert (pairs.similarity >= 0.8).all()


def test_threshold_separates_similar_from_loosely_similar() -> None:
    base = "the quick brown fox jumps over the lazy dog near the river bank"
    close = base + " today"  # Jaccard about 0.9
    loose = "the quick brown cat sleeps under the lazy dog near the river"  # about 0.45
    pairs = near_duplicate_pairs([base, close, loose], threshold=0.8)
    assert list(zip(pairs.left.tolist(), pairs.right.tolist(), strict=True)) == [(0, 1)]


def test_a_huge_bucket_of_templated_texts_costs_linear_candidates() -> None:
    texts = [f"your order number {i:06d} has shipped" for i in range(5000)]
    signatures = minhash_signatures(texts)
    candidates = sum(len(left) for left, _ in _band_candidates(signatures))
    bands = NUM_HASHES // BAND_ROWS
    assert candidates <= bands * MAX_BUCKET_NEIGHBOURS * len(texts)  # never all-pairs (12.5M here)
    pairs = near_duplicate_pairs(texts, threshold=0.8)
    assert len(pairs) >= len(texts) - 1  # the template chains them all together


def test_empty_and_short_texts_are_handled() -> None:
    pairs = near_duplicate_pairs(["", "", "ok", "ok go", "a"], threshold=0.8)
    assert list(zip(pairs.left.tolist(), pairs.right.tolist(), strict=True)) == [(0, 1)]
    with pytest.raises(ValueError, match="threshold"):
        near_duplicate_pairs(["a"], threshold=0)


def test_word_tokens_and_bigrams_hash_equal_tokens_equally() -> None:
    buffer = text_buffer(["free entry now", "now free", "", "entry now free"])
    tokens = word_tokens(buffer)
    words = [buffer.decode(int(s), int(e)) for s, e in zip(tokens.start, tokens.end, strict=True)]
    assert words == ["free", "entry", "now", "now", "free", "entry", "now", "free"]
    assert tokens.text.tolist() == [0, 0, 0, 1, 1, 3, 3, 3]
    by_word = {}
    for word, value in zip(words, tokens.hash.tolist(), strict=True):
        by_word.setdefault(word, set()).add(value)
    assert all(len(values) == 1 for values in by_word.values()) and len(set().union(*by_word.values())) == 3
    bigrams = word_bigrams(tokens)
    pairs = [buffer.decode(int(s), int(e)) for s, e in zip(bigrams.start, bigrams.end, strict=True)]
    assert pairs == ["free entry", "entry now", "now free", "entry now", "now free"]
    assert bigrams.hash[1] == bigrams.hash[3] and bigrams.hash[2] == bigrams.hash[4]


def test_char_shingles_stay_inside_each_text() -> None:
    hashes, offsets = char_shingles(text_buffer(["abcdef", "abcde", "xbcdef"]), 5)
    assert offsets.tolist() == [0, 2, 3] and len(hashes) == 5
    assert hashes[0] == hashes[2] and hashes[1] == hashes[4] and hashes[3] != hashes[0]
    with pytest.raises(ValueError, match="pad short texts"):
        char_shingles(text_buffer(["abc"]), 5)
