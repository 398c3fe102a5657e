"""Tiny pretrained checkpoints built in the test, never downloaded: random BERT and RoBERTa encoders saved
with `save_pretrained` (safetensors) beside a tokenizer.json made with `tokenizers`."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import torch
from tokenizers import processors

from encoder.tokenizer import CLS, SEP, train_tokenizer

WORDS = [
    "the", "a", "of", "and", "to", "in", "is", "was", "for", "on", "with", "it", "this", "that", "football", "pizza",
    "computer", "great", "awful", "film", "fun", "plot", "cast", "music", "acting", "mess", "truly",
]


def tiny_checkpoint(folder: Path, texts: Iterable[str] = (), layers: int = 4, model_type: str = "bert",
                    seed: int = 0) -> Path:
    """A `layers`-layer encoder (hidden 32) of `model_type` in `folder`, its tokenizer trained on `texts`."""
    from transformers import AutoConfig, AutoModel

    tokenizer = train_tokenizer([*texts, " ".join(WORDS)], vocab_size=200)
    tokenizer.add_special_tokens([SEP])
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{CLS} $A {SEP}", special_tokens=[(CLS, tokenizer.token_to_id(CLS)), (SEP, tokenizer.token_to_id(SEP))]
    )
    config = AutoConfig.for_model(
        model_type, vocab_size=tokenizer.get_vocab_size(), hidden_size=32, num_hidden_layers=layers,
        num_attention_heads=2, intermediate_size=64, max_position_embeddings=66, pad_token_id=0, type_vocab_size=1,
    )
    torch.manual_seed(seed)
    AutoModel.from_config(config).save_pretrained(folder, safe_serialization=True)
    tokenizer.save(str(folder / "tokenizer.json"))
    return folder


def without(folder: Path, *names: str) -> Path:
    """The checkpoint folder with these files removed."""
    for name in names:
        (folder / name).unlink()
    return folder


def with_model_type(folder: Path, model_type: str) -> Path:
    """The checkpoint folder with its config.json claiming another architecture."""
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | {"model_type": model_type}))
    return folder


def with_config(folder: Path, **changes: object) -> Path:
    """The checkpoint folder with config.json changed (a value None removes the key)."""
    config = json.loads((folder / "config.json").read_text()) | changes
    (folder / "config.json").write_text(json.dumps({key: value for key, value in config.items() if value is not None}))
    return folder


def cut(folder: Path, name: str, keep: float = 0.5) -> Path:
    """The checkpoint folder with file `name` cut to a share of its bytes."""
    data = (folder / name).read_bytes()
    (folder / name).write_bytes(data[: int(len(data) * keep)])
    return folder


def with_huge_header(folder: Path) -> Path:
    """model.safetensors whose header claims 2^62 bytes."""
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes((2**62).to_bytes(8, "little") + data[8:])
    return folder
