"""Each form a candidate could ship in is weighed: the pruned forms weigh less by the embedding rows they drop, the
int8 ONNX files less than the float32 weights, and the network weighed is left as it was."""

from __future__ import annotations

import pytest
import torch
from tokenizers import Tokenizer, models

from depthfinder.encoder.checkpoint import resolve_checkpoint
from depthfinder.encoder.pretrained import load_truncated
from depthfinder.encoder.serving import load_tokenizer
from depthfinder.encoder.size import (
    INT8,
    INT8_CODED,
    INT8_PRUNED,
    TORCH,
    TORCH_PRUNED,
    form_sizes,
    smallest,
    weights_mb,
)
from depthfinder.encoder.vocabulary import kept_ids, token_counts
from tests.encoder.keyword_task import LABELS, keyword_frame
from tests.encoder.tiny_checkpoint import WORDS, tiny_checkpoint

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning", "ignore::DeprecationWarning")
TRAIN = [text for text in keyword_frame(120)["text"] if "football" in text]
HIDDEN = 128  # wide enough that the embedding rows, not the ONNX graph, decide the int8 files' sizes


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
    texts = [*keyword_frame(120)["text"], " ".join(WORDS)]
    checkpoint = resolve_checkpoint(str(tiny_checkpoint(tmp_path_factory.mktemp("size") / "bert", texts, layers=2,
                                                       hidden=HIDDEN)))
    network = load_truncated(checkpoint, 1, n_classes=len(LABELS), max_len=32, pooling="mean").eval()
    return network, load_tokenizer(checkpoint.tokenizer_path)


def test_the_pruned_form_weighs_less_by_the_rows_it_drops(pretrained) -> None:
    network, tokenizer = pretrained
    before = {name: tensor.clone() for name, tensor in network.state_dict().items()}
    sizes = form_sizes(network, tokenizer, TRAIN)
    assert set(sizes) == {TORCH, TORCH_PRUNED}  # the int8 ONNX forms only when asked
    dropped = tokenizer.get_vocab_size() - len(kept_ids(tokenizer, token_counts(tokenizer, TRAIN)))
    assert dropped > 0
    assert sizes[TORCH] == pytest.approx(weights_mb(network))
    assert sizes[TORCH] - sizes[TORCH_PRUNED] == pytest.approx(dropped * HIDDEN * 4 / 2**20)  # float32
    assert smallest(sizes) == sizes[TORCH_PRUNED] and smallest({}) is None
    assert all(torch.equal(before[name], tensor) for name, tensor in network.state_dict().items())


def test_the_int8_forms_are_weighed_by_their_files(pretrained) -> None:
    pytest.importorskip("onnxruntime")
    network, tokenizer = pretrained
    sizes = form_sizes(network, tokenizer, TRAIN, onnx=True)
    assert set(sizes) == {TORCH, TORCH_PRUNED, INT8, INT8_PRUNED, INT8_CODED}
    assert sizes[INT8_PRUNED] < sizes[INT8] < sizes[TORCH]
    assert sizes[INT8_PRUNED] < sizes[TORCH_PRUNED]
    assert smallest(sizes) == sizes[INT8_PRUNED]


def test_the_coded_form_is_weighed_as_the_deployment_makes_it(pretrained, tmp_path) -> None:
    """Weighed unfitted (its codes all zero), it weighs what the fitted file the deployment ships weighs."""
    pytest.importorskip("onnxruntime")
    from depthfinder.encoder.coded import coded_network
    from depthfinder.encoder.export import export_onnx, quantize

    network, tokenizer = pretrained
    fitted, _ = coded_network(network, tokenizer, TRAIN)
    file = quantize(export_onnx(fitted, tmp_path / "coded.onnx"), tmp_path / "coded-int8.onnx")
    assert form_sizes(network, tokenizer, TRAIN, onnx=True)[INT8_CODED] == pytest.approx(
        file.stat().st_size / 2**20, rel=0.01)


def test_a_tokenizer_that_cannot_be_pruned_has_no_pruned_form(pretrained) -> None:
    network, _ = pretrained
    bpe = Tokenizer(models.BPE(vocab={"a": 0, "b": 1}, merges=[]))
    assert set(form_sizes(network, bpe, TRAIN)) == {TORCH}
