"""A pair read as one sequence: the tokenizer joins the two texts with its separator, a pretrained type with token
types gives the second text type 1 as its tokenizer does (so the Hugging Face folder, in a `transformers` pipeline
given the pair, scores as depthfinder does), and every form of the network takes the same two inputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from depthfinder.encoder.bundle import save_bundle, save_hf_folder
from depthfinder.encoder.checkpoint import resolve_checkpoint
from depthfinder.encoder.export import OnnxNetwork, export_onnx
from depthfinder.encoder.pretrained import load_truncated
from depthfinder.encoder.serving import TextClassifier, encode_texts, load_bundle, load_tokenizer, pad_batch
from depthfinder.encoder.tokenizer import SEP, train_tokenizer
from tests.encoder.tiny_checkpoint import tiny_checkpoint

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")
LABELS = ["different", "same"]
PAIRS = [("the chef baked a cake", "the baker roasted the garlic"), ("the pilot booked a flight", "a cake"),
         ("a cake", "the chef baked a cake and the pilot booked the night bus")]
TEXTS = [text for pair in PAIRS for text in pair]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A BERT whose token type embedding has two rows, and its tokenizer's pair template ([SEP] $B:1 [SEP]:1)."""
    return resolve_checkpoint(str(tiny_checkpoint(tmp_path_factory.mktemp("bert-pairs"), TEXTS, layers=2,
                                                  type_vocab_size=2)))


def network(checkpoint, pooling: str = "mean"):
    torch.manual_seed(0)
    return load_truncated(checkpoint, 2, n_classes=2, max_len=32, pooling=pooling,
                          tokenizer=load_tokenizer(checkpoint.tokenizer_path)).eval()


def test_scratch_tokenizer_joins_a_pair_with_its_separator() -> None:
    tokenizer = train_tokenizer(TEXTS, vocab_size=80)
    single, pair = encode_texts(tokenizer, ["a cake", ("a cake", "the chef")], max_len=32)
    assert pair[: len(single)] == single and pair[len(single)] == tokenizer.token_to_id(SEP)
    assert len(encode_texts(tokenizer, [PAIRS[2]], max_len=8)[0]) == 8  # a long pair is cut to max_len


def test_a_pairs_second_text_has_the_token_type_its_tokenizer_gives_it(checkpoint) -> None:
    tokenizer = load_tokenizer(checkpoint.tokenizer_path)
    model = network(checkpoint)
    assert model.cfg.segment_after == tokenizer.token_to_id(SEP)
    encodings = tokenizer.encode_batch([*PAIRS, "a cake"])
    input_ids, mask = pad_batch([encoding.ids for encoding in encodings])
    types = model._token_types(input_ids, mask)["token_type_ids"]
    for row, encoding in enumerate(encodings):
        assert types[row, : len(encoding.ids)].tolist() == encoding.type_ids
        assert not types[row, len(encoding.ids):].any()  # padding, and all of a single text, is type 0
    with torch.inference_mode():  # the types change what the network computes: they reach its embedding
        typed = model(input_ids, mask)
        untyped = model.head(model.encoder(input_ids=input_ids, attention_mask=mask).last_hidden_state.mean(1))
    assert not torch.allclose(typed[:3], untyped[:3])


def test_a_type_without_token_types_reads_every_token_as_type_0(tmp_path: Path) -> None:
    checkpoint = resolve_checkpoint(str(tiny_checkpoint(tmp_path / "one-type", TEXTS, layers=2)))
    assert network(checkpoint).cfg.segment_after is None


def test_the_bundle_the_onnx_form_and_the_hf_pipeline_score_a_pair_alike(checkpoint, tmp_path: Path) -> None:
    from transformers import pipeline

    model = network(checkpoint, pooling="head")
    tokenizer = load_tokenizer(checkpoint.tokenizer_path)
    bundle = load_bundle(save_bundle(tmp_path / "bundle", model, tokenizer, LABELS, inputs=("text", "pair")))
    assert bundle.inputs == ("text", "pair")
    expected = TextClassifier(model, tokenizer, LABELS).predict_proba(PAIRS)
    np.testing.assert_allclose(bundle.predict_proba(PAIRS), expected, atol=1e-6)
    onnx = TextClassifier(OnnxNetwork(export_onnx(model, tmp_path / "model.onnx"), model.cfg), tokenizer, LABELS)
    np.testing.assert_allclose(onnx.predict_proba(PAIRS), expected, atol=1e-4)
    hf = pipeline("text-classification", model=str(save_hf_folder(tmp_path / "hf", model, tokenizer, LABELS)),
                  device="cpu")
    scored = hf([{"text": first, "text_pair": second} for first, second in PAIRS], top_k=None)
    served = np.array([[next(s["score"] for s in row if s["label"] == label) for label in LABELS] for row in scored])
    np.testing.assert_allclose(served, expected, atol=1e-5)
