"""A tagger's metrics are seqeval's strict entity scores, with the scheme read from the gold tags."""

from __future__ import annotations

import pytest
from seqeval.metrics import f1_score
from seqeval.scheme import IOB2, IOBES

from depthfinder.evidence.entities import scheme_of
from depthfinder.evidence.metrics import METRICS, entity_metrics, quality_metrics

# Three sentences, four types; the tagger finds PER, ORG, MISC and one LOC, ends a LOC one token early, calls a PER
# a LOC and adds an ORG: 4 hits of 6 gold and 7 predicted mentions.
BIO_TRUE = ["B-PER I-PER O B-LOC I-LOC O", "O B-ORG I-ORG I-ORG O B-PER", "B-MISC O O B-LOC"]
BIO_PREDICTED = ["B-PER I-PER O B-LOC O O", "O B-ORG I-ORG I-ORG O B-LOC", "B-MISC O B-ORG B-LOC"]
BIOES_TRUE = ["B-PER E-PER O B-LOC E-LOC O", "O B-ORG I-ORG E-ORG O S-PER", "S-MISC O O S-LOC"]
BIOES_PREDICTED = ["B-PER E-PER O S-LOC O O", "O B-ORG I-ORG E-ORG O S-LOC", "S-MISC O S-ORG S-LOC"]
MACRO = (2 / 5 + 1 + 2 / 3 + 2 / 3) / 4  # LOC, MISC, ORG, PER


@pytest.mark.parametrize(("true", "predicted", "kind", "right_tags"), [
    (BIO_TRUE, BIO_PREDICTED, IOB2, 13), (BIOES_TRUE, BIOES_PREDICTED, IOBES, 12)])
def test_entity_metrics_are_seqevals_strict_scores(true: list[str], predicted: list[str], kind, right_tags: int
                                                   ) -> None:
    tags_true, tags_predicted = [s.split(" ") for s in true], [s.split(" ") for s in predicted]

    found = entity_metrics(true, predicted)

    assert found["entity_f1"] == pytest.approx(f1_score(tags_true, tags_predicted, mode="strict", scheme=kind))
    assert found["entity_f1"] == pytest.approx(2 * 4 / (6 + 7))
    assert found["entity_macro_f1"] == pytest.approx(
        f1_score(tags_true, tags_predicted, mode="strict", scheme=kind, average="macro"))  # every type has gold
    assert found["entity_macro_f1"] == pytest.approx(MACRO)
    assert found["token_accuracy"] == pytest.approx(right_tags / 16)


def test_the_scheme_is_bioes_where_a_tag_is_a_single_or_an_end() -> None:
    assert scheme_of(["B-PER", "I-PER", "O"]) == "BIO"
    assert scheme_of(["B-PER", "E-PER", "O"]) == scheme_of(["O", "S-LOC"]) == "BIOES"


@pytest.mark.parametrize(("true", "predicted", "message"), [
    (["B-PER O"], ["B-PER O", "O O"], "equally long, non-empty sentence lists, got 1 and 2"),
    ([], [], "got 0 and 0"),
    (["B-PER O"], ["B-PER"], "token for token")])
def test_tags_unlike_the_gold_ones_in_number_are_refused(true: list[str], predicted: list[str], message: str
                                                         ) -> None:
    with pytest.raises(ValueError, match=message):
        entity_metrics(true, predicted)


def test_quality_metrics_are_the_family_that_holds_the_metric() -> None:
    assert quality_metrics(BIO_TRUE, BIO_PREDICTED, "entity_macro_f1") == entity_metrics(BIO_TRUE, BIO_PREDICTED)
    classes = quality_metrics(["a", "b", "b"], ["a", "b", "a"], "macro_f1")
    assert set(classes) == set(METRICS) and classes["accuracy"] == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="unknown metric 'f1'; expected one of accuracy, "):
        quality_metrics(["a"], ["a"], "f1")
