"""A task's shape: what one example is. `classify`: one text and its label. `pairs`: two texts and the label of the
pair (inference, paraphrase, duplicate questions, reranking), which a cross-encoder reads as one sequence, the second
after the first's separator.

`tokens`: a sentence's words and a tag of each (expectations.table.tokens).

The canonical table says its shape by its columns: a pairs table holds the second text in `pair` beside `text`, a
token table its tags in `tags`. What
reads a model's inputs from a table reads them here, so no other code tells the shapes apart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pandas as pd

Task = Literal["classify", "pairs", "tokens"]
PAIR_COLUMN = "pair"
TAGS_COLUMN = "tags"  # a token table's (expectations.table.tokens): its label is the sentence's tags, joined
# One example as a network reads it: a text, or a pair of texts (encoder.serving, which travels with every model and
# imports nothing of depthfinder, declares the same).
ModelInput = str | tuple[str, str]


def is_pairs(frame: pd.DataFrame) -> bool:
    """Whether `frame` (a canonical table, or some of its columns) holds pairs."""
    return PAIR_COLUMN in frame.columns


def class_labels(frame: pd.DataFrame) -> list[str]:
    """The classes a network of `frame` outputs, sorted: its labels; for token labels (a token table, which holds
    `tags`), its tags."""
    if TAGS_COLUMN in frame.columns:
        return sorted({tag for tags in frame["label"].astype(str) for tag in tags.split()})
    return sorted(frame["label"].unique().tolist())


def input_columns(columns: object) -> list[str]:
    """The columns of `columns` (a frame's, or names) that hold a model's input: `text`, and `pair` for pairs."""
    names = getattr(columns, "columns", columns)
    return ["text", PAIR_COLUMN] if PAIR_COLUMN in names else ["text"]


def model_inputs(frame: pd.DataFrame) -> list[ModelInput]:
    """Each row's input to the network, in row order: its text, or its (text, pair)."""
    texts = frame["text"].astype(str).tolist()
    if not is_pairs(frame):
        return texts
    return list(zip(texts, frame[PAIR_COLUMN].astype(str).tolist(), strict=True))


def side_texts(frame: pd.DataFrame) -> list[str]:
    """Every text the rows hold, each side of a pair on its own (what a tokenizer or a vocabulary learns from)."""
    texts = frame["text"].astype(str).tolist()
    return texts + frame[PAIR_COLUMN].astype(str).tolist() if is_pairs(frame) else texts


def read_inputs(path: str | Path, *columns: str) -> pd.DataFrame:
    """The prepared table's `text` (and `pair`, where it holds pairs) and `columns`, read from its parquet file."""
    import pyarrow.parquet as pq

    return pd.read_parquet(path, columns=[*input_columns(pq.read_schema(path).names), *columns])
