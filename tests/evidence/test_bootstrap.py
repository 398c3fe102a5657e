"""The paired bootstrap on synthetic prediction sets whose truth is known."""

from __future__ import annotations

import numpy as np
import pytest

from depthfinder.evidence.bootstrap import (
    Predictions,
    _weighted_metric,
    compare_to_best,
    metric_interval,
    metric_of,
    paired_interval,
    save_predictions,
)
from depthfinder.evidence.entities import entity_rows
from depthfinder.evidence.metrics import ENTITY_METRICS, classification_metrics, entity_metrics
from tests.evidence.test_entities import TYPES, corrupted, tagged

CLASSES = 3
SHALLOW, DEEP = ("scratch", 1), ("scratch", 4)


def labels(rng: np.random.Generator, rows: int) -> np.ndarray:
    return rng.integers(0, CLASSES, rows)


def model(rng: np.random.Generator, true: np.ndarray, accuracy: float) -> np.ndarray:
    """Predictions right on each row with probability `accuracy`, independently, wrong ones to another class."""
    predicted = true.copy()
    wrong = rng.random(len(true)) >= accuracy
    predicted[wrong] = (true[wrong] + rng.integers(1, CLASSES, wrong.sum())) % CLASSES
    return predicted


def interval(true: np.ndarray, shallow: np.ndarray, deep: np.ndarray, metric: str = "accuracy",
             confidence: float = 0.9, resamples: int = 500):
    predictions = Predictions(true, {(*SHALLOW, 1): shallow, (*DEEP, 1): deep})
    return compare_to_best(predictions, {SHALLOW: [1], DEEP: [1]}, DEEP, metric, confidence, resamples)[SHALLOW]


def equal_models(seed: int, rows: int, trials: int = 150) -> list:
    """The interval of (shallow - deep) for `trials` pairs of equally good models on fresh rows."""
    rng = np.random.default_rng(seed)
    found = []
    for _ in range(trials):
        true = labels(rng, rows)
        found.append(interval(true, model(rng, true, 0.85), model(rng, true, 0.85)))
    return found


def test_the_interval_covers_the_true_difference_of_equal_models_at_the_stated_rate() -> None:
    covered = [found.low <= 0 <= found.high for found in equal_models(1, rows=400)]
    assert 0.82 <= np.mean(covered) <= 0.97  # 90 % intervals; 150 trials give about +-0.025


def test_equal_models_are_not_shown_worse_at_the_stated_rate() -> None:
    """What promotion relies on: an equal challenger is "not shown worse" (and promoted) at the stated rate."""
    not_worse = [found.high >= 0 for found in equal_models(2, rows=600)]  # at tolerance 0
    assert np.mean(not_worse) >= 0.88  # the upper end of a 90 % interval falls below the truth 5 % of the time


def test_a_depth_truly_worse_by_0_03_is_rejected_at_tolerance_0_01_and_an_equal_one_is_not() -> None:
    rng = np.random.default_rng(3)
    true = labels(rng, 4000)
    deep = model(rng, true, 0.90)
    worse = interval(true, model(rng, true, 0.87), deep, metric="macro_f1")
    equal = interval(true, model(rng, true, 0.90), deep, metric="macro_f1")
    assert worse.high < 0 and worse.low < -0.01  # shown worse, and not within tolerance
    assert equal.low <= 0 <= equal.high


def test_intervals_shrink_as_the_square_root_of_the_rows() -> None:
    rng = np.random.default_rng(4)
    widths = {}
    for rows in (500, 2000, 8000):
        true = labels(rng, rows)
        found = interval(true, model(rng, true, 0.85), model(rng, true, 0.85), metric="macro_f1")
        widths[rows] = found.high - found.low
    assert 0.35 < widths[2000] / widths[500] < 0.65
    assert 0.35 < widths[8000] / widths[2000] < 0.65


def test_seeds_that_disagree_widen_the_interval() -> None:
    rng = np.random.default_rng(5)
    true = labels(rng, 1000)
    deep = model(rng, true, 0.85)
    agreeing = {(*SHALLOW, s): model(rng, true, 0.85) for s in (1, 2, 3)}
    disagreeing = {(*SHALLOW, 1): model(rng, true, 0.75), (*SHALLOW, 2): model(rng, true, 0.85),
                   (*SHALLOW, 3): model(rng, true, 0.95)}
    widths = []
    for shallow in (agreeing, disagreeing):
        predictions = Predictions(true, {**shallow, (*DEEP, 1): deep})
        found = compare_to_best(predictions, {SHALLOW: [1, 2, 3], DEEP: [1]}, DEEP, "accuracy", 0.9, 1000)[SHALLOW]
        widths.append(found.high - found.low)
    assert widths[1] > 2 * widths[0]


@pytest.mark.parametrize("metric", ["accuracy", "balanced_accuracy", "macro_f1"])
def test_the_unweighted_metric_is_encoder_metrics(metric: str) -> None:
    rng = np.random.default_rng(6)
    true = labels(rng, 300)
    predicted = np.where(true == 2, 0, model(rng, true, 0.7))  # class 2 never predicted
    expected = classification_metrics(true.astype(str).tolist(), predicted.astype(str).tolist())[metric]
    assert _weighted_metric(true, predicted, np.ones((1, 300), dtype=np.float32), metric)[0] == pytest.approx(expected)


def test_a_classification_interval_is_what_it_was_before_entity_metrics() -> None:
    """Pinned from the bootstrap before token tasks shared its F1 arithmetic: the classes' results stay bit for bit."""
    rng = np.random.default_rng(7)
    true = rng.integers(0, 3, 200)
    better = np.where(rng.random(200) < 0.8, true, (true + 1) % 3)
    worse = np.where(rng.random(200) < 0.7, true, (true + 2) % 3)
    as_text = [[str(label) for label in labels] for labels in (true, better, worse)]
    assert paired_interval(*as_text, "macro_f1", 0.9, 500).model_dump() == {
        "difference": 0.1161566972732544, "low": 0.03969511588414517, "high": 0.19057783881823212}
    assert paired_interval(*as_text, "balanced_accuracy", 0.9, 500).model_dump() == {
        "difference": 0.11833643913269043, "low": 0.04428918759028109, "high": 0.1926394363244374}
    assert metric_interval(*as_text[:2], "macro_f1", 0.9, 500) == (
        0.7808346748352051, 0.7351823528607687, 0.8256640235582987)


# A tagger's rows are sentences, its evidence the entity counts over the task's types (the types of TYPES' tags).
ENTITY_TYPES = tuple(sorted(TYPES))


def tagger(seed: int, sentences: int, error_rates: tuple[float, ...]) -> tuple[list[str], list[list[str]]]:
    """Gold sentences (tags joined by spaces) and one tagger's predictions of them per error rate."""
    rng = np.random.default_rng(seed)
    true = tagged(rng, sentences, "BIO")
    return [" ".join(tags) for tags in true], [[" ".join(tags) for tags in corrupted(rng, true, rate)]
                                              for rate in error_rates]


@pytest.mark.parametrize("metric", ENTITY_METRICS)
def test_the_metric_of_entity_rows_is_entity_metrics(metric: str) -> None:
    true, (predicted,) = tagger(11, 200, (0.2,))
    truth, counts = entity_rows(true, predicted, ENTITY_TYPES)
    assert metric_of(truth, counts, metric) == pytest.approx(entity_metrics(true, predicted)[metric])


def test_entity_rows_saved_and_read_back_keep_their_shape_and_metric(tmp_path) -> None:
    true, (predicted,) = tagger(12, 50, (0.2,))
    truth, counts = entity_rows(true, predicted, ENTITY_TYPES)
    with np.load(save_predictions(tmp_path / "rows.npz", truth, counts)) as saved:
        assert saved["true"].shape == (50, 3) and saved["predicted"].shape == (50, 6)
        assert saved["predicted"].dtype == np.int32
        assert metric_of(saved["true"], saved["predicted"], "entity_f1") == metric_of(truth, counts, "entity_f1")


def test_a_clearly_better_tagger_is_shown_better_and_identical_taggers_are_paired() -> None:
    true, (good, bad) = tagger(13, 400, (0.05, 0.3))
    truth, good_rows = entity_rows(true, good, ENTITY_TYPES)
    _, bad_rows = entity_rows(true, bad, ENTITY_TYPES)
    worse = interval(truth, bad_rows, good_rows, metric="entity_f1")
    assert worse.difference == pytest.approx(
        entity_metrics(true, bad)["entity_f1"] - entity_metrics(true, good)["entity_f1"])
    assert worse.high < 0
    same = interval(truth, good_rows, good_rows.copy(), metric="entity_macro_f1")  # the same sentences each resample
    assert same.difference == same.low == same.high == 0


def test_intervals_on_tag_strings_agree_with_entity_metrics() -> None:
    true, (challenger, champion) = tagger(14, 300, (0.1, 0.15))
    scores = entity_metrics(true, challenger), entity_metrics(true, champion)
    for metric in ENTITY_METRICS:
        found = paired_interval(true, challenger, champion, metric, 0.9, 500)
        assert found.difference == pytest.approx(scores[0][metric] - scores[1][metric])
        assert found.low <= found.difference <= found.high and found.high - found.low > 0
        value, low, high = metric_interval(true, challenger, metric, 0.9, 500)
        assert value == pytest.approx(scores[0][metric]) and low < value < high


def test_a_type_only_the_tagger_predicts_counts_against_it_in_an_interval() -> None:
    true, predicted = ["B-PER I-PER O", "O O O"], ["B-PER I-PER O", "O B-MISC O"]  # no MISC in the gold tags
    value, _, _ = metric_interval(true, predicted, "entity_f1", 0.9, 100)
    assert value == pytest.approx(entity_metrics(true, predicted)["entity_f1"]) == pytest.approx(2 / 3)
