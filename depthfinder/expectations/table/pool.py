"""Texts without labels (sweep.pool.unlabeled), and labels given later for some (sweep.pool.labels): evidence for the
depth rule (selection.pool), never training rows. Read like the labelled table: any format --data takes, the texts
in the --text-col column (and, for --task pairs, each pair's second text in --pair-col), the labels in --label-col.
An example of the pool is what a model reads: a text, or a pair (text, pair)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from depthfinder.expectations.table.config import DataConfig
from depthfinder.expectations.table.labels import normalize_labels
from depthfinder.expectations.table.load import as_strings, as_texts, existing_file, read_table, read_utf8
from depthfinder.expectations.table.near_duplicates import DEFAULT_THRESHOLD, near_duplicate_pairs
from depthfinder.expectations.table.normalize import normalized_texts_and_keys
from depthfinder.expectations.table.shape import PAIR_COLUMN, ModelInput, model_inputs
from depthfinder.expectations.table.tokens import TOKENS_COLUMN, is_conll, read_conll, sentence_tokens


def load_texts(path: Path, data: DataConfig) -> list[ModelInput]:
    """The examples of a file of unlabelled texts, in order (duplicates kept: each is a draw of the source): each
    non-empty text, or for --task pairs each pair whose two texts are non-empty.

    Raises:
        ValueError: one line naming the file and what is wrong (missing, unreadable, no such column, no texts).
    """
    if data.task == "tokens":
        return _sentences(Path(path), data)
    frame = _inputs(read_table(Path(path)), path, data)
    frame = frame[(frame.apply(lambda side: side.str.strip()) != "").all(axis=1)]  # every text of an example
    if frame.empty:
        raise ValueError(f"{path}: column {data.text_col!r} holds no texts (expected unlabelled "
                         f"{'pairs' if is_pair_task(data) else 'texts'}, one per row)")
    return model_inputs(frame)


def load_text_labels(path: Path, data: DataConfig) -> dict[ModelInput, str]:
    """The labels given in a file of examples (rows_to_label.csv once labelled, or any file with the input columns
    and the label's), by example, each as its class (expectations.table.labels.normalize_label); rows whose label is
    empty are skipped.

    Raises:
        ValueError: one line naming the file and what is wrong, also when no row has a label or one example is given
            two labels.
    """
    table = read_table(Path(path))
    given = _inputs(table, path, data)
    given["label"] = normalize_labels(as_strings(_column(table, path, data.label_col, "--label-col"), str(path),
                                                 data.label_col))
    given = given.dropna()
    given = given[given["label"] != ""]
    if given.empty:
        raise ValueError(f"{path}: no row has a label in column {data.label_col!r} (fill in the labels of the texts "
                         "to label, and leave the rest empty)")
    examples = pd.Series(model_inputs(given), index=given.index)
    counts = given.assign(example=examples).drop_duplicates().groupby("example")["label"].nunique()
    if (counts > 1).any():
        example = counts[counts > 1].index[0]
        raise ValueError(f"{path}: the {'pair' if isinstance(example, tuple) else 'text'} {str(example)[:60]!r} is "
                         f"given two labels; give each one")
    return dict(zip(examples, given["label"], strict=True))


def _sentences(path: Path, data: DataConfig) -> list[str]:
    """The sentences of a pool of --task tokens, each its tokens joined by spaces (as the token table's `text`, which
    a tagger reads its words from): a CoNLL file's tokens (a token per line, a tag after it ignored), or a table's
    --tokens-col lists."""
    if is_conll(path):
        column = read_conll(path, read_utf8(existing_file(path)), tagged=False)[TOKENS_COLUMN]
    else:
        column = _column(read_table(path), path, data.tokens_col, "--tokens-col")
    return [" ".join(words) for words in sentence_tokens(column, str(path), data.tokens_col)]


def is_pair_task(data: DataConfig) -> bool:
    """Whether the run's examples are pairs (--task pairs): the pool's then too."""
    return data.task == "pairs"


def _inputs(table: pd.DataFrame, path: Path, data: DataConfig) -> pd.DataFrame:
    """A read file's input columns as `text` (and `pair`, for --task pairs), as strings; ValueError (one line) when
    one is missing or holds what is not text."""
    columns = {"text": (data.text_col, "--text-col"), **({PAIR_COLUMN: (data.pair_col, "--pair-col")}
                                                          if is_pair_task(data) else {})}
    return pd.DataFrame({name: as_texts(_column(table, path, column, flag), str(path), column).to_numpy()
                         for name, (column, flag) in columns.items()})


@dataclass(frozen=True)
class PoolAudit:
    """What a pool holds of the labelled rows, audited like a split: the positions of its new texts, and how many it
    held that were copies or near-copies (the audit's near-duplicate measure, after its normalisation: case,
    punctuation, spacing, what an uncased tokenizer does not see) of a validation or test text, or else of a train
    text. A copy of an evaluation text would teach a student the answer to a question it is then asked and count as
    evidence about rows it has seen; a copy of a train text is a row the models fitted: neither is new.

    A pair is held out where either of its texts copies a text of a validation or test pair (pairs leak through one
    shared sentence, as the audit's cross-split check of pairs finds), and a train copy where the pair, in either
    order, copies a train pair: two train sentences paired anew are a new example."""

    new: list[int]
    of_held_out: int  # copies or near-copies of validation or test texts
    of_train: int  # of train texts only


def audit_pool(examples: list[ModelInput], labelled: pd.DataFrame, threshold: float = DEFAULT_THRESHOLD) -> PoolAudit:
    """The pool's `examples` against the labelled rows (`text`, a pairs table's `pair`, `split`): which are new, and
    which copy which split.

    Args:
        examples: the pool's texts (or pairs, with a pairs table), in order.
        labelled: the labelled table's inputs and splits (train, val, test); without a split column every row counts
            as an evaluation row (the split is not yet made: any of them may be one).
        threshold: the near-duplicate threshold (audit.near_duplicate_threshold).
    """
    splits = labelled["split"].astype(str) if "split" in labelled else pd.Series("val", index=labelled.index)
    held_out = (splits != "train").to_numpy()
    if PAIR_COLUMN not in labelled:
        copies_held_out, copies_train = _kin(_normal(examples), _normal(labelled["text"]), held_out, threshold)
    else:
        sides = [_normal(side) for side in zip(*examples, strict=True)] if examples else [np.array([], str)] * 2
        rows = [_normal(labelled[column]) for column in ("text", PAIR_COLUMN)]
        either, _ = _kin(np.concatenate(sides), np.concatenate(rows), np.concatenate([held_out, held_out]),
                         threshold)
        copies_held_out = either.reshape(2, -1).any(axis=0)
        _, copies_train = _kin(_unordered(*sides), _unordered(*rows), held_out, threshold)
    copies_train &= ~copies_held_out
    return PoolAudit(new=np.flatnonzero(~(copies_held_out | copies_train)).tolist(),
                     of_held_out=int(copies_held_out.sum()), of_train=int(copies_train.sum()))


def _normal(texts: object) -> np.ndarray:
    """Texts after the audit's normalisation (case, punctuation, spacing), as strings."""
    normal, _ = normalized_texts_and_keys(pd.Series(list(texts), dtype=object))
    return normal.to_numpy(dtype=str)


def _unordered(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Each pair of normalised texts as one form, the same in either order (a pair and its swap are one example)."""
    return np.array([" | ".join(sorted(pair)) for pair in zip(first, second, strict=True)], dtype=str)


def _kin(pool_forms: np.ndarray, row_forms: np.ndarray, held_out: np.ndarray,
         threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """For each pool form, whether it is a copy or near-copy of a held-out row's form, and of a train row's."""
    forms, index = np.unique(np.concatenate([row_forms, pool_forms]), return_inverse=True)
    rows, pool = index[: len(row_forms)], index[len(row_forms):]
    pairs = near_duplicate_pairs(list(forms), threshold)
    # Each distinct form's closest kin among the labelled rows: itself where a row has it, its near-duplicates else.
    of_held_out = np.zeros(len(forms), dtype=bool)
    of_train = np.zeros(len(forms), dtype=bool)
    of_held_out[rows[held_out]] = True
    of_train[rows[~held_out]] = True
    for a, b in ((pairs.left, pairs.right), (pairs.right, pairs.left)):
        of_held_out[a[np.isin(b, rows[held_out])]] = True
        of_train[a[np.isin(b, rows[~held_out])]] = True
    return of_held_out[pool], of_train[pool]


def check_pool(unlabeled: Path, labels: Path | None, data: DataConfig, classes: set[str],
               labelled: pd.DataFrame | None = None, threshold: float = DEFAULT_THRESHOLD) -> None:
    """The unlabelled texts can be read, at least one is new (no copy or near-copy of a `labelled` text), and the
    labels given for some of them are classes of the labelled table; ValueError (one line) otherwise."""
    texts = load_texts(unlabeled, data)
    if labelled is not None and not audit_pool(texts, labelled, threshold).new:
        kind = "pairs" if is_pair_task(data) else "texts"
        raise ValueError(f"{unlabeled}: every one of its {len(texts):,} {kind} is a copy or near-copy of a labelled "
                         f"{kind[:-1]} (after case, punctuation and spacing); give {kind} the models never saw")
    if labels is None:
        return
    refuse_unknown_labels(labels, load_text_labels(labels, data), classes)


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
