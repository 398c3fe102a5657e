from __future__ import annotations

import pandas as pd
import pytest

from depthfinder.expectations.table.normalize import normalize_text, text_keys

VARIANTS = [
    "The battery is not bad!",
    "the battery is not bad",
    "  THE   battery\tis not BAD...  ",
    "The battery, is not bad",
    "The\u00a0battery is not bad\u3002",  # no-break space, ideographic full stop
    "\uff34he battery is not bad",  # fullwidth T (NFKC)
    "The battery is not bad \u2014",  # em dash
]


def test_variants_normalise_to_one_text() -> None:
    assert {normalize_text(text) for text in VARIANTS} == {"the battery is not bad"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Don't stop", "dont stop"),
        ("Don\u2019t stop", "dont stop"),
        ("good,not bad", "good not bad"),
        ("Stra\u00dfe", "strasse"),  # casefold, not lower
        ("\ufb01ne", "fine"),  # ligature
        ("&lt;#&gt;", "lt gt"),
        ("$5 <3", "$5 <3"),  # symbols are not punctuation
        ("", ""),
        ("  \n\t ", ""),
    ],
)
def test_normalize_text(text: str, expected: str) -> None:
    assert normalize_text(text) == expected


def test_texts_that_differ_only_by_unicode_form_or_invisible_characters_are_one_text() -> None:
    import unicodedata

    nfc = "Le café était fermé"
    look_alikes = [unicodedata.normalize("NFD", nfc), "Le caf\u200bé était fermé", "\ufeffLe café \u2060était fermé",
                   "Le ca\u00adfé e\u200d\u0301tait fermé", unicodedata.normalize("NFD", nfc) + "\u200b"]
    keys = text_keys(pd.Series([nfc, *look_alikes, "Le cafe etait ferme"]))
    assert keys.iloc[:-1].nunique() == 1 and keys.iloc[-1] != keys.iloc[0]  # accents still count
    assert {normalize_text(text) for text in look_alikes} == {"le café était fermé"}


def test_non_strings_normalise_to_empty() -> None:
    assert normalize_text(None) == "" and normalize_text(float("nan")) == ""  # type: ignore[arg-type]


def test_text_keys_equal_exactly_for_equal_normalised_texts() -> None:
    texts = pd.Series(VARIANTS + ["the battery is bad", "the battery is not bad at all"], index=range(10, 19))
    keys = text_keys(texts)
    assert keys.index.equals(texts.index)
    assert keys.iloc[: len(VARIANTS)].nunique() == 1
    assert keys.nunique() == 3
    assert keys.str.fullmatch("[0-9a-f]{32}").all()


def test_text_keys_are_stable_across_calls_and_order() -> None:
    texts = pd.Series(["b", "a", "A!", None])
    forward = text_keys(texts)
    backward = text_keys(texts.iloc[::-1]).sort_index()
    assert forward.tolist() == backward.tolist()
    assert forward.iloc[1] == forward.iloc[2]
    # A pinned value: the key must not change between releases, or splits would move.
    assert text_keys(pd.Series(["The battery is not bad!"])).iloc[0] == "ed1fdafbb804d0335a545c44de7598b8"


def test_ascii_fast_path_agrees_with_the_unicode_path() -> None:
    import unicodedata

    def reference(text: str) -> str:
        folded = unicodedata.normalize("NFKC", text).casefold().replace("'", "")
        return " ".join("".join(" " if unicodedata.category(c).startswith("P") else c for c in folded).split())

    ascii_chars = "".join(chr(code) for code in range(128))
    samples = [ascii_chars, ascii_chars[::-1], "It's A\x1fTEST -- of_the  [fast] path!", "x\x0bY\x1cz"]
    assert [normalize_text(text) for text in samples] == [reference(text) for text in samples]
    assert normalize_text("\x00a") == reference("\x00a")
