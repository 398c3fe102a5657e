"""The bottom k layers of a pretrained encoder, with a classification head: the pretrained family's network.

The checkpoint (encoder.checkpoint) is a Hugging Face folder, checked before any work. Candidate depth k is
the checkpoint's embeddings plus its bottom k layers, loaded by `transformers` from the config cut to k
layers (the layers above are never loaded), then a pooling and a linear head as in the scratch encoder.
Weights load from safetensors only, never a pickle.

Supported: every encoder type of encoder.architectures (BERT, RoBERTa, XLM-R, DistilBERT,
DeBERTa-v2/v3, ELECTRA, ModernBERT) and, by its generic rule, any type whose layers are one list.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import asdict, dataclass

import torch
from torch import nn

from encoder.architectures import base_model_kwargs, truncated_config
from encoder.checkpoint import PretrainedCheckpoint


@dataclass(frozen=True)
class PretrainedConfig:
    """What rebuilds the network of a bundle without the original checkpoint."""

    encoder: dict  # the transformers config, cut to the candidate's depth (encoder.architectures.truncated_config)
    n_classes: int
    max_len: int
    pooling: str = "mean"
    pad_id: int = 0
    layers: int | None = None  # the candidate's depth (None in bundles saved before it was kept here)

    @property
    def depth(self) -> int:
        return self.layers or int(self.encoder["num_hidden_layers"])

    @property
    def vocab_size(self) -> int:
        return int(self.encoder["vocab_size"])

    def to_dict(self) -> dict:
        return asdict(self)


class PretrainedEncoderClassifier(nn.Module):
    """A pretrained encoder's embeddings and bottom layers -> pooling -> dropout -> linear head."""

    def __init__(self, cfg: PretrainedConfig, encoder: nn.Module | None = None) -> None:
        super().__init__()
        from transformers import MODEL_MAPPING, AutoConfig, AutoModel

        self.cfg = cfg
        if encoder is None:  # the architecture only: weights come from a bundle's state_dict
            config = AutoConfig.for_model(**cfg.encoder)
            encoder = AutoModel.from_config(config, **base_model_kwargs(MODEL_MAPPING[type(config)]))
        self.encoder = encoder
        config = encoder.config
        self.dropout = nn.Dropout(float(next((getattr(config, key) for key in HEAD_DROPOUT if
                                              isinstance(getattr(config, key, None), float | int)), 0.1)))
        self.head = nn.Linear(int(config.hidden_size), cfg.n_classes)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state  # (B, T, H)
        if self.cfg.pooling == "cls":
            pooled = hidden[:, 0]
        else:
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)  # (B, T, 1)
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)  # (B, H)
        return self.head(self.dropout(pooled))  # (B, n_classes)

    def num_params(self, embeddings: bool = True) -> int:
        """Parameters, with or without the embedding layer (word, position and token-type embeddings, and what
        the type keeps with them)."""
        total = sum(p.numel() for p in self.parameters())
        module = getattr(self.encoder, "embeddings", None) or self.encoder.get_input_embeddings()
        return total if embeddings else total - sum(p.numel() for p in module.parameters())


# The config's dropout of hidden states, by the names types give it; the head's dropout follows it.
HEAD_DROPOUT = ("hidden_dropout_prob", "dropout", "mlp_dropout", "hidden_dropout")


def load_truncated(
    checkpoint: PretrainedCheckpoint, depth: int, n_classes: int, max_len: int, pooling: str
) -> PretrainedEncoderClassifier:
    """The checkpoint's embeddings and bottom `depth` layers (as its architecture defines them) with a new head;
    ValueError for a depth above L."""
    from transformers import MODEL_MAPPING, AutoConfig, AutoModel

    if not 1 <= depth <= checkpoint.layers:
        raise ValueError(
            f"depth {depth} is beyond the pretrained checkpoint's {checkpoint.layers} layers ({checkpoint.path})"
        )
    config = truncated_config(AutoConfig.from_pretrained(checkpoint.path), depth)
    with _quiet_transformers():  # the layers above `depth` are reported as unused: expected here
        encoder = AutoModel.from_pretrained(checkpoint.path, config=config, use_safetensors=True,
                                            **base_model_kwargs(MODEL_MAPPING[type(config)]))
    encoder.train()  # from_pretrained leaves it in eval mode: no dropout while fine-tuning
    positions = getattr(config, "max_position_embeddings", None)
    if isinstance(positions, int):
        max_len = min(max_len, positions - checkpoint.architecture.position_offset)
    pad_id = getattr(config, "pad_token_id", None)
    cfg = PretrainedConfig(encoder=config.to_dict(), n_classes=n_classes, max_len=max_len, pooling=pooling,
                           pad_id=0 if pad_id is None else int(pad_id), layers=depth)
    return PretrainedEncoderClassifier(cfg, encoder)


@contextlib.contextmanager
def _quiet_transformers() -> Iterator[None]:
    logger = logging.getLogger("transformers")
    level = logger.level
    logger.setLevel(logging.ERROR)
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()  # "Loading weights: 100%" on every candidate
    try:
        yield
    finally:
        hf_logging.enable_progress_bar()
        hf_logging.set_verbosity(verbosity)
        logger.setLevel(level)
