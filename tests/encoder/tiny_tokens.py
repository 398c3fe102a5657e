"""Tiny networks of token labels for the serving tests: a scratch tagger fitted to a few tagged sentences (full
batch, a fraction of a second), and a pretrained one whose strong random head tags words by their pieces."""

from __future__ import annotations

import torch
from tokenizers import Tokenizer
from torch import nn

from depthfinder.encoder.model import EncoderClassifier, EncoderConfig
from depthfinder.encoder.serving import TOKENS_POOLING, PretrainedEncoderClassifier, encode_words, pad_batch
from depthfinder.encoder.tokenizer import train_tokenizer

TAGS = ["B-LOC", "B-PER", "I-LOC", "I-PER", "O"]  # class-id order: sorted, as a token table's class_labels
SENTENCES = [
    ("anna smith lives in paris", "B-PER I-PER O O B-LOC"),
    ("bob visited new york today", "B-PER O B-LOC I-LOC O"),
    ("in paris anna met bob", "O B-LOC B-PER O B-PER"),
    ("new york is far from paris", "B-LOC I-LOC O O O B-LOC"),
    ("john smith met anna in new york", "B-PER I-PER O B-PER O B-LOC I-LOC"),
    ("the weather in paris is fine", "O O O B-LOC O O"),
]
TEXTS = [text for text, _ in SENTENCES]
TAG_STRINGS = [tags for _, tags in SENTENCES]
IGNORED = -100  # a label position cross_entropy leaves out: every piece but a word's first


def token_tokenizer() -> Tokenizer:
    """A WordPiece vocabulary small enough that some words are cut into pieces."""
    return train_tokenizer(TEXTS, vocab_size=60)


def trained_tagger(tokenizer: Tokenizer, steps: int = 80) -> EncoderClassifier:
    """A one-block scratch network of token labels fitted to SENTENCES at each word's first piece."""
    torch.manual_seed(2)
    cfg = EncoderConfig(vocab_size=tokenizer.get_vocab_size(), n_classes=len(TAGS), depth=1, d_model=16, n_heads=2,
                        d_ff=32, max_len=16, dropout=0.0, pooling=TOKENS_POOLING)
    network = EncoderClassifier(cfg)
    encoded = encode_words(tokenizer, TEXTS, cfg.max_len)
    input_ids, attention_mask = pad_batch([ids for ids, _ in encoded])
    targets = torch.full(input_ids.shape, IGNORED)
    for row, ((_, firsts), tags) in enumerate(zip(encoded, TAG_STRINGS, strict=True)):
        for position, tag in zip(firsts, tags.split(), strict=True):
            targets[row, position] = TAGS.index(tag)
    optimizer = torch.optim.AdamW(network.parameters(), lr=2e-2)
    network.train()
    for _ in range(steps):
        optimizer.zero_grad()
        logits = network(input_ids, attention_mask)  # (B, T, n_classes)
        nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORED).backward()
        optimizer.step()
    return network.eval()


def varied_tagger(network: PretrainedEncoderClassifier) -> PretrainedEncoderClassifier:
    """A pretrained network of token labels whose token-classification head is drawn large, so its tags change from
    piece to piece (an untrained head's are near uniform): a comparison of two readers of its logits means something."""
    with torch.no_grad():
        for parameter in network.encoder.classifier.parameters():
            parameter.normal_(std=5.0, generator=torch.Generator().manual_seed(0))
    return network.eval()
