"""How far apart can two models be on texts nobody labelled? As far as they disagree, and no further.

On a row where two models predict the same class, their correctness is the same whatever the label: the difference
of their accuracy is carried by the rows where they disagree, and can never exceed the share of them. That share
needs no labels, and teams hold far more unlabelled texts than labelled ones: measured on a pool of texts from the
same source, its upper confidence bound bounds how much worse a cheaper depth can be than the best.

Each metric the rule may choose by is bounded row by row: a row where the best predicts class b and the other model
class k can make the other worse by at most
- accuracy: 1 (the best right, the other wrong);
- balanced accuracy: 1 / (C pi_b) (the row is of class b: the other loses a hit of b's recall), where pi_b is the
  share of class b among the labelled rows and C the number of classes;
- macro-F1: 2 / (C (pi_b + m_b)) + 1 / (C (pi_k + m_k)). The row changes class b's and class k's counts only, and
  F1_c = 2 tp_c / (p_c + n_c) (shares: tp_c of hits, p_c predicted as c, n_c truly c, at least pi_c): a hit of b
  lost (tp and p one row less) lowers F1_b by 2 (p + n - tp) / ((p + n)(p + n - 1)) <= 2 / (p + n); a prediction of
  k gained where k is wrong lowers F1_k by 2 tp / ((p + n)(p + n + 1)) <= 1 / (p + n), as tp <= (p + n) / 2. F1_c
  depends on class c's counts alone, so its steps from one model's predictions to the other's may be taken in any
  order: those that add predictions of c first, so p_c never falls below m_c, the smaller of the two models' shares
  on the pool. A labelled row where the other model is right gains it a hit of k: at least
  2 n / (p + n)^2 >= min(2 pi_k / (M_k + pi_k)^2, 2 / (M_k + 1)^2), M_k the larger predicted share plus the
  disagreement (the most p_k can reach on the way).
The bound of the metric's difference is the mean of these over the pool's rows (zero where they agree), and its upper
confidence bound is a Poisson bootstrap of that mean over the rows, the rule's own (evidence.bootstrap). It is a
bound, not an estimate: it never understates how much worse the other can be, and it is loose by how many of the
disagreements the other model gets right.

A label on a disagreement row tightens it: the row then counts for what it does (for accuracy and balanced accuracy
its exact part of the difference, negative where the other model is the one right; for macro-F1 its worst part,
negative by the least a hit can add where the other model is the one right). Unlabelled disagreements keep their
worst case, so the bound stays sound whichever rows are labelled and however they were chosen.

Where it is not sound: a pool from another source than the labelled rows (other users, another season, another
language) bounds the difference on that source, not on the rows the model will serve; texts the models trained on
agree more than new ones (the flow drops pool texts found in the labelled table).
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from depthfinder.evidence.bootstrap import RESAMPLES, SEED, Interval, poisson_weights
from depthfinder.runtime.records import Record

# A row's class when nobody labelled it.
UNLABELLED = -1


class PoolBound(Record):
    """How a depth stands against the best on unlabelled texts: how often they disagree, and the bound that puts on
    the difference of the rule's metric."""

    rows: int = Field(description="Unlabelled texts both predicted.")
    disagreement: float = Field(description="Share of those texts on which it and the best predict other classes.")
    disagreement_low: float = Field(description="Lower end of that share's interval at the rule's confidence.")
    disagreement_high: float = Field(description="Upper end of it.")
    labelled: int = Field(0, description="Texts where they disagree whose labels were given (--labels).")
    unlabelled_disagreements: int = Field(
        0, description="Texts where they disagree still without a label (any seed pair): those whose labels could "
        "tighten the bound."
    )
    worse_by_at_most: float = Field(
        description="Upper confidence bound of how much lower its metric can be than the best's on texts of this "
        "source (one-sided, at the rule's confidence's tail)."
    )
    better_by_at_most: float = Field(description="The same bound of how much higher it can be.")

    def interval(self, difference: float) -> Interval:
        """Its difference from the best as an Interval: the observed `difference` of the labelled rows, and the
        bounds the pool puts on it."""
        return Interval(difference=difference, low=-self.worse_by_at_most, high=self.better_by_at_most)

    def bound_text(self) -> str:
        """`at most 0.006 below`, or, where labels show it better, `at least 0.010 above`."""
        if self.worse_by_at_most > 0:
            return f"at most {self.worse_by_at_most:.3f} below"
        return f"at least {-self.worse_by_at_most:.3f} above"

    def share_text(self) -> str:
        """`disagreement 0.4% [0.3%, 0.6%]`."""
        return (f"disagreement {self.disagreement:.1%} [{self.disagreement_low:.1%}, "
                f"{self.disagreement_high:.1%}]")

    def text(self) -> str:
        """`disagreement 0.4% [0.3%, 0.6%] of 8,000 unlabelled texts`."""
        return f"{self.share_text()} of {self.rows:,} unlabelled texts"


def pool_bound(
    best: list[np.ndarray], other: list[np.ndarray], metric: str, class_shares: np.ndarray, confidence: float,
    true: np.ndarray | None = None, resamples: int = RESAMPLES,
) -> PoolBound:
    """The disagreement of `other` with `best` on a pool of texts and the bound it puts on their metric's difference.

    Args:
        best: the best depth's predicted class ids on the pool, one array per seed.
        other: the other depth's, one array per seed; the bound is the mean over every pair of seeds, as the rule
            compares the means over seeds.
        metric: accuracy, balanced_accuracy or macro_f1.
        class_shares: each class's share among the labelled rows, by class id (a lower confidence bound of it:
            smaller shares only loosen the bound).
        confidence: the rule's two-sided confidence; each bound is one-sided at its tail.
        true: the pool's known labels as class ids, UNLABELLED where none.
        resamples: bootstrap resamples.

    Returns:
        The PoolBound.
    """
    rows = len(best[0])
    true = np.full(rows, UNLABELLED, dtype=np.int64) if true is None else np.asarray(true)
    classes = len(class_shares)
    shares = [np.bincount(p, minlength=classes) / rows for p in [*best, *other]]
    pairs = [(b, o) for b in best for o in other]
    differ = np.mean([(b != o) for b, o in pairs], axis=0).astype(np.float64)
    # m_c and M_c: no model's predicted share of c is below the first, and on the way from one model's predictions to
    # another's (the steps that add predictions of c first) none is above the second.
    predicted = (np.minimum.reduce(shares), np.maximum.reduce(shares) + max((b != o).mean() for b, o in pairs))
    worse = np.mean([worst_per_row(b, o, true, metric, class_shares, predicted) for b, o in pairs], axis=0)
    better = np.mean([worst_per_row(o, b, true, metric, class_shares, predicted) for b, o in pairs], axis=0)
    means = _resampled_means(np.stack([worse, better, differ]), resamples)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(means[2], [tail, 100 - tail])
    disagreeing = differ > 0
    return PoolBound(
        rows=rows, disagreement=float(differ.mean()), disagreement_low=float(low), disagreement_high=float(high),
        labelled=int((disagreeing & (true != UNLABELLED)).sum()),
        unlabelled_disagreements=int((disagreeing & (true == UNLABELLED)).sum()),
        # A metric in [0, 1] differs by 1 at most, however loose the bound.
        worse_by_at_most=min(1.0, float(np.percentile(means[0], 100 - tail))),
        better_by_at_most=min(1.0, float(np.percentile(means[1], 100 - tail))),
    )


def worst_per_row(best: np.ndarray, other: np.ndarray, true: np.ndarray, metric: str, class_shares: np.ndarray,
                  predicted: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """How much each row can make `other`'s metric lower than `best`'s at most (0 where they agree, negative where a
    label shows it helps `other` by at least so much): its part of the bound (the module's docstring derives it).
    `predicted` is each class's least and most predicted share along the way from one model's predictions to the
    other's (m_c, and M_c for the help a labelled row gives; none: 0 and 1)."""
    classes = len(class_shares)
    floor, ceiling = predicted if predicted is not None else (np.zeros(classes), np.ones(classes))
    differ = best != other
    known = true != UNLABELLED
    best_right = np.where(known, true == best, True)  # unlabelled: the worst case, the best right, the other wrong
    other_wrong = np.where(known, true != other, True)
    other_right = known & (true == other)
    if metric == "accuracy":
        return np.where(differ, best_right * 1.0 - other_right, 0.0)
    if metric == "balanced_accuracy":  # a row moves the recall of its own class only
        recall = 1 / (classes * class_shares)
        return np.where(differ, recall[best] * best_right - recall[other] * other_right, 0.0)
    if metric == "macro_f1":
        lost_hit = 2 / (classes * (class_shares + floor))  # F1 = 2 tp / (p + n): a hit lost, tp and p one less
        wrong_gained = 1 / (classes * (class_shares + floor))  # p one more: 2 tp / (p + n)^2, tp <= (p + n) / 2
        hit_gained = np.minimum(2 * class_shares / (ceiling + class_shares) ** 2, 2 / (ceiling + 1) ** 2) / classes
        return np.where(differ, lost_hit[best] * best_right + wrong_gained[other] * other_wrong
                        - hit_gained[other] * other_right, 0.0)
    raise ValueError(f"unknown metric {metric!r}; expected accuracy, balanced_accuracy or macro_f1")


def _resampled_means(values: np.ndarray, resamples: int) -> np.ndarray:
    """(k, rows) -> (k, resamples): each row of `values`' mean over the same Poisson resamples of the rows."""
    rng = np.random.default_rng(SEED)
    means = [(weights @ values.T).T / np.maximum(weights.sum(axis=1), 1e-12)
             for weights in poisson_weights(values.shape[1], resamples, rng)]
    return np.concatenate(means, axis=1)
