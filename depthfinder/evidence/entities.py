"""Entity-level F1 of token labels, by sentence, so that the bootstrap can resample sentences.

A tagger is scored on its entities, not its tokens (seqeval's strict mode: a mention counts only when its type and
both ends match, and only well-formed chunks of the scheme, BIO or BIOES, are entities). Each sentence contributes
three counts per entity type: the mentions it holds (`gold`), those the tagger found (`predicted`) and those that
match (`hits`). Every F1 over any set of sentences is a function of their summed counts, so a resample of sentences
is a weighted sum of rows: the same Poisson weights as evidence.bootstrap's, and the same paired comparison, with the
sentence as the unit (PITFALLS: resample whole sentences).

micro F1 = 2 Σ hits / (Σ gold + Σ predicted), over every type (seqeval's default `f1_score`); macro F1 the mean of
each type's F1 over the types a resample holds gold mentions of (evidence.counts, the arithmetic classes share).

A sentence's labels travel as one string, its tags joined by single spaces ("B-PER I-PER O B-LOC"); the scheme is
read from the gold tags. The bootstrap's evidence rows (`entity_rows`) are the counts over a fixed list of types, the
task's, so that every candidate's rows have the same columns: gold (sentences, T), and predicted then hits side by
side (sentences, 2T), as evidence.bootstrap.Predictions holds a classifier's true and predicted class ids.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from depthfinder.evidence.counts import f1_of_counts

SCHEMES = ("BIO", "BIOES")


@dataclass(frozen=True)
class EntityCounts:
    """Per sentence and entity type: gold mentions, predicted mentions, and those that match."""

    types: tuple[str, ...]
    gold: np.ndarray  # (sentences, types)
    predicted: np.ndarray
    hits: np.ndarray

    @property
    def sentences(self) -> int:
        return len(self.gold)


def scheme_of(tags: Iterable[str]) -> str:
    """BIOES where any tag is a single (`S-`) or an end (`E-`), else BIO."""
    return "BIOES" if any(tag.startswith(("S-", "E-")) for tag in tags) else "BIO"


def entity_types(tags: Iterable[str]) -> tuple[str, ...]:
    """The entity types of `tags`, sorted: ["B-LOC", "I-LOC", "O", "S-PER"] -> ("LOC", "PER") (a type is what follows
    the prefix, as seqeval reads it)."""
    return tuple(sorted({tag[1:].strip("-") or "_" for tag in tags if tag[:1] != "O"}))


def sentences(labels: Sequence[str]) -> list[list[str]]:
    """Each sentence's tags from its label string, the tags joined by single spaces."""
    return [label.split() for label in labels]


def entity_counts(true: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]], scheme: str,
                  types: Sequence[str] | None = None) -> EntityCounts:
    """Each sentence's gold, predicted and matching mentions per type, read in seqeval's strict mode of `scheme`.

    Args:
        true: each sentence's gold tags.
        predicted: each sentence's predicted tags, as many per sentence as `true` holds.
        scheme: BIO (IOB2) or BIOES.
        types: the columns, in order; none: the types of the mentions found, sorted.

    Raises:
        ValueError: an unknown scheme, sentences whose lengths differ, or a mention of a type not among `types`.
    """
    from seqeval.scheme import IOB2, IOBES, Entities

    if scheme not in SCHEMES:
        raise ValueError(f"unknown tag scheme {scheme!r}; expected one of {', '.join(SCHEMES)}")
    if len(true) != len(predicted) or any(len(a) != len(b) for a, b in zip(true, predicted, strict=False)):
        raise ValueError("predicted tags must match the gold tags sentence for sentence and token for token")
    kind = IOB2 if scheme == "BIO" else IOBES
    gold = [{entity.to_tuple()[1:] for entity in sentence} for sentence in Entities([list(s) for s in true],
                                                                                       kind).entities]
    found = [{entity.to_tuple()[1:] for entity in sentence} for sentence in Entities([list(s) for s in predicted],
                                                                                        kind).entities]
    mentioned = {mention[0] for sentence in gold + found for mention in sentence}
    if types is None:
        types = sorted(mentioned)
    elif unknown := sorted(mentioned - set(types)):
        raise ValueError(f"mentions of type {', '.join(map(repr, unknown))} are not among the entity types "
                         f"{', '.join(types)}")
    types = tuple(types)
    column = {name: index for index, name in enumerate(types)}
    counts = np.zeros((3, len(true), len(types)), dtype=np.float32)
    for row, (mine, theirs) in enumerate(zip(gold, found, strict=True)):
        for plane, mentions in enumerate((mine, theirs, mine & theirs)):
            for mention in mentions:
                counts[plane, row, column[mention[0]]] += 1
    return EntityCounts(types, *counts)


def entity_f1(counts: EntityCounts, weights: np.ndarray | None = None, average: str = "micro") -> np.ndarray:
    """Entity F1 per row of `weights` (resamples, sentences): each sentence counted as often as its weight; one
    value (all weights 1) without them. `average`: micro (over every mention) or macro (the mean over types)."""
    weights = np.ones((1, counts.sentences), dtype=np.float32) if weights is None else weights
    return f1_of_counts(*(weights @ plane for plane in (counts.gold, counts.predicted, counts.hits)), average)


def entity_rows(y_true: Sequence[str], y_pred: Sequence[str], types: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """A tagger's evidence rows for the bootstrap, one per sentence, over the fixed entity `types` (the task's).

    Args:
        y_true: each sentence's gold tags, joined by single spaces; the scheme is read from them.
        y_pred: each sentence's predicted tags, the same number per sentence.
        types: the columns, in order: every candidate's rows of a task have the same.

    Returns:
        true (sentences, T): gold mentions per type; predicted (sentences, 2T): predicted mentions per type, then the
        hits (those that match) per type; int32, as `save_predictions` writes them.

    Raises:
        ValueError: sentences or tags that differ in number, or a mention of a type not among `types`.
    """
    true = sentences(y_true)
    counts = entity_counts(true, sentences(y_pred), scheme_of(tag for tags in true for tag in tags), types)
    return counts.gold.astype(np.int32), np.concatenate([counts.predicted, counts.hits], axis=1).astype(np.int32)


def row_counts(true: np.ndarray, predicted: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`entity_rows`' rows read back: gold, predicted and hits, each (sentences, T) float32."""
    if true.ndim != 2 or predicted.shape != (len(true), 2 * true.shape[1]):
        raise ValueError(f"entity rows need true (sentences, T) and predicted (sentences, 2T) counts, got "
                         f"{true.shape} and {predicted.shape}")
    types = true.shape[1]
    return true.astype(np.float32), predicted[:, :types].astype(np.float32), predicted[:, types:].astype(np.float32)
