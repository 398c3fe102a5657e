"""Entity F1 from per-sentence counts is seqeval's strict F1, on any set of sentences a resample draws."""

from __future__ import annotations

import numpy as np
import pytest
from seqeval.metrics import f1_score
from seqeval.scheme import IOB2, IOBES

from depthfinder.evidence.bootstrap import poisson_weights
from depthfinder.evidence.entities import entity_counts, entity_f1, entity_rows, entity_types

TYPES = ("PER", "LOC", "ORG")


def tagged(rng: np.random.Generator, sentences: int, scheme: str) -> list[list[str]]:
    """Random sentences of well-formed mentions and, now and then, a broken one (an I- with no B-)."""
    out = []
    for _ in range(sentences):
        tags: list[str] = []
        while len(tags) < int(rng.integers(3, 12)):
            kind, length = TYPES[int(rng.integers(3))], int(rng.integers(1, 4))
            if rng.random() < 0.5:
                tags.append("O")
            elif rng.random() < 0.1:
                tags.append(f"I-{kind}")  # not an entity in strict mode
            elif scheme == "BIO":
                tags += [f"B-{kind}"] + [f"I-{kind}"] * (length - 1)
            else:
                tags += [f"S-{kind}"] if length == 1 else [f"B-{kind}", *[f"I-{kind}"] * (length - 2), f"E-{kind}"]
        out.append(tags)
    return out


def corrupted(rng: np.random.Generator, sentences: list[list[str]], rate: float = 0.2) -> list[list[str]]:
    """The same sentences with a share `rate` of their tags changed: what a tagger that errs predicts."""
    choices = ["O", *(f"{prefix}-{kind}" for prefix in "BI" for kind in TYPES)]
    return [[choices[int(rng.integers(len(choices)))] if rng.random() < rate else tag for tag in tags]
            for tags in sentences]


@pytest.mark.parametrize(("scheme", "kind"), [("BIO", IOB2), ("BIOES", IOBES)])
def test_micro_entity_f1_is_seqevals_strict_f1_on_every_resample(scheme: str, kind) -> None:
    rng = np.random.default_rng(1)
    true = tagged(rng, 120, scheme)
    predicted = corrupted(rng, true)
    counts = entity_counts(true, predicted, scheme)
    assert entity_f1(counts)[0] == pytest.approx(f1_score(true, predicted, mode="strict", scheme=kind), abs=1e-6)
    weights = next(poisson_weights(len(true), 5, np.random.default_rng(2)))
    for row, drawn in zip(entity_f1(counts, weights), weights, strict=True):
        resample = [i for i, times in enumerate(drawn.astype(int)) for _ in range(times)]
        expected = f1_score([true[i] for i in resample], [predicted[i] for i in resample], mode="strict",
                            scheme=kind)
        assert row == pytest.approx(expected, abs=1e-5)


def test_macro_entity_f1_averages_the_types_with_gold_mentions() -> None:
    true = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "O"]]
    predicted = [["B-PER", "I-PER", "O", "O"], ["B-ORG", "B-LOC"]]
    counts = entity_counts(true, predicted, "BIO")
    assert counts.types == ("LOC", "ORG", "PER")
    assert counts.gold.tolist() == [[1, 0, 1], [0, 1, 0]] and counts.hits.tolist() == [[0, 0, 1], [0, 1, 0]]
    assert entity_f1(counts, average="macro")[0] == pytest.approx((0 + 1 + 1) / 3)  # LOC found 0 of 1, once wrongly
    assert entity_f1(counts)[0] == pytest.approx(2 * 2 / (3 + 3))


def test_a_mention_counts_only_with_its_type_and_both_ends() -> None:
    true = [["B-PER", "I-PER", "O"]]
    for wrong in (["B-PER", "O", "O"], ["B-LOC", "I-LOC", "O"], ["I-PER", "I-PER", "O"]):
        assert entity_f1(entity_counts(true, [wrong], "BIO"))[0] == 0.0


@pytest.mark.parametrize(("predicted", "message"), [
    ([["O"]], "token for token"), ([["O", "O", "O"], ["O"]], "sentence for sentence")])
def test_predictions_unlike_the_gold_tags_are_refused(predicted: list[list[str]], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        entity_counts([["B-PER", "I-PER", "O"]], predicted, "BIO")
    with pytest.raises(ValueError, match="unknown tag scheme 'IOB1'"):
        entity_counts([["O"]], [["O"]], "IOB1")


def test_the_types_of_tags_are_what_follows_their_prefixes_sorted() -> None:
    assert entity_types(["B-LOC", "I-LOC", "O", "S-PER"]) == ("LOC", "PER")
    assert entity_types(["O", "O"]) == ()


def test_entity_rows_hold_every_type_of_the_task_in_its_column_and_predicted_before_hits() -> None:
    true, predicted = entity_rows(["B-PER I-PER O B-LOC", "B-ORG O"], ["B-PER I-PER O O", "B-ORG B-LOC"],
                                  ("LOC", "MISC", "ORG", "PER"))  # no MISC in these sentences: its column is zeros
    assert true.dtype == predicted.dtype == np.int32
    assert true.tolist() == [[1, 0, 0, 1], [0, 0, 1, 0]]
    assert predicted.tolist() == [[0, 0, 0, 1, 0, 0, 0, 1], [1, 0, 1, 0, 0, 0, 1, 0]]


def test_entity_rows_refuse_a_mention_of_a_type_outside_the_tasks() -> None:
    with pytest.raises(ValueError, match="'MISC' are not among the entity types LOC, PER"):
        entity_rows(["B-PER O"], ["B-PER B-MISC"], ("LOC", "PER"))
