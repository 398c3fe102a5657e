"""Token labels (`--task tokens`): the readers of a tagged file and its canonical table, one row per sentence.

Two formats. CoNLL (`.conll`, `.iob`, `.bio`): one token per line, its tag the line's last field (CoNLL-2003's token,
POS, chunk and tag; or a token and its tag), fields split on whitespace; a blank line ends a sentence; `-DOCSTART-`
lines are skipped. JSONL (a table of any format `read_table` reads): a column of token lists and one of tag lists,
as `--tokens-col` and `--tags-col` name them.

Tags are `O`, or a prefix and an entity type: BIO (IOB2: `B-`, `I-`) or BIOES (also `E-`, `S-`), detected from the
tags (any `E-` or `S-`: BIOES). A tag of any other form, or a sentence whose tags do not match its tokens in number,
is bad input; tags that break their scheme (an `I-PER` with no `B-PER` before it) are the audit's to report.

The canonical table: `tokens` and `tags` (lists of str), `text` (the tokens joined by spaces: what the text checks and
the split read), `label` (the tags joined by spaces: the sentence's labelling as one value), `split` (when given),
`row` (the sentence's 0-based position in the file), and the table's other columns (expectations.table.load adds the
user's `split`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from depthfinder.expectations.table.config import DataConfig
from depthfinder.expectations.table.shape import TAGS_COLUMN

TOKENS_COLUMN = "tokens"
CONLL_SUFFIXES = (".conll", ".iob", ".bio")
DOCSTART = "-DOCSTART-"
OUTSIDE = "O"
TAG = re.compile(r"(?P<prefix>[BIES])-(?P<type>\S+)")
SCHEMES = {"BIO": "BI", "BIOES": "BIES"}


def is_conll(path: Path) -> bool:
    return Path(path).suffix.lower() in CONLL_SUFFIXES


def read_conll(path: Path, text: str, tagged: bool = True) -> pd.DataFrame:
    """The sentences of a CoNLL file's `text` as `tokens` and `tags` lists, in file order; ValueError naming the
    first line at fault. Untagged (an unlabelled pool's sentences): `tokens` alone, each line's first field (a tag
    after it is ignored)."""
    sentences: list[tuple[list[str], list[str]]] = []
    tokens: list[str] = []
    tags: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields or fields[0] == DOCSTART:
            if tokens:
                sentences.append((tokens, tags))
            tokens, tags = [], []
            continue
        if len(fields) < 2 and tagged:
            raise ValueError(f"{path}: line {number} holds one field ({fields[0]!r}); a CoNLL line is a token and "
                             "its tag (the last field), and a blank line ends a sentence")
        tokens.append(fields[0])
        tags.append(fields[-1])
    if tokens:
        sentences.append((tokens, tags))
    if not sentences:
        raise ValueError(f"{path}: no sentence (a CoNLL file holds a token {'and its tag ' if tagged else ''}per line)")
    frame = pd.DataFrame(sentences, columns=[TOKENS_COLUMN, TAGS_COLUMN])
    return frame if tagged else frame[[TOKENS_COLUMN]]


def token_table(raw: pd.DataFrame, config: DataConfig, source: str) -> pd.DataFrame:
    """The canonical token table (module docstring) of `raw`'s token and tag columns; ValueError naming the first
    sentence at fault."""
    columns = [str(column) for column in raw.columns]
    flags = {"--tokens-col": config.tokens_col, "--tags-col": config.tags_col, "--split-col": config.split_col}
    for flag, column in flags.items():
        if column is not None and column not in columns:
            raise ValueError(f"{source}: no column {column!r} (columns: {', '.join(columns) or 'none'}); set {flag}")
    if len(raw) == 0:
        raise ValueError(f"{source}: table has no sentences")
    tokens = sentence_tokens(raw[config.tokens_col], source, config.tokens_col)
    tags = [_strings(value, source, config.tags_col, row) for row, value in enumerate(raw[config.tags_col])]
    for row, (words, labels) in enumerate(zip(tokens, tags, strict=True)):
        if len(words) != len(labels):
            raise ValueError(f"{source}: sentence {row} has {len(words)} tokens but {len(labels)} tags; each token "
                             "needs its tag")
    tag_scheme(tags, source)
    table = pd.DataFrame({TOKENS_COLUMN: tokens, TAGS_COLUMN: tags})
    table["text"] = [" ".join(words) for words in tokens]
    table["label"] = [" ".join(labels) for labels in tags]
    table["row"] = np.arange(len(raw), dtype=np.int64)
    reserved = {TOKENS_COLUMN, TAGS_COLUMN, "text", "label", "split", "row", "group"}
    for column in columns:
        if column not in (config.tokens_col, config.tags_col, config.split_col):
            if column in reserved:
                raise ValueError(f"{source}: column {column!r} clashes with a column depthfinder writes "
                                 f"({', '.join(sorted(reserved))}); rename it")
            table[column] = raw[column].to_numpy()
    return table


def sentence_tokens(column: pd.Series, source: str, name: str) -> list[list[str]]:
    """Each sentence's tokens of a column of token lists; ValueError naming the first sentence with none, a value
    that is not a list of strings, or a token that is not one word (a model reads a sentence's words from its text,
    split at spaces)."""
    tokens = [_strings(value, source, name, row) for row, value in enumerate(column)]
    for row, words in enumerate(tokens):
        if not words:
            raise ValueError(f"{source}: sentence {row} has no tokens; every sentence needs one")
        for position, word in enumerate(words):
            if not word or len(word.split()) != 1:
                raise ValueError(f"{source}: sentence {row} token {position} is {word!r}; a token is one word, with "
                                 "no space in it (split it into words, each with its tag)")
    return tokens


def tag_scheme(tags: list[list[str]], source: str) -> str:
    """BIOES where any tag is `E-` or `S-`, else BIO; ValueError naming the first tag of neither form."""
    seen = set()
    for row, labels in enumerate(tags):
        for position, tag in enumerate(labels):
            if tag == OUTSIDE:
                continue
            match = TAG.fullmatch(tag)
            if match is None:
                raise ValueError(f"{source}: sentence {row} token {position} has tag {tag!r}, which is not BIO or "
                                 "BIOES (O, or B-, I-, E- or S- and an entity type, such as B-PER)")
            seen.add(match["prefix"])
    return "BIOES" if seen & {"E", "S"} else "BIO"


def _strings(value: object, source: str, column: str, row: int) -> list[str]:
    """A list of str from a list value (JSONL, Parquet) or a JSON list written as text (CSV); ValueError otherwise."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            value = None
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"{source}: column {column!r} sentence {row} is not a list of strings; a token table "
                         "holds a list of tokens and a list of tags per sentence")
    return [item.strip() for item in value]
