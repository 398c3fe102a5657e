"""A pre-LN Transformer encoder classifier, in one file, read top to bottom.

Token embeddings + learned positions -> `depth` identical blocks -> final norm ->
pooling (mean over real tokens, or the first token) -> linear head. No Lightning or
Prefect here: this is the network only.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class EncoderConfig:
    vocab_size: int
    n_classes: int
    depth: int
    d_model: int = 128
    n_heads: int = 4
    d_ff: int = 512
    max_len: int = 128
    dropout: float = 0.1
    pooling: str = "mean"  # "mean" over real tokens, or "cls" (the first token)
    pad_id: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


class SelfAttention(nn.Module):
    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        assert cfg.d_model % cfg.n_heads == 0, "d_model must be divisible by n_heads"
        self.n_heads = cfg.n_heads
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)  # one fused projection for q, k, v
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.dropout = cfg.dropout
        self.resid_dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor, key_mask: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)  # each (B, T, C)
        # (B, T, C) -> (B, n_heads, T, head_dim)
        q, k, v = (t.view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(
            q, k, v,
            attn_mask=key_mask,  # (B, 1, 1, T): True where a key is a real token
            dropout_p=self.dropout if self.training else 0.0,
        )  # (B, n_heads, T, head_dim)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.proj(y))


class MLP(nn.Module):
    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        self.fc = nn.Linear(cfg.d_model, cfg.d_ff)
        self.proj = nn.Linear(cfg.d_ff, cfg.d_model)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.proj(F.gelu(self.fc(x))))


class Block(nn.Module):
    """Pre-LN: normalise before each sub-layer, add its output to the residual stream."""

    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.d_model)
        self.attn = SelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.d_model)
        self.mlp = MLP(cfg)

    def forward(self, x: torch.Tensor, key_mask: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x), key_mask)
        return x + self.mlp(self.ln_2(x))


class EncoderClassifier(nn.Module):
    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model, padding_idx=cfg.pad_id)
        self.pos_emb = nn.Embedding(cfg.max_len, cfg.d_model)
        self.emb_dropout = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.depth))  # depth lives here
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.n_classes)
        self.apply(self._init_weights)
        # GPT-2 style: shrink each residual branch's output projection by 1/sqrt(2 * depth)
        # so the residual stream's variance does not grow with the number of blocks.
        for name, param in self.named_parameters():
            if name.endswith("proj.weight"):
                nn.init.normal_(param, mean=0.0, std=0.02 / math.sqrt(2 * cfg.depth))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """input_ids (B, T) int64, attention_mask (B, T) bool (True = real token) -> logits (B, n_classes)."""
        B, T = input_ids.shape
        assert self.cfg.max_len >= T, f"sequence of {T} tokens exceeds max_len {self.cfg.max_len}"
        positions = torch.arange(T, device=input_ids.device)
        x = self.emb_dropout(self.tok_emb(input_ids) + self.pos_emb(positions))  # (B, T, C)
        key_mask = attention_mask[:, None, None, :]  # (B, 1, 1, T), broadcast over heads and queries
        for block in self.blocks:
            x = block(x, key_mask)
        x = self.ln_f(x)  # (B, T, C)
        if self.cfg.pooling == "cls":
            pooled = x[:, 0]  # (B, C)
        else:
            weights = attention_mask.unsqueeze(-1).to(x.dtype)  # (B, T, 1)
            pooled = (x * weights).sum(1) / weights.sum(1).clamp(min=1.0)  # (B, C)
        return self.head(pooled)  # (B, n_classes)

    def num_params(self, embeddings: bool = True) -> int:
        total = sum(p.numel() for p in self.parameters())
        if not embeddings:
            total -= self.tok_emb.weight.numel() + self.pos_emb.weight.numel()
        return total
