from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from tokenizers import Tokenizer

from depthfinder.encoder.bundle import save_bundle
from depthfinder.encoder.model import EncoderClassifier
from depthfinder.encoder.serving import TextClassifier, encode_texts, load_bundle, pad_batch
from tests.encoder.tiny_models import tiny_network, tiny_tokenizer

LABELS = ["sport", "food", "tech"]
# Lengths differ a lot, so length-sorted batches reorder them; the last one exceeds max_len.
TEXTS = [
    "great plot",
    "an awful film with awful acting and an awful plot",
    "fun",
    "",
    "truly great music",
    "great " * 40,
    "awful cast",
]


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return tiny_tokenizer()


@pytest.fixture(scope="module")
def network(tokenizer: Tokenizer) -> EncoderClassifier:
    """Three classes, with a head scaled up so probabilities differ clearly from text to text."""
    network = tiny_network(tokenizer, n_classes=len(LABELS))
    with torch.no_grad():
        network.head.weight.normal_(std=3.0)
    return network.eval()


def one_at_a_time(network: EncoderClassifier, tokenizer: Tokenizer, texts: list[str]) -> np.ndarray:
    """Probabilities computed text by text, with no padding and no reordering."""
    rows = []
    with torch.no_grad():
        for ids in encode_texts(tokenizer, texts, network.cfg.max_len):
            rows.append(torch.softmax(network(*pad_batch([ids])), dim=-1)[0].numpy())
    return np.stack(rows)


def test_round_trip_gives_identical_probabilities(tmp_path: Path, network, tokenizer) -> None:
    directory = save_bundle(tmp_path / "bundle", network, tokenizer, LABELS)
    loaded = load_bundle(directory)
    original = TextClassifier(network, tokenizer, LABELS).predict_proba(TEXTS)
    assert np.array_equal(loaded.predict_proba(TEXTS), original)
    assert loaded.labels == LABELS
    assert loaded.network.cfg == network.cfg
    assert not loaded.network.training
    assert sorted(p.name for p in directory.iterdir()) == ["encoder.json", "tokenizer.json", "weights.pt"]
    assert json.loads((directory / "encoder.json").read_text())["labels"] == LABELS


def test_predictions_come_back_in_input_order(network, tokenizer) -> None:
    classifier = TextClassifier(network, tokenizer, LABELS)
    expected = one_at_a_time(network, tokenizer, TEXTS)
    probs = classifier.predict_proba(TEXTS, batch_size=2)  # four length-sorted batches
    assert probs.shape == (len(TEXTS), len(LABELS))
    np.testing.assert_allclose(probs, expected, atol=1e-5)
    assert len(set(expected.argmax(axis=1))) > 1, "the fixture should predict more than one class"
    assert classifier.predict(TEXTS, batch_size=3) == [LABELS[k] for k in expected.argmax(axis=1)]


def test_reversed_input_gives_reversed_output(network, tokenizer) -> None:
    classifier = TextClassifier(network, tokenizer, LABELS)
    forward = classifier.predict_proba(TEXTS, batch_size=2)
    backward = classifier.predict_proba(TEXTS[::-1], batch_size=2)
    np.testing.assert_allclose(backward, forward[::-1], atol=1e-6)


def test_empty_input_gives_an_empty_matrix(network, tokenizer) -> None:
    assert TextClassifier(network, tokenizer, LABELS).predict_proba([]).shape == (0, len(LABELS))


def test_save_rejects_labels_that_do_not_match_the_head(tmp_path: Path, network, tokenizer) -> None:
    with pytest.raises(ValueError, match="3 distinct class names"):
        save_bundle(tmp_path / "bundle", network, tokenizer, ["sport", "food"])
    with pytest.raises(ValueError, match="3 distinct class names"):
        save_bundle(tmp_path / "bundle", network, tokenizer, ["sport", "food", "food"])


def test_load_names_the_missing_file(tmp_path: Path, network, tokenizer) -> None:
    directory = save_bundle(tmp_path / "bundle", network, tokenizer, LABELS)
    (directory / "weights.pt").unlink()
    with pytest.raises(ValueError, match="weights.pt is missing"):
        load_bundle(directory)
    with pytest.raises(ValueError, match="encoder.json is missing"):
        load_bundle(tmp_path / "nowhere")


def test_a_bundle_of_another_format_is_refused(tmp_path) -> None:
    import json

    from depthfinder.encoder.bundle import save_bundle
    from depthfinder.encoder.serving import CONFIG_FILE, load_bundle
    from tests.encoder.tiny_models import LABELS, tiny_network, tiny_tokenizer

    tokenizer = tiny_tokenizer()
    directory = save_bundle(tmp_path / "b", tiny_network(tokenizer), tokenizer, LABELS)
    config = json.loads((directory / CONFIG_FILE).read_text())
    del config["format"]  # as written before the depth-scaled residuals
    (directory / CONFIG_FILE).write_text(json.dumps(config))

    with pytest.raises(ValueError, match="format-1 bundle; this depthfinder reads format 2"):
        load_bundle(directory)
