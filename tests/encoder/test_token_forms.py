"""A pretrained network of token labels as a standard Hugging Face folder: `AutoModelForTokenClassification` and the
token-classification pipeline load it as is, and tag each word and find each entity as depthfinder does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from depthfinder.encoder.bundle import save_hf_folder
from depthfinder.encoder.checkpoint import resolve_checkpoint
from depthfinder.encoder.pretrained import load_truncated
from depthfinder.encoder.serving import TOKENS_POOLING, TextClassifier, encode_words, load_tokenizer, spans_of
from tests.encoder.tiny_checkpoint import tiny_checkpoint
from tests.encoder.tiny_tokens import TAGS, TEXTS, varied_tagger

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")
# Words of the checkpoint's vocabulary and words it cuts into pieces (a word is tagged at its first piece).
UNSEEN = ["annabelle smithson visited yorkshire", "quokkas of perth met bob", "paris", "anna smith lives in paris"]


@pytest.fixture(scope="module")
def tagger(tmp_path_factory) -> tuple[TextClassifier, Path]:
    """A two-layer tiny BERT cut to one layer with a strong random token-classification head, and its folder."""
    root = tmp_path_factory.mktemp("token-forms")
    checkpoint = resolve_checkpoint(str(tiny_checkpoint(root / "bert", TEXTS, layers=2)))
    network = varied_tagger(load_truncated(checkpoint, 1, n_classes=len(TAGS), max_len=32, pooling=TOKENS_POOLING))
    tokenizer = load_tokenizer(checkpoint.tokenizer_path)
    folder = save_hf_folder(root / "hf", network, tokenizer, TAGS)
    return TextClassifier(network, tokenizer, TAGS), folder


def test_the_folder_loads_as_a_token_classifier_that_tags_each_first_piece_as_depthfinder_does(tagger) -> None:
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    classifier, folder = tagger
    model = AutoModelForTokenClassification.from_pretrained(folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    texts = TEXTS + UNSEEN

    tags = []
    for text, (_, firsts) in zip(texts, encode_words(classifier.tokenizer, texts, 32), strict=True):
        with torch.inference_mode():
            classes = model(**tokenizer(text, return_tensors="pt")).logits[0].argmax(dim=-1)  # (T,)
        tags.append([model.config.id2label[int(classes[position])] for position in firsts])

    assert tags == classifier.predict_tags(texts)
    assert model.config.label2id == {tag: index for index, tag in enumerate(TAGS)}
    assert len({tag for words in tags for tag in words}) >= 3  # the head varies: the comparison means something


def test_the_token_classification_pipeline_finds_the_entities_depthfinder_finds(tagger) -> None:
    from transformers import pipeline

    classifier, folder = tagger
    texts = TEXTS + UNSEEN
    find = pipeline("token-classification", model=str(folder), aggregation_strategy="first")

    found = [[(entity["entity_group"], entity["start"], entity["end"]) for entity in entities]
             for entities in find(texts)]

    expected = [[(span["type"], span["start"], span["end"]) for span in spans_of(text, tags)]
                for text, tags in zip(texts, classifier.predict_tags(texts), strict=True)]
    assert found == expected
    assert sum(len(spans) for spans in expected) >= len(texts)  # entities enough to compare


def test_the_folder_says_its_tags(tagger) -> None:
    _, folder = tagger
    config = json.loads((folder / "config.json").read_text())

    assert config["architectures"] == ["BertForTokenClassification"]
    assert config["id2label"] == {str(index): tag for index, tag in enumerate(TAGS)}
