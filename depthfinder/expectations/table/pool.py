"""Texts without labels (sweep.pool.unlabeled), and labels given later for some (sweep.pool.labels): evidence for the
depth rule (selection.pool), never training rows. Read like the labelled table: any format --data takes, the texts
in the --text-col column, the labels in --label-col."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from depthfinder.expectations.table.config import DataConfig
from depthfinder.expectations.table.labels import normalize_labels
from depthfinder.expectations.table.load import as_strings, as_texts, read_table
from depthfinder.expectations.table.near_duplicates import DEFAULT_THRESHOLD, near_duplicate_pairs
from depthfinder.expectations.table.normalize import normalized_texts_and_keys


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


@dataclass(frozen=True)
class PoolAudit:
    """What a pool holds of the labelled rows, audited like a split: the positions of its new texts, and how many it
    held that were copies or near-copies (the audit's near-duplicate measure, after its normalisation: case,
    punctuation, spacing, what an uncased tokenizer does not see) of a validation or test text, or else of a train
    text. A copy of an evaluation text would teach a student the answer to a question it is then asked and count as
    evidence about rows it has seen; a copy of a train text is a row the models fitted: neither is new."""

    new: list[int]
    of_held_out: int  # copies or near-copies of validation or test texts
    of_train: int  # of train texts only


def audit_pool(texts: list[str], labelled: pd.DataFrame, threshold: float = DEFAULT_THRESHOLD) -> PoolAudit:
    """The pool's `texts` against the labelled rows (`text`, `split`): which are new, and which copy which split.

    Args:
        texts: the pool's texts, in order.
        labelled: the labelled table's texts and splits (train, val, test); without a split column every row counts
            as an evaluation row (the split is not yet made: any of them may be one).
        threshold: the near-duplicate threshold (audit.near_duplicate_threshold).
    """
    splits = labelled["split"].astype(str) if "split" in labelled else pd.Series("val", index=labelled.index)
    held_out = (splits != "train").to_numpy()
    normal_pool, _ = normalized_texts_and_keys(pd.Series(texts, dtype=object))
    normal_rows, _ = normalized_texts_and_keys(labelled["text"].reset_index(drop=True))
    forms, index = np.unique(np.concatenate([normal_rows.to_numpy(dtype=str), normal_pool.to_numpy(dtype=str)]),
                             return_inverse=True)
    rows, pool = index[: len(normal_rows)], index[len(normal_rows):]
    pairs = near_duplicate_pairs(list(forms), threshold)
    # Each distinct form's closest kin among the labelled rows: itself where a row has it, its near-duplicates else.
    of_held_out = np.zeros(len(forms), dtype=bool)
    of_train = np.zeros(len(forms), dtype=bool)
    of_held_out[rows[held_out]] = True
    of_train[rows[~held_out]] = True
    for a, b in ((pairs.left, pairs.right), (pairs.right, pairs.left)):
        of_held_out[a[np.isin(b, rows[held_out])]] = True
        of_train[a[np.isin(b, rows[~held_out])]] = True
    copies_held_out, copies_train = of_held_out[pool], of_train[pool] & ~of_held_out[pool]
    return PoolAudit(new=np.flatnonzero(~(copies_held_out | copies_train)).tolist(),
                     of_held_out=int(copies_held_out.sum()), of_train=int(copies_train.sum()))


def check_pool(unlabeled: Path, labels: Path | None, data: DataConfig, classes: set[str],
               labelled: pd.DataFrame | None = None, threshold: float = DEFAULT_THRESHOLD) -> None:
    """The unlabelled texts can be read, at least one is new (no copy or near-copy of a `labelled` text), and the
    labels given for some of them are classes of the labelled table; ValueError (one line) otherwise."""
    texts = load_texts(unlabeled, data.text_col)
    if labelled is not None and not audit_pool(texts, labelled, threshold).new:
        raise ValueError(f"{unlabeled}: every one of its {len(texts):,} texts is a copy or near-copy of a labelled "
                         "text (after case, punctuation and spacing); give texts the models never saw")
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
