from __future__ import annotations

from itertools import pairwise

import pytest
import torch
import torch.nn.functional as F

from encoder.model import EncoderClassifier, EncoderConfig
from encoder.tokenizer import PAD_ID


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
