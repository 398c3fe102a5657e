"""Tiny tokenizers and networks for the bundle and registry tests (d_model 16, one block)."""

from __future__ import annotations

import torch
from tokenizers import Tokenizer
from torch import nn

from depthfinder.encoder.model import EncoderClassifier, EncoderConfig
from depthfinder.encoder.serving import encode_texts, pad_batch
from depthfinder.encoder.tokenizer import train_tokenizer

LABELS = ["neg", "pos"]
TRAIN_TEXTS = [
    "a great film", "great acting and a great plot", "truly great fun", "great music, great cast",
    "an awful film", "awful acting and an awful plot", "truly awful mess", "awful music, awful cast",
]
TRAIN_LABELS = ["pos"] * 4 + ["neg"] * 4


def tiny_tokenizer() -> Tokenizer:
    """A WordPiece vocabulary trained on the training sentences."""
    return train_tokenizer(TRAIN_TEXTS, vocab_size=80)


def tiny_network(tokenizer: Tokenizer, n_classes: int = 2, seed: int = 0) -> EncoderClassifier:
    """An untrained one-block encoder without dropout."""
    torch.manual_seed(seed)
    cfg = EncoderConfig(
        vocab_size=tokenizer.get_vocab_size(), n_classes=n_classes, depth=1,
        d_model=16, n_heads=2, d_ff=32, max_len=16, dropout=0.0,
    )
    return EncoderClassifier(cfg)


def constant_network(tokenizer: Tokenizer, label: str) -> EncoderClassifier:
    """A network that predicts `label` for every text (zero head weights, one large bias)."""
    network = tiny_network(tokenizer)
    with torch.no_grad():
        network.head.weight.zero_()
        network.head.bias.copy_(torch.tensor([5.0 if name == label else -5.0 for name in LABELS]))
    return network


def trained_network(tokenizer: Tokenizer, steps: int = 60) -> EncoderClassifier:
    """A network fitted to the training sentences (full batch, a fraction of a second)."""
    network = tiny_network(tokenizer, seed=1)
    input_ids, attention_mask = pad_batch(encode_texts(tokenizer, TRAIN_TEXTS, max_len=16))
    targets = torch.tensor([LABELS.index(label) for label in TRAIN_LABELS])
    optimizer = torch.optim.AdamW(network.parameters(), lr=1e-2)
    network.train()
    for _ in range(steps):
        optimizer.zero_grad()
        nn.functional.cross_entropy(network(input_ids, attention_mask), targets).backward()
        optimizer.step()
    return network.eval()
