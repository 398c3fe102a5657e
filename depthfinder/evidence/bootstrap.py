"""How sure is "no worse than the best"? A paired bootstrap over saved predictions of the same labelled rows.

Every candidate of a sweep predicts the same validation rows (selection.predictions reads them back), so
two depths can be compared row by row, with no extra training: resample the rows, compute
each depth's metric on the same resample, and take the difference. Its spread over
resamples is the noise of the comparison, which the validation split's size sets: a few
hundred rows move macro-F1 by a few hundredths.

The bootstrap is Poisson's (every row gets a Poisson(1) weight per resample: the same
distribution as drawing n rows with replacement, as n grows, and vectorised in chunks),
with a fixed seed so that a decision replays exactly. A depth trained with several seeds
has its seeds resampled too, with replacement, independently of the rows: its metric in a
resample is the mean over the drawn seeds, so the interval holds both sources of noise.

A row is what the metric is resampled by. For a classifier it is a text: `true` and each candidate's `predicted`
are (n,) class ids. For a tagger (an entity metric) it is a sentence, and the rows are its entity counts over the
task's fixed list of types (evidence.entities.entity_rows): `true` (n, T) gold mentions per type, `predicted` (n, 2T)
the predicted mentions per type and then the hits, so any F1 of a resample is a weighted sum of rows, and the same
Poisson weights over sentences keep the comparison paired.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import Field

from depthfinder.evidence.counts import f1_of_counts
from depthfinder.evidence.entities import entity_rows, entity_types, row_counts, sentences
from depthfinder.evidence.metrics import ENTITY_METRICS, METRICS
from depthfinder.runtime.files import written_whole
from depthfinder.runtime.records import Record

RESAMPLES = 2000
SEED = 20261130
# Weights per chunk of resamples (resamples x rows), ~16 MB of float32.
_CHUNK_CELLS = 4_000_000

Arm = tuple[str, int]  # (family, depth): what the rule chooses among


class Interval(Record):
    """A depth's metric minus the best depth's, with its bootstrap interval."""

    difference: float = Field(description="Observed difference of the mean validation metric (this - best).")
    low: float = Field(description="Lower end of the interval at the rule's confidence.")
    high: float = Field(description="Upper end of the interval.")

    @property
    def half_width(self) -> float:
        """Half the interval's width: how finely these rows resolve a difference."""
        return (self.high - self.low) / 2

    def text(self) -> str:
        """`-0.004 [-0.011, +0.003]`."""
        return f"{self.difference:+.3f} [{self.low:+.3f}, {self.high:+.3f}]".replace("-", "\u2212")


@dataclass(frozen=True)
class Predictions:
    """The validation rows' truth and every candidate's predictions, row for row: class ids, or a tagger's entity
    counts per sentence (the module's docstring)."""

    true: np.ndarray  # (n,) class ids, or (n, T) gold mentions per entity type
    predicted: dict[tuple[str, int, int], np.ndarray]  # (family, depth, seed) -> (n,) class ids, or (n, 2T) counts

    @property
    def rows(self) -> int:
        return len(self.true)


def save_predictions(path: Path, true: Sequence[int] | np.ndarray, predicted: Sequence[int] | np.ndarray) -> Path:
    """Write a candidate's validation rows (true and predicted: class ids, or entity counts, of their shapes) to
    `path` (.npz) as int32, atomically."""
    with written_whole(path) as partial, partial.open("wb") as file:
        np.savez(file, true=np.asarray(true, dtype=np.int32), predicted=np.asarray(predicted, dtype=np.int32))
    return path


def compare_to_best(
    predictions: Predictions, arms: dict[Arm, list[int]], best: Arm, metric: str, confidence: float,
    resamples: int = RESAMPLES,
) -> dict[Arm, Interval]:
    """Each arm's metric minus `best`'s (means over their seeds), with a two-sided interval at `confidence`.

    Args:
        predictions: the saved validation predictions.
        arms: (family, depth) -> its seeds.
        best: the arm every other is compared with.
        metric: accuracy, balanced_accuracy or macro_f1 on class ids, entity_f1 or entity_macro_f1 on entity counts
            (as evidence.metrics computes them).
        confidence: the interval's coverage, e.g. 0.9 for the 5th to 95th percentile.
        resamples: bootstrap resamples.

    Returns:
        (family, depth) -> Interval; `best`'s own is zero.
    """
    differences = resampled_differences(predictions, arms, best, metric, resamples)
    return {arm: interval_of(observed, resampled, confidence) for arm, (observed, resampled) in differences.items()}


def resampled_differences(
    predictions: Predictions, arms: dict[Arm, list[int]], best: Arm, metric: str, resamples: int = RESAMPLES,
) -> dict[Arm, tuple[float, np.ndarray]]:
    """Each arm's observed difference from `best` and its (resamples,) bootstrap differences: what
    `compare_to_best` takes its intervals from, for a caller that wants several confidences of one bootstrap."""
    true = predictions.true
    keys = [(*arm, seed) for arm, seeds in arms.items() for seed in seeds]
    rng = np.random.default_rng(SEED)
    resampled = dict(zip(keys, _resampled_metrics(true, [predictions.predicted[k] for k in keys], metric,
                                                  resamples, rng), strict=True))  # the same rows for all: paired
    means = {arm: _seed_resampled_mean(np.stack([resampled[(*arm, s)] for s in seeds]), rng)
             for arm, seeds in arms.items()}
    observed = {arm: float(np.mean([metric_of(true, predictions.predicted[(*arm, s)], metric) for s in seeds]))
                for arm, seeds in arms.items()}
    return {arm: (observed[arm] - observed[best], means[arm] - means[best]) for arm in arms}


def interval_of(difference: float, resampled: np.ndarray, confidence: float) -> Interval:
    """The observed `difference` with the two-sided percentile interval of its bootstrap at `confidence`."""
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(resampled, [tail, 100 - tail])
    return Interval(difference=difference, low=float(low), high=float(high))


def paired_interval(
    true: Sequence[str], predicted: Sequence[str], reference: Sequence[str], metric: str, confidence: float,
    resamples: int = RESAMPLES,
) -> Interval:
    """`predicted`'s metric minus `reference`'s on the same labelled rows, with a paired bootstrap interval at
    `confidence` (the rows are resampled together): how a challenger is compared with the champion. The labels are
    classes, or for an entity metric sentences' tags joined by single spaces."""
    truth, (mine, theirs) = _rows(metric, true, predicted, reference)
    pair = Predictions(truth, {("a", 0, 0): mine, ("b", 0, 0): theirs})
    return compare_to_best(pair, {("a", 0): [0], ("b", 0): [0]}, ("b", 0), metric, confidence, resamples)[("a", 0)]


def metric_interval(true: Sequence[str], predicted: Sequence[str], metric: str, confidence: float,
                    resamples: int = RESAMPLES) -> tuple[float, float, float]:
    """The metric of `predicted` on labelled rows (as `paired_interval`'s) and its bootstrap interval at
    `confidence`: (value, low, high)."""
    truth, (guess,) = _rows(metric, true, predicted)
    values = _resampled_metrics(truth, [guess], metric, resamples, np.random.default_rng(SEED))[0]
    found = interval_of(metric_of(truth, guess, metric), values, confidence)
    return found.difference, found.low, found.high


def _rows(metric: str, true: Sequence[str], *predicted: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
    """The labelled rows as the bootstrap reads them, the truth's and each prediction's: class ids, or for an entity
    metric each sentence's counts over the entity types of all the tags."""
    if metric not in ENTITY_METRICS:
        truth, *guesses = _class_ids(true, *predicted)
        return truth, guesses
    types = entity_types(tag for labels in (true, *predicted) for tags in sentences(labels) for tag in tags)
    rows = [entity_rows(true, guess, types) for guess in predicted]
    return rows[0][0], [counts for _, counts in rows]


def _class_ids(*labellings: Sequence[str]) -> list[np.ndarray]:
    """Each labelling as class ids, numbered over the labels of all of them (sorted)."""
    classes = {label: index for index, label in enumerate(sorted(set().union(*labellings)))}
    return [np.array([classes[label] for label in labels], dtype=np.int32) for labels in labellings]


def _seed_resampled_mean(values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(seeds, resamples) -> (resamples,): per resample, the mean over seeds drawn with replacement."""
    seeds, resamples = values.shape
    if seeds == 1:
        return values[0]
    drawn = rng.integers(0, seeds, size=(resamples, seeds))
    return values[drawn, np.arange(resamples)[:, None]].mean(axis=1)


def _resampled_metrics(
    true: np.ndarray, predicted: list[np.ndarray], metric: str, resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """Each prediction set's metric on the same `resamples` Poisson-weighted resamples of the rows,
    (sets, resamples)."""
    values = [[_weighted_metric(true, classes, weights, metric) for classes in predicted]
              for weights in poisson_weights(len(true), resamples, rng)]
    return np.concatenate([np.stack(chunk_values) for chunk_values in values], axis=1)


def poisson_weights(rows: int, resamples: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """The Poisson(1) weights of `resamples` resamples of `rows` rows, in chunks of (resamples, rows) float32."""
    chunk = max(1, _CHUNK_CELLS // max(rows, 1))
    for start in range(0, resamples, chunk):
        yield rng.poisson(1.0, size=(min(chunk, resamples - start), rows)).astype(np.float32)


def metric_of(true: np.ndarray, predicted: np.ndarray, metric: str) -> float:
    """The metric of predicted rows against true ones (class ids, or entity counts), as evidence.metrics computes
    it."""
    return float(_weighted_metric(true, predicted, np.ones((1, len(true)), dtype=np.float32), metric)[0])


def _weighted_metric(true: np.ndarray, predicted: np.ndarray, weights: np.ndarray, metric: str) -> np.ndarray:
    """The metric per row of `weights` (resamples, rows): each row's weight counts it that many times.

    Over the classes present in the resample's true labels, as evidence.metrics: recall and F1 per class
    (F1 = 2 TP / (true + predicted)), averaged. An entity metric sums the sentences' counts, weighted, and takes
    micro or macro F1 of them (evidence.counts).
    """
    if metric in ENTITY_METRICS:
        counts = (weights @ plane for plane in row_counts(true, predicted))  # gold, predicted, hits: (B, T)
        return f1_of_counts(*counts, "micro" if metric == "entity_f1" else "macro")
    if metric == "accuracy":
        return (weights @ (true == predicted).astype(np.float32)) / np.maximum(weights.sum(axis=1), 1e-12)
    classes = np.unique(true)
    is_true = (true[:, None] == classes[None, :]).astype(np.float32)  # (n, C)
    is_predicted = (predicted[:, None] == classes[None, :]).astype(np.float32)
    hits = weights @ (is_true * is_predicted)  # (B, C)
    true_count, predicted_count = weights @ is_true, weights @ is_predicted
    if metric == "macro_f1":
        return f1_of_counts(true_count, predicted_count, hits, "macro")
    if metric != "balanced_accuracy":
        raise ValueError(f"unknown metric {metric!r}; expected one of {', '.join(METRICS + ENTITY_METRICS)}")
    present = true_count > 0
    recall = np.divide(hits, true_count, out=np.zeros_like(hits), where=present)
    return recall.sum(axis=1) / np.maximum(present.sum(axis=1), 1)
