"""Texts without labels (sweep.unlabeled), and labels given later for some of them (sweep.labels): evidence for the
depth rule (selection.pool), never training rows. Read like the labelled table: any format --data takes, the texts
in the --text-col column, the labels in --label-col."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from expectations.table.config import DataConfig
from expectations.table.labels import normalize_labels
from expectations.table.load import as_strings, as_texts, read_table


def load_texts(path: Path, text_col: str) -> list[str]:
    """The non-empty texts of a file of unlabelled texts, in order (duplicates kept: each is a draw of the source).

    Raises:
        ValueError: one line naming the file and what is wrong (missing, unreadable, no such column, no texts).
    """
    texts = as_texts(_column(read_table(Path(path)), path, text_col, "--text-col"), str(path), text_col)
    texts = texts[texts.str.strip() != ""]
    if texts.empty:
        raise ValueError(f"{path}: column {text_col!r} holds no texts (expected unlabelled texts, one per row)")
    return texts.tolist()


def load_text_labels(path: Path, text_col: str, label_col: str) -> dict[str, str]:
    """The labels given in a file of texts (rows_to_label.csv once labelled, or any file with both columns), by
    text, each as its class (expectations.table.labels.normalize_label); rows whose label is empty are skipped.

    Raises:
        ValueError: one line naming the file and what is wrong, also when no row has a label or one text is given
            two labels.
    """
    table = read_table(Path(path))
    texts = as_texts(_column(table, path, text_col, "--text-col"), str(path), text_col)
    labels = normalize_labels(as_strings(_column(table, path, label_col, "--label-col"), str(path), label_col))
    given = pd.DataFrame({"text": texts, "label": labels}).dropna()
    given = given[given["label"] != ""]
    if given.empty:
        raise ValueError(f"{path}: no row has a label in column {label_col!r} (fill in the labels of the texts to "
                         "label, and leave the rest empty)")
    counts = given.drop_duplicates().groupby("text")["label"].nunique()
    if (counts > 1).any():
        text = counts[counts > 1].index[0]
        raise ValueError(f"{path}: the text {text[:60]!r} is given two labels; give each text one")
    return dict(zip(given["text"], given["label"], strict=True))


def check_pool(unlabeled: Path, labels: Path | None, data: DataConfig, classes: set[str]) -> None:
    """The unlabelled texts can be read, and the labels given for some of them are classes of the labelled table;
    ValueError (one line) otherwise."""
    load_texts(unlabeled, data.text_col)
    if labels is None:
        return
    refuse_unknown_labels(labels, load_text_labels(labels, data.text_col, data.label_col), classes)


def refuse_unknown_labels(path: Path, given: dict[str, str], classes: set[str]) -> None:
    """ValueError (one line) when a label given in `path` is not one of the labelled table's `classes`."""
    if unknown := sorted(set(given.values()) - classes):
        raise ValueError(f"{path}: label {unknown[0]!r} is not a class of the labelled table "
                         f"({', '.join(sorted(classes))})")


def _column(table: pd.DataFrame, path: Path, column: str, flag: str) -> pd.Series:
    columns = [str(name) for name in table.columns]
    if column not in columns:
        raise ValueError(f"{path}: no column {column!r} (columns: {', '.join(columns) or 'none'}); set {flag}")
    return table[table.columns[columns.index(column)]]
