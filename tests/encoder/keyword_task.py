"""An easy synthetic task for the training-stack tests: one keyword decides the class."""

from __future__ import annotations

import random

import pandas as pd

from depthfinder.encoder.config import ModelConfig, TrainConfig

KEYWORDS = {"sport": "football", "food": "pizza", "tech": "computer"}
LABELS = list(KEYWORDS)
FILLER = ("the", "a", "of", "and", "to", "in", "is", "was", "for", "on", "with", "as", "by", "at", "from", "this",
          "that", "it", "be", "are", "we", "they")


def keyword_frame(n_rows: int = 360, seed: int = 0) -> pd.DataFrame:
    """Filler texts of 2 to 12 words with the class keyword inserted; 60/20/20 train/val/test."""
    rng = random.Random(seed)
    rows = []
    for i in range(n_rows):
        label = LABELS[i % len(LABELS)]
        words = [rng.choice(FILLER) for _ in range(rng.randint(2, 12))]
        words.insert(rng.randrange(len(words) + 1), KEYWORDS[label])
        split = ("train", "train", "train", "val", "test")[(i // len(LABELS)) % 5]
        rows.append({"text": " ".join(words), "label": label, "split": split, "source": f"src-{i % 7}"})
    return pd.DataFrame(rows)


def tiny_model_config(max_len: int = 32) -> ModelConfig:
    """d_model 32, 2 heads, d_ff 64, vocabulary of 200, no dropout."""
    return ModelConfig(d_model=32, n_heads=2, d_ff=64, dropout=0.0, max_len=max_len, vocab_size=200)


def tiny_train_config(**overrides: object) -> TrainConfig:
    """A few quick CPU epochs with a high learning rate, early stopping from the first epoch."""
    settings = {"max_epochs": 12, "min_epochs": 1, "patience": 2, "batch_size": 8, "learning_rate": 5e-3,
                "accelerator": "cpu"}
    return TrainConfig(**(settings | overrides))
