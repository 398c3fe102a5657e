"""The embedding rows a task never used, product-quantised (encoder.coded): the rows its texts use stay exact, the
tokenizer is unchanged, and the int8 ONNX form ships where the pruned vocabulary, cutting unseen words into pieces,
is refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from depthfinder.encoder.coded import CENTROIDS, CODE_DIMS, MAX_CODE_DIMS, coded_file, coded_network, product_quantise
from depthfinder.encoder.deployment import CODED, Gate, Shrinking, measure_deployment
from depthfinder.encoder.export import OnnxNetwork
from depthfinder.encoder.serving import TextClassifier, load_tokenizer
from depthfinder.encoder.vocabulary import token_counts, word_embedding
from tests.encoder.keyword_task import LABELS

GATE = Gate("macro_f1", 0.05)  # the deployment gate of these tests: macro-F1, margin 0.05

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning", "ignore::DeprecationWarning")
UNSEEN = ["zebras and quokkas graze", "wombats dig tunnels at dusk"]  # words the tokenizer has, the task's texts not


def test_k_means_finds_the_sub_vectors_a_table_is_made_of() -> None:
    """2,000 rows, each position's pair of numbers one of 16: 256 centroids per position code them exactly, where
    a table of random rows keeps an error."""
    generator = torch.Generator().manual_seed(0)
    patterns = torch.randn(4, 16, 2, generator=generator)  # 4 positions, 16 pairs each
    choice = torch.randint(0, 16, (2000, 4), generator=generator)
    rows = torch.stack([patterns[p, choice[:, p]] for p in range(4)], dim=1).reshape(2000, 8)

    codes, codebooks = product_quantise(rows, 2)

    decoded = torch.stack([codebooks[p, codes[:, p].long()] for p in range(4)], dim=1).reshape(2000, 8)
    assert codes.dtype == torch.uint8 and codes.shape == (2000, 4) and codebooks.shape == (4, CENTROIDS, 2)
    assert torch.allclose(decoded, rows, atol=1e-5)
    noise = torch.randn(2000, 8, generator=generator)
    codes, codebooks = product_quantise(noise, 8)  # 2,000 points in 8 dimensions, 256 centroids: lossy
    decoded = codebooks[0, codes[:, 0].long()]
    assert 0.2 < float((decoded - noise).norm() / noise.norm()) < 0.9


def test_the_rows_the_task_uses_stay_exact_and_the_tokenizer_does_not_change(varied) -> None:
    network, tokenizer, train, _ = varied
    coded, coding = coded_network(network, tokenizer, train)

    used = set(token_counts(tokenizer, train))
    assert coding.exact >= len(used) and coding.exact + coding.coded == tokenizer.get_vocab_size()
    assert coding.coded > 0
    original, compact = TextClassifier(network, tokenizer, LABELS), TextClassifier(coded, tokenizer, LABELS)
    assert np.allclose(compact.predict_proba(train), original.predict_proba(train), atol=1e-5)
    assert word_embedding(network).weight.shape[0] == tokenizer.get_vocab_size()  # the original is left as it was
    assert f"kept {coding.exact:,} embedding rows exact, coded {coding.coded:,}" in coding.text()


def test_the_coded_form_ships_where_pruning_cuts_unseen_words_and_is_refused(varied, tmp_path: Path) -> None:
    """Texts whose words the task's texts never used: pruning spells them out and changes the labels; the coded int8
    form keeps them whole and ships, with the full tokenizer beside it."""
    network, tokenizer, train, texts = varied
    unseen = [f"{text} {extra}" for text, extra in zip(texts, UNSEEN * len(texts), strict=False)]
    truths = TextClassifier(network, tokenizer, LABELS).predict(unseen)

    deployment = measure_deployment(TextClassifier(network, tokenizer, LABELS),
                                    unseen, truths, GATE, tmp_path, Shrinking(train))

    pruned, coded = deployment.variant("torch-pruned"), deployment.variant(CODED)
    assert not pruned.shipped and pruned.metrics["macro_f1"] < 1.0 - 0.05
    assert coded is not None and coded.shipped and not coded.pruned
    assert deployment.coding is not None and deployment.coding.coded > 0
    assert load_tokenizer(deployment.tokenizer_file).get_vocab() == tokenizer.get_vocab()
    onnx = TextClassifier(OnnxNetwork(Path(coded.file), network.cfg), tokenizer, LABELS)
    assert onnx.predict(unseen) == truths
    assert "int8 ONNX with the unused rows coded: macro_f1" in deployment.sentence


def test_no_coded_form_where_the_pruned_vocabulary_ships(varied, tmp_path: Path) -> None:
    network, tokenizer, train, texts = varied
    truths = TextClassifier(network, tokenizer, LABELS).predict(texts)

    deployment = measure_deployment(TextClassifier(network, tokenizer, LABELS),
                                    texts, truths, GATE, tmp_path, Shrinking(train))

    assert deployment.variant("torch-pruned").shipped
    assert deployment.variant(CODED) is None and deployment.coding is None


def test_under_a_size_limit_the_rows_are_coded_as_finely_as_it_allows(varied, tmp_path: Path) -> None:
    """A limit the finest code's file is over: the next coarser code brings the file within it, fitted (not the
    zeros it was weighed with); a limit no code meets: the coarsest, over it (the gate's verdict follows)."""
    network, tokenizer, train, _ = varied
    width = word_embedding(network).weight.shape[1]
    coarser = [d for d in range(CODE_DIMS + 1, MAX_CODE_DIMS + 1) if width % d == 0]
    assert coarser, width  # else the tiny model tests nothing here
    _, fine, path = coded_file(network, tokenizer, train, tmp_path / "fine.onnx")
    limit = path.stat().st_size / 2**20 - 1e-6

    _, coding, path = coded_file(network, tokenizer, train, tmp_path / "limited.onnx", limit_mb=limit)

    assert fine.code_dims == CODE_DIMS and coding.code_dims == coarser[0]
    assert path.stat().st_size / 2**20 <= limit
    assert coding.error < 0.99  # fitted: codes of zeros would miss every row by its whole norm
    _, coarsest, path = coded_file(network, tokenizer, train, tmp_path / "over.onnx", limit_mb=1e-3)
    assert coarsest.code_dims == coarser[-1] and path.stat().st_size / 2**20 > 1e-3
    assert not list(tmp_path.glob("*.fp32.onnx"))  # the float32 graphs it quantised are gone
