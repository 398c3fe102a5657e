"""How the audit reads a text-pairs table (NLI, paraphrase, duplicate questions): a pair is one example.

A pairs table has a `pair` column (the second text, "" when missing) beside `text` (the first).
A cross-encoder reads both as one sequence, so the generic checks see one example per row: its key
is both sides' keys joined, its normalised text both sides joined, and it is usable when either
side is. Each side's own key, normalised text and usability are kept too, for the pair checks
that look at one side (shared sides across splits, swapped pairs, one-side baselines).
"""

from __future__ import annotations

import pandas as pd

from depthfinder.expectations.audit.checks.base import KEY_COLUMN, NORMALIZED_COLUMN, PAIR_COLUMN, USABLE_COLUMN
from depthfinder.expectations.table.normalize import has_usable_token, normalized_texts_and_keys

SIDES = ("text", PAIR_COLUMN)
# Punctuation never survives normalisation, so "/" cannot be inside a side: the joined form (and the
# joined keys, hex digits) splits back into its two sides, and no word or bigram spans both sides.
SIDE_SEPARATOR = " / "
KEY_SEPARATOR = "/"
# Each side's key, normalised text and usability, per side name.
SIDE_KEY = {side: f"_{side}_side_key" for side in SIDES}
SIDE_NORMALIZED = {side: f"_{side}_side_normalized" for side in SIDES}
SIDE_USABLE = {side: f"_{side}_side_usable" for side in SIDES}
# How a side is called in evidence.
SIDE_NAMES = {"text": "first", PAIR_COLUMN: "second"}


def is_pairs_table(table: pd.DataFrame) -> bool:
    """True for a text-pairs table (it has a `pair` column beside `text`)."""
    return PAIR_COLUMN in table.columns and "text" in table.columns


def add_pair_columns(prepared: pd.DataFrame) -> None:
    """Set (in place) each side's key, normalised text and usability, and the whole pair's."""
    for side in SIDES:
        prepared[SIDE_NORMALIZED[side]], prepared[SIDE_KEY[side]] = normalized_texts_and_keys(prepared[side])
        prepared[SIDE_USABLE[side]] = has_usable_token(prepared[side])
    first, second = (prepared[SIDE_NORMALIZED[side]] for side in SIDES)
    prepared[NORMALIZED_COLUMN] = first.str.cat(second, sep=SIDE_SEPARATOR)
    prepared[KEY_COLUMN] = prepared[SIDE_KEY["text"]].str.cat(prepared[SIDE_KEY[PAIR_COLUMN]], sep=KEY_SEPARATOR)
    prepared[USABLE_COLUMN] = prepared[SIDE_USABLE["text"]] | prepared[SIDE_USABLE[PAIR_COLUMN]]


def unordered_keys(table: pd.DataFrame) -> pd.Series:
    """Per row, the key of its pair whichever way round: a pair and its swap share it."""
    first, second = table[SIDE_KEY["text"]], table[SIDE_KEY[PAIR_COLUMN]]
    low, high = first.where(first <= second, second), second.where(first <= second, first)
    return low.str.cat(high, sep=KEY_SEPARATOR)


def relation_texts(table: pd.DataFrame) -> list[str]:
    """Per row, a bag of words a linear model can read a pair's relation from: each side's words marked with its
    side, the second side's words the first shares, and how much of the second side the first covers (in fifths).

    ":" never survives normalisation, so a marked word cannot be mistaken for a word of a text.
    """
    texts = []
    for first, second in zip(table[SIDE_NORMALIZED["text"]], table[SIDE_NORMALIZED[PAIR_COLUMN]], strict=True):
        first_words, second_words = first.split(), second.split()
        held = set(first_words)
        shared = [word for word in second_words if word in held]
        overlap = round(4 * len(shared) / len(second_words)) if second_words else 0
        texts.append(" ".join([
            *(f"a:{word}" for word in first_words), *(f"b:{word}" for word in second_words),
            *(f"ab:{word}" for word in shared), f"overlap:{overlap}",
        ]))
    return texts
