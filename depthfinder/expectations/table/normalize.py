"""Text normalisation and the stable per-text key that groups duplicates."""

from __future__ import annotations

import hashlib
import re
import sys
import unicodedata
from functools import lru_cache

import numpy as np
import pandas as pd

# Punctuation is Unicode category P*. Apostrophes are deleted so "don't" and "dont"
# agree; every other mark becomes a space so "good,not bad" and "good, not bad" agree.
# Symbols (S*: $ < + emoji) are kept.
_APOSTROPHES = "'\u2019\u02bc\u2018\u00b4"
KEY_BYTES = 16
# Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt): characters that render as nothing,
# so two strings that differ only by them look the same: soft hyphen, zero-width space and joiners, word
# joiner, byte-order mark, bidi marks, Hangul fillers, variation selectors, tags.
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f"
    "\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)


def _is_punctuation(code: int) -> bool:
    """True for a Unicode punctuation code point (category P*)."""
    return unicodedata.category(chr(code)).startswith("P")


@lru_cache(maxsize=1)
def _unicode_table() -> dict[int, str | None]:
    """str.translate table over all of Unicode: punctuation to a space, apostrophes to nothing."""
    table: dict[int, str | None] = {
        code: " " for code in range(sys.maxunicode + 1) if _is_punctuation(code)
    }
    table.update({ord(mark): None for mark in _APOSTROPHES})
    return table


# bytes.translate is ~10x faster than str.translate with a dict: the fast path for ASCII.
# Characters str.split() treats as whitespace but bytes.split() does not (\x1c-\x1f)
# become spaces, so both paths agree.
_ASCII_TABLE = bytes(
    ord(" ") if code < 128 and (_is_punctuation(code) or chr(code).isspace()) else code for code in range(256)
)
_ASCII_DELETE = b"'"


def strip_invisible(text: str) -> str:
    """`text` without its invisible (default-ignorable) characters, e.g. "ok\\u200b" -> "ok"."""
    return _INVISIBLE.sub("", text)


def normalize_text(text: str) -> str:
    """Invisible characters removed, Unicode NFKC, casefold, punctuation removed, whitespace collapsed.

    Args:
        text: any string; a non-string (None, NaN) normalises to "".

    Returns:
        The normalised text, e.g. "  The Battery—is NOT bad!! " -> "the battery is not bad".
    """
    return _normalize_bytes(text).decode("utf-8")


def _normalize_bytes(text: object) -> bytes:
    """normalize_text as UTF-8 bytes (what the key hashes)."""
    if not isinstance(text, str):
        return b""
    if text.isascii():  # NFKC leaves ASCII alone; casefold is lower
        return b" ".join(text.lower().encode("ascii").translate(_ASCII_TABLE, _ASCII_DELETE).split())
    # Invisible characters go first: one between a letter and its accent would keep NFKC from composing them.
    folded = unicodedata.normalize("NFKC", strip_invisible(text)).casefold()
    return " ".join(folded.translate(_unicode_table()).split()).encode("utf-8")


_USABLE = re.compile(r"[^\W_]")  # a letter or digit in any script (Unicode \w minus "_")


def has_usable_token(texts: pd.Series) -> np.ndarray:
    """Per text: True when it has at least one letter or digit (a non-string has none)."""
    values = texts.to_numpy(dtype=object)  # iterating an Arrow-backed Series directly is 4x slower
    return np.fromiter(
        (isinstance(text, str) and _USABLE.search(text) is not None for text in values),
        dtype=bool, count=len(values),
    )


def text_key(text: object) -> str:
    """The hex key of one text (blake2b of its normalised form)."""
    return hashlib.blake2b(_normalize_bytes(text), digest_size=KEY_BYTES).hexdigest()


def text_keys(texts: pd.Series) -> pd.Series:
    """A stable hex key per text: equal after normalisation means equal key.

    Args:
        texts: a Series of texts (non-strings count as "").

    Returns:
        A Series of 32-character hex strings with the same index as `texts`.
    """
    return normalized_texts_and_keys(texts)[1]


def normalized_texts_and_keys(texts: pd.Series) -> tuple[pd.Series, pd.Series]:
    """Each text's normalised form and key (see normalize_text and text_key), in one pass.

    Args:
        texts: a Series of texts (non-strings count as "").

    Returns:
        (normalised texts, keys), two str Series with the index of `texts`.
    """
    # Normalise and hash each distinct raw text once: real data repeats texts a lot.
    codes, uniques = pd.factorize(texts, use_na_sentinel=False)
    forms = [_normalize_bytes(text) for text in np.asarray(uniques, dtype=object)]
    unique_keys = np.array([hashlib.blake2b(form, digest_size=KEY_BYTES).hexdigest() for form in forms], dtype=object)
    unique_texts = np.array([form.decode("utf-8") for form in forms], dtype=object)
    normalized = pd.Series(unique_texts[codes], index=texts.index, dtype="str", name="normalized")
    return normalized, pd.Series(unique_keys[codes], index=texts.index, dtype="str", name="key")
