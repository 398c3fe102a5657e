from __future__ import annotations

import math
from itertools import pairwise

import pytest
import torch
import torch.nn.functional as F

from depthfinder.encoder.model import EncoderClassifier, EncoderConfig, dropout
from depthfinder.encoder.tokenizer import PAD_ID


def tiny_config(depth: int, **overrides: object) -> EncoderConfig:
    settings = {"vocab_size": 200, "n_classes": 3, "depth": depth, "d_model": 32, "n_heads": 2, "d_ff": 64,
                "max_len": 32, "dropout": 0.0}
    return EncoderConfig(**(settings | overrides))


def random_batch(batch_size: int, length: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(1, 200, (batch_size, length), generator=generator)
    return input_ids, torch.ones(batch_size, length, dtype=torch.bool)


@pytest.mark.parametrize("depth", [1, 2, 4])
def test_logits_have_one_row_per_text_and_one_column_per_class(depth: int) -> None:
    network = EncoderClassifier(tiny_config(depth))
    assert len(network.blocks) == depth
    logits = network(*random_batch(5, 11))
    assert logits.shape == (5, 3)
    assert torch.isfinite(logits).all()


def test_parameter_count_grows_by_one_identical_block_per_depth() -> None:
    counts = [EncoderClassifier(tiny_config(depth)).num_params() for depth in (1, 2, 3, 4)]
    increments = {later - earlier for earlier, later in pairwise(counts)}
    assert counts == sorted(set(counts))
    assert len(increments) == 1
    network = EncoderClassifier(tiny_config(2))
    embeddings = network.tok_emb.weight.numel() + network.pos_emb.weight.numel()
    assert network.num_params(embeddings=False) == network.num_params() - embeddings


@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_padding_with_masked_pad_tokens_leaves_logits_unchanged(pooling: str) -> None:
    torch.manual_seed(0)
    network = EncoderClassifier(tiny_config(2, pooling=pooling)).eval()
    input_ids, mask = random_batch(3, 7)
    padded_ids = torch.cat([input_ids, torch.full((3, 9), PAD_ID)], dim=1)
    padded_mask = torch.cat([mask, torch.zeros(3, 9, dtype=torch.bool)], dim=1)
    with torch.inference_mode():
        assert torch.allclose(network(input_ids, mask), network(padded_ids, padded_mask), atol=1e-5)


def test_loss_falls_when_overfitting_one_batch() -> None:
    torch.manual_seed(0)
    network = EncoderClassifier(tiny_config(2))
    input_ids, mask = random_batch(8, 12)
    targets = torch.tensor([0, 1, 2, 0, 1, 2, 0, 1])
    optimizer = torch.optim.Adam(network.parameters(), lr=3e-3)
    losses = []
    for _ in range(50):
        optimizer.zero_grad()
        loss = F.cross_entropy(network(input_ids, mask), targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.1 * losses[0]


def test_cpu_dropout_drops_a_fraction_p_independently_and_rescales_the_rest() -> None:
    torch.manual_seed(0)
    x = torch.ones(64, 4, 32, 32)
    first, second = dropout(x, 0.1, training=True), dropout(x, 0.1, training=True)
    kept = first != 0
    assert kept.float().mean().item() == pytest.approx(0.9, abs=0.005)
    assert torch.allclose(first[kept], torch.tensor(1 / 0.9))
    assert ((second != 0) != kept).float().mean().item() == pytest.approx(2 * 0.1 * 0.9, abs=0.005)  # a new mask
    assert dropout(x, 0.1, training=False) is x
    assert dropout(x, 0.0, training=True) is x
    assert dropout(x.bfloat16(), 0.5, training=True).dtype == torch.bfloat16


def test_training_attention_path_computes_what_sdpa_computes() -> None:
    """In training, CPU attention with dropout is computed by hand; with nothing dropped it
    must give what the SDPA path gives in eval mode, padding included."""
    torch.manual_seed(0)
    network = EncoderClassifier(tiny_config(2, dropout=1e-9))  # a drop threshold of 0: nothing is dropped
    input_ids, mask = random_batch(3, 9)
    mask[0, 5:] = False
    input_ids[0, 5:] = PAD_ID
    training_logits = network.train()(input_ids, mask)
    with torch.inference_mode():
        eval_logits = network.eval()(input_ids, mask)
    assert torch.allclose(training_logits, eval_logits, atol=1e-6)


@pytest.mark.parametrize("depth", [1, 4])
def test_residual_branches_are_scaled_by_one_over_sqrt_depth(depth: int) -> None:
    torch.manual_seed(0)
    block = EncoderClassifier(tiny_config(depth)).blocks[0].eval()
    x = torch.randn(2, 5, 32)
    key_mask = torch.ones(2, 1, 1, 5, dtype=torch.bool)
    with torch.inference_mode():
        after_attention = x + block.attn(block.ln_1(x), key_mask) / math.sqrt(depth)
        expected = after_attention + block.mlp(block.ln_2(after_attention)) / math.sqrt(depth)
        assert torch.allclose(block(x, key_mask), expected, atol=1e-6)
