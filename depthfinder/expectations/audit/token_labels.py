"""How the audit reads a token-labels table (named entities, PII, slot filling): one row per sentence.

A token table has `tokens` and `tags` columns, a list of strings each and of one length per row; each tag is `O` or
`<P>-<TYPE>` with P in B/I (BIO, also called IOB2) or B/I/E/S (BIOES). Its `text` is the tokens joined by spaces
and its `label` the tags joined by spaces, so the text checks (duplicates, near-duplicates, empty texts, the same
sentence tagged two ways) read a sentence as one example. The token checks read the tokens and tags flattened into
one array per field (`TaggedTokens`), and the entity mentions in them (`Mentions`).

Mentions are read leniently, as conlleval does: a span starts at any B-, S-, or an I-/E- that does not continue a
span of its type, and runs through the I-/E- of its type after it. So a tag that breaks its scheme (an I-PER with
no B-PER before it) still makes a mention for the mention checks; breaking the scheme is `tag_scheme_violations`'.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Literal

import numpy as np
import pandas as pd

from depthfinder.expectations.table.normalize import normalize_text
from depthfinder.expectations.table.shape import TAGS_COLUMN
from depthfinder.expectations.table.tokens import TOKENS_COLUMN

OUTSIDE = "O"
PREFIXES = ("B", "I", "E", "S")
Scheme = Literal["BIO", "BIOES"]
# The prefixes of a tag that a next I-/E- of its type continues, and those of the tags that continue one.
OPENING, CONTINUING = ("B", "I"), ("I", "E")
# Why a row's tokens and tags cannot be read (schema's evidence); "" when they can.
NOT_A_LIST = "{} is not a list of strings"
NO_TOKENS = "no tokens"
LENGTHS_DIFFER = "tokens and tags differ in length"
BAD_TAG = "a tag is not O or B-/I-/E-/S-<TYPE>"


def is_token_table(table: pd.DataFrame) -> bool:
    """True for a token-labels table (it has `tokens` and `tags` columns)."""
    return TOKENS_COLUMN in table.columns and TAGS_COLUMN in table.columns


def split_tag(tag: str) -> tuple[str, str]:
    """A tag's prefix and entity type: "B-PER" -> ("B", "PER"), "O" -> ("O", ""); ("?", "") when it is neither."""
    if tag == OUTSIDE:
        return OUTSIDE, ""
    prefix, dash, entity = tag.partition("-")
    return (prefix, entity) if dash and prefix in PREFIXES and entity else ("?", "")


def _is_strings(value: object) -> bool:
    return isinstance(value, (list, tuple, np.ndarray)) and all(isinstance(item, str) for item in value)


def row_problems(table: pd.DataFrame) -> pd.Series:
    """Per row, why its tokens and tags cannot be read (one of the reasons above), or "" when they can."""
    problems = []
    for tokens, tags in zip(table[TOKENS_COLUMN].to_numpy(dtype=object), table[TAGS_COLUMN].to_numpy(dtype=object),
                            strict=True):
        if not _is_strings(tokens):
            problems.append(NOT_A_LIST.format("tokens"))
        elif not _is_strings(tags):
            problems.append(NOT_A_LIST.format("tags"))
        elif len(tokens) == 0:
            problems.append(NO_TOKENS)
        elif len(tokens) != len(tags):
            problems.append(LENGTHS_DIFFER)
        elif any(split_tag(tag)[0] == "?" for tag in set(tags)):
            problems.append(BAD_TAG)
        else:
            problems.append("")
    return pd.Series(problems, index=table.index, dtype="str")


@dataclass(frozen=True)
class TaggedTokens:
    """Every token of the table's readable sentences in one array per field, sentence after sentence.

    `sentence` is the position of the token's row in the table (its index is `table.index[sentence]`); `prefix` is
    O/B/I/E/S and `type` the entity type ("" for O).
    """

    sentence: np.ndarray  # int64
    position: np.ndarray  # int64, 0-based within the sentence
    token: np.ndarray  # object (str)
    normalized: np.ndarray  # object (str): normalize_text of the token, "" for punctuation
    tag: np.ndarray  # object (str)
    prefix: np.ndarray  # object (str)
    type: np.ndarray  # object (str)
    scheme: Scheme

    def __len__(self) -> int:
        return len(self.sentence)

    def same_sentence_as_previous(self) -> np.ndarray:
        """Per token: True when the token before it is in its sentence."""
        return after_previous(self.sentence[1:] == self.sentence[:-1], len(self))


def tagged_tokens(table: pd.DataFrame) -> TaggedTokens:
    """The tokens and tags of the rows `row_problems` passes, flattened; the scheme detected from the tags."""
    readable = np.flatnonzero(row_problems(table).to_numpy(dtype=object) == "")
    token_lists = table[TOKENS_COLUMN].to_numpy(dtype=object)[readable]
    tag_lists = table[TAGS_COLUMN].to_numpy(dtype=object)[readable]
    lengths = np.fromiter(map(len, tag_lists), dtype=np.int64, count=len(tag_lists))
    starts = np.cumsum(lengths) - lengths
    sentence = np.repeat(readable.astype(np.int64), lengths)
    position = np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(starts, lengths)
    token = _object_array(list(chain.from_iterable(token_lists)))
    tag = _object_array(list(chain.from_iterable(tag_lists)))
    # Real data repeats tokens and tags a lot: normalise and split each distinct one once.
    token_codes, unique_tokens = pd.factorize(token)
    normalized = _object_array([normalize_text(text) for text in unique_tokens])[token_codes]
    tag_codes, unique_tags = pd.factorize(tag)
    parts = [split_tag(text) for text in unique_tags]
    prefix = _object_array([part[0] for part in parts])[tag_codes]
    entity_type = _object_array([part[1] for part in parts])[tag_codes]
    scheme: Scheme = "BIOES" if any(part[0] in ("E", "S") for part in parts) else "BIO"
    return TaggedTokens(sentence=sentence, position=position, token=token, normalized=normalized, tag=tag,
                        prefix=prefix, type=entity_type, scheme=scheme)


def after_previous(pairs: np.ndarray, count: int) -> np.ndarray:
    """A fact about each of `count` tokens and the one before it (`pairs[i]`: tokens i and i + 1): False first."""
    return np.concatenate([np.zeros(min(count, 1), dtype=bool), pairs]).astype(bool)


def _object_array(values: Sequence[str]) -> np.ndarray:
    """A 1-d object array of strings (np.array would make a fixed-width unicode array)."""
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array


@dataclass(frozen=True)
class Mentions:
    """The entity mentions (spans) of a TaggedTokens, read leniently (module docstring), in token order.

    Span i covers flat tokens start[i] .. end[i] (inclusive) of sentence[i]; `text` is its normalised tokens joined
    by spaces (punctuation-only tokens left out), the mention's identity with its `type`.
    """

    sentence: np.ndarray  # int64 position of the row in the table
    start: np.ndarray  # int64 flat token index of the first token
    end: np.ndarray  # int64 flat token index of the last token
    type: np.ndarray  # object (str)
    text: np.ndarray  # object (str)

    def __len__(self) -> int:
        return len(self.start)

    @property
    def length(self) -> np.ndarray:
        """Tokens per mention."""
        return self.end - self.start + 1


def mentions(tokens: TaggedTokens) -> Mentions:
    """Every entity mention of `tokens`: a span starts where an entity tag does not continue the one before it."""
    same = tokens.same_sentence_as_previous()
    previous_opens = after_previous(np.isin(tokens.prefix[:-1], OPENING), len(tokens))
    previous_same_type = after_previous(tokens.type[1:] == tokens.type[:-1], len(tokens))
    continues = np.isin(tokens.prefix, CONTINUING) & same & previous_opens & previous_same_type
    entity = tokens.prefix != OUTSIDE
    start = np.flatnonzero(entity & ~continues)
    span = np.cumsum(entity & ~continues) - 1  # the span of each entity token
    end = np.zeros(len(start), dtype=np.int64)
    np.maximum.at(end, span[entity], np.flatnonzero(entity))
    texts = _object_array([
        " ".join(word for word in tokens.normalized[first : last + 1] if word)
        for first, last in zip(start, end, strict=True)
    ])
    return Mentions(sentence=tokens.sentence[start], start=start.astype(np.int64), end=end, type=tokens.type[start],
                    text=texts)


def mention_records(table: pd.DataFrame) -> pd.DataFrame:
    """One record per entity mention: its sentence's `index` in the table, `split` (where the table has one),
    normalised `text` and `type`."""
    spans = mentions(tagged_tokens(table))
    index = table.index[spans.sentence]
    records = pd.DataFrame({"index": index, "text": spans.text, "type": spans.type})
    if "split" in table.columns:
        records.insert(1, "split", table.loc[index, "split"].astype("str").to_numpy())
    return records


def span_tags(entity_type: str, length: int, scheme: Scheme) -> list[str]:
    """The tags of a span of `length` tokens tagged `entity_type` ("" for O) in `scheme`."""
    if not entity_type:
        return [OUTSIDE] * length
    if scheme == "BIOES":
        return [f"S-{entity_type}"] if length == 1 else [
            f"B-{entity_type}", *[f"I-{entity_type}"] * (length - 2), f"E-{entity_type}"]
    return [f"B-{entity_type}", *[f"I-{entity_type}"] * (length - 1)]


def tagged_text(tokens: object, tags: object) -> str:
    """A sentence as evidence: each token, its tag after a slash unless it is O ("Ada/B-PER Lovelace/I-PER wrote");
    "" when either is not a list of strings."""
    if not (_is_strings(tokens) and _is_strings(tags)):
        return ""
    return " ".join(token if tag == OUTSIDE else f"{token}/{tag}" for token, tag in zip(tokens, tags, strict=False))
