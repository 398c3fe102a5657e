"""Entity-level F1 of token labels, by sentence, so that the bootstrap can resample sentences.

A tagger is scored on its entities, not its tokens (seqeval's strict mode: a mention counts only when its type and
both ends match, and only well-formed chunks of the scheme, BIO or BIOES, are entities). Each sentence contributes
three counts per entity type: the mentions it holds (`gold`), those the tagger found (`predicted`) and those that
match (`hits`). Every F1 over any set of sentences is a function of their summed counts, so a resample of sentences
is a weighted sum of rows: the same Poisson weights as evidence.bootstrap's, and the same paired comparison, with the
sentence as the unit (PITFALLS: resample whole sentences).

micro F1 = 2 Σ hits / (Σ gold + Σ predicted), over every type (seqeval's default `f1_score`); macro F1 the mean of
each type's F1 over the types a resample holds gold mentions of.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

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


def entity_counts(true: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]], scheme: str) -> EntityCounts:
    """Each sentence's gold, predicted and matching mentions per type, read in seqeval's strict mode of `scheme`.

    Args:
        true: each sentence's gold tags.
        predicted: each sentence's predicted tags, as many per sentence as `true` holds.
        scheme: BIO (IOB2) or BIOES.

    Raises:
        ValueError: an unknown scheme, or sentences whose lengths differ.
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
    types = tuple(sorted({mention[0] for sentence in gold + found for mention in sentence}))
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
    gold, predicted, hits = (weights @ plane for plane in (counts.gold, counts.predicted, counts.hits))  # (B, T)
    if average == "micro":
        total = gold.sum(axis=1) + predicted.sum(axis=1)
        return np.divide(2 * hits.sum(axis=1), total, out=np.zeros(len(weights), dtype=np.float64),
                         where=total > 0)
    if average != "macro":
        raise ValueError(f"unknown average {average!r}; expected micro or macro")
    present = gold > 0
    per_type = np.divide(2 * hits, gold + predicted, out=np.zeros_like(hits), where=present)
    return per_type.sum(axis=1) / np.maximum(present.sum(axis=1), 1)
