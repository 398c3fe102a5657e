"""Quality metrics of a classifier or a tagger, computed the same way for every candidate and the champion.

A classifier's row is a text and its label a class; a tagger's row is a sentence and its label the sentence's tags
joined by single spaces ("B-PER I-PER O B-LOC"), predicted with as many tags. A tagger is scored on its entities
(evidence.entities: seqeval's strict mode, the scheme, BIO or BIOES, read from the gold tags), and its share of right
tags is reported beside them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from depthfinder.evidence.entities import entity_counts, entity_f1, scheme_of, sentences

METRICS = ("accuracy", "balanced_accuracy", "macro_f1")
ENTITY_METRICS = ("entity_f1", "entity_macro_f1")  # micro F1 over all mentions (seqeval's f1_score); mean over types


def quality_metrics(y_true: Sequence[str], y_pred: Sequence[str], metric: str) -> dict[str, float]:
    """The family of metrics that holds `metric`: `entity_metrics` for an entity metric, else
    `classification_metrics`."""
    if metric in ENTITY_METRICS:
        return entity_metrics(y_true, y_pred)
    if metric in METRICS:
        return classification_metrics(y_true, y_pred)
    raise ValueError(f"unknown metric {metric!r}; expected one of {', '.join(METRICS + ENTITY_METRICS)}")


def classification_metrics(y_true: Sequence[str], y_pred: Sequence[str]) -> dict[str, float]:
    """Accuracy, balanced accuracy (mean recall over true classes) and macro-F1 over true classes."""
    true, pred = np.asarray(y_true, dtype=object), np.asarray(y_pred, dtype=object)
    if len(true) == 0 or len(true) != len(pred):
        raise ValueError(f"need equally long, non-empty label lists, got {len(true)} and {len(pred)}")
    recalls, f1s = [], []
    for cls in np.unique(true):
        hits = np.sum((pred == cls) & (true == cls))
        recall = hits / np.sum(true == cls)
        predicted = np.sum(pred == cls)
        precision = hits / predicted if predicted else 0.0
        recalls.append(recall)
        f1s.append(2 * precision * recall / (precision + recall) if precision + recall else 0.0)
    return {
        "accuracy": float(np.mean(true == pred)),
        "balanced_accuracy": float(np.mean(recalls)),
        "macro_f1": float(np.mean(f1s)),
    }


def entity_metrics(y_true: Sequence[str], y_pred: Sequence[str]) -> dict[str, float]:
    """Entity micro-F1 (`entity_f1`), macro-F1 over the types with gold mentions (`entity_macro_f1`) and the share of
    tags equal to the gold ones (`token_accuracy`), of sentences given as tags joined by single spaces."""
    true, pred = sentences(y_true), sentences(y_pred)
    if len(true) == 0 or len(true) != len(pred):
        raise ValueError(f"need equally long, non-empty sentence lists, got {len(true)} and {len(pred)}")
    counts = entity_counts(true, pred, scheme_of(tag for tags in true for tag in tags))  # refuses unequal tag counts
    tags = sum(len(tags) for tags in true)
    if tags == 0:
        raise ValueError(f"the {len(true)} gold sentences hold no tags")
    right = sum(a == b for mine, theirs in zip(true, pred, strict=True) for a, b in zip(mine, theirs, strict=True))
    return {
        "entity_f1": float(entity_f1(counts)[0]),
        "entity_macro_f1": float(entity_f1(counts, average="macro")[0]),
        "token_accuracy": right / tags,
    }
