"""A fast text baseline for confident learning: hashed word n-grams, tf-idf, logistic regression, out of fold."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

FOLDS = 5
HASH_FEATURES = 1 << 18
# Standard errors above the majority class that say the baseline learnt something: a baseline that learnt nothing
# gets there in about 0.1 % of audits.
SIGNIFICANCE_Z = 3.0


def above_majority(accuracy: float, labels: np.ndarray) -> tuple[float, float]:
    """The majority class's accuracy on `labels`, and how many binomial standard errors `accuracy` is above it."""
    baseline = float(np.bincount(labels).max() / len(labels))
    spread = np.sqrt(baseline * (1 - baseline) / len(labels))
    return baseline, float((accuracy - baseline) / spread) if spread > 0 else 0.0


def out_of_fold_probabilities(
    texts: Sequence[str], labels: np.ndarray, seed: int = 0, groups: np.ndarray | None = None, longest_ngram: int = 2,
) -> np.ndarray:
    """Each text's class probabilities from a model that never saw it (stratified K-fold, or K-fold by group).

    Args:
        texts: normalised texts.
        labels: class code per text, 0..K-1; every class needs at least FOLDS texts.
        seed: seed of the folds.
        groups: when given, a group per text (a token's sentence): a group's texts are held out together, so no
            text is scored by a model that read its neighbours.
        longest_ngram: the longest run of words read as one feature (2: words and word pairs; 1: words, for texts
            that are already bags of features).

    Returns:
        A (len(texts), K) array of probabilities.
    """
    return out_of_fold_and_beyond(texts, labels, (), seed, groups, longest_ngram)[0]


def out_of_fold_and_beyond(
    texts: Sequence[str], labels: np.ndarray, others: Sequence[str], seed: int = 0, groups: np.ndarray | None = None,
    longest_ngram: int = 2,
) -> tuple[np.ndarray, np.ndarray]:
    """Out-of-fold probabilities of the labelled `texts` (as out_of_fold_probabilities), and of `others`, texts no
    fold was trained on, the mean of every fold's model: (len(texts), K) and (len(others), K)."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.feature_extraction.text import HashingVectorizer, TfidfTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold, StratifiedKFold

    vectorizer = HashingVectorizer(
        n_features=HASH_FEATURES, ngram_range=(1, longest_ngram), token_pattern=r"\S+", alternate_sign=False,
        norm=None, binary=True,
    )
    # IDF needs no label, so fitting it on all texts leaks nothing into the held-out folds.
    everything = TfidfTransformer(sublinear_tf=True).fit_transform(vectorizer.transform([*texts, *others]))
    features, beyond = everything[: len(texts)], everything[len(texts):]
    n_classes = int(labels.max()) + 1
    probabilities, others_probabilities = np.zeros((len(texts), n_classes)), np.zeros((len(others), n_classes))
    if groups is None:
        folds = StratifiedKFold(n_splits=FOLDS, shuffle=True, random_state=seed).split(features, labels)
    else:
        folds = GroupKFold(n_splits=FOLDS, shuffle=True, random_state=seed).split(features, labels, groups)
    for train, held_out in folds:
        model = LogisticRegression(C=4.0, solver="saga", max_iter=50, tol=1e-3, random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # 50 saga epochs are plenty for a ranking
            model.fit(features[train], labels[train])
        probabilities[np.ix_(held_out, model.classes_)] = model.predict_proba(features[held_out])
        if len(others):
            others_probabilities[:, model.classes_] += model.predict_proba(beyond) / FOLDS
    return probabilities, others_probabilities


def fit_and_score(texts: Sequence[str], labels: np.ndarray, others: Sequence[str], seed: int = 0) -> np.ndarray:
    """Class probabilities of `others` from the baseline model fitted on the labelled `texts`, (len(others), K)."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.feature_extraction.text import HashingVectorizer, TfidfTransformer
    from sklearn.linear_model import LogisticRegression

    vectorizer = HashingVectorizer(
        n_features=HASH_FEATURES, ngram_range=(1, 2), token_pattern=r"\S+", alternate_sign=False, norm=None,
        binary=True,
    )
    everything = TfidfTransformer(sublinear_tf=True).fit_transform(vectorizer.transform([*texts, *others]))
    model = LogisticRegression(C=4.0, solver="saga", max_iter=50, tol=1e-3, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(everything[: len(texts)], labels)
    probabilities = np.zeros((len(others), int(labels.max()) + 1))
    probabilities[:, model.classes_] = model.predict_proba(everything[len(texts):])
    return probabilities
