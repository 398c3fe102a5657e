"""Labels that look alike are one class: normalised once, when the table is loaded, and counted."""

from __future__ import annotations

import sys
import unicodedata
from pathlib import Path

import pandas as pd
import pytest

from depthfinder.expectations.table.config import DataConfig
from depthfinder.expectations.table.labels import NormalizedLabel, normalize_label, normalize_labels, spelled_out
from depthfinder.expectations.table.load import load_labelled_table, load_table
from depthfinder.expectations.table.normalize import strip_invisible

NFC = unicodedata.normalize("NFC", "négatif")
NFD = unicodedata.normalize("NFD", "négatif")
ZWSP = NFC + "\u200b"  # a zero-width space after it
LOOK_ALIKES = [NFC, NFD, ZWSP]


def csv_of(tmp_path: Path, labels: list[str]) -> Path:
    """A CSV with one distinct text per label."""
    path = tmp_path / "labels.csv"
    pd.DataFrame({"text": [f"text number {i}" for i in range(len(labels))], "label": labels}).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("label", [
    NFD, ZWSP, f" {NFC} ", f"\u00a0{NFD}\u200b\t", f"\ufeff{NFC}", f"n\u00ad{NFC[1:]}", f"{NFC}\u2060",
    "n\u200c\u00e9gatif", "ne\u200d\u0301gatif",  # the last: an invisible between the letter and its accent
])
def test_look_alike_spellings_are_one_label(label: str) -> None:
    assert NFC != NFD and normalize_label(label) == NFC


def test_case_and_visible_differences_are_kept() -> None:
    assert normalize_label("Négatif") == "Négatif"
    assert normalize_label("very  positive") == "very  positive"  # only surrounding white space goes
    assert normalize_label("\ufb01ne") == "\ufb01ne"  # NFC, not NFKC: a ligature is another character
    assert normalize_label("\u200b \u2060") == ""


def test_invisible_characters_are_exactly_unicodes_default_ignorables() -> None:
    regex = pytest.importorskip("regex")
    ignorable = regex.compile(r"\p{Default_Ignorable_Code_Point}")
    everything = "".join(map(chr, range(sys.maxunicode + 1)))
    assert strip_invisible(everything) == ignorable.sub("", everything)


def test_a_spelling_is_shown_with_what_does_not_show_escaped() -> None:
    assert spelled_out(NFD) == "'ne\\u0301gatif'" and spelled_out(ZWSP) == "'négatif\\u200b'"
    assert spelled_out("\u6b63\u9762\u3164 ") == "'\u6b63\u9762\\u3164 '"  # a Hangul filler is printable, not visible
    assert spelled_out("it's \\ \u00a0") == '"it\'s \\\\ \\xa0"'  # repr()'s own escapes are kept


def test_normalize_labels_keeps_missing_labels_missing() -> None:
    normalized = normalize_labels(pd.Series([NFD, None, "positif ", NFD], index=[3, 5, 7, 9]))
    assert normalized.index.tolist() == [3, 5, 7, 9]
    assert normalized.iloc[[0, 2, 3]].tolist() == [NFC, "positif", NFC] and pd.isna(normalized.iloc[1])


def test_look_alike_labels_load_as_two_classes_and_are_counted(tmp_path: Path) -> None:
    labels = [NFC, "positif", NFD, "positif", ZWSP, NFD, "positif ", NFC]

    loaded = load_labelled_table(DataConfig(path=csv_of(tmp_path, labels)))

    assert sorted(loaded.table["label"].unique()) == [NFC, "positif"]
    assert loaded.table["label"].tolist() == [NFC, "positif", NFC, "positif", NFC, NFC, "positif", NFC]
    normalized = loaded.normalized_labels
    assert (normalized.rows, normalized.spellings) == (4, 3)  # rows 2, 4, 5 and 6; NFD, ZWSP, "positif "
    assert normalized.examples == [
        NormalizedLabel(row=2, raw="'ne\\u0301gatif'", label=NFC),
        NormalizedLabel(row=4, raw="'négatif\\u200b'", label=NFC),
        NormalizedLabel(row=6, raw="'positif '", label="positif"),
    ]


def test_a_clean_table_normalises_nothing(tmp_path: Path) -> None:
    loaded = load_labelled_table(DataConfig(path=csv_of(tmp_path, [NFC, "positif"] * 3)))
    assert loaded.normalized_labels.rows == 0 and loaded.normalized_labels.examples == []
    assert load_labelled_table(DataConfig(dataset="topics", dataset_rows=200)).normalized_labels.rows == 0


def test_a_label_of_invisible_characters_is_no_label(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"1 of 4 rows have no label in column 'label' \(first rows: 2\)"):
        load_table(DataConfig(path=csv_of(tmp_path, [NFC, "positif", "\u200b", NFD])))


def test_spellings_that_differ_in_case_once_normalised_are_still_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="labels 'Négatif' and 'négatif' in column 'label' differ only in case"):
        load_table(DataConfig(path=csv_of(tmp_path, ["Négatif", NFD, "positif"])))
