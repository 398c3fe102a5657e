"""A pre-LN Transformer encoder classifier, in one file, read top to bottom.

Token embeddings + learned positions -> `depth` identical blocks -> final norm ->
pooling (mean over real tokens, or the first token) -> linear head; or, for token labels, the
linear head on every token. No Lightning or
Prefect here: this is the network only.

Depth-aware by construction (Depth-muP: Yang, Yu, Zhu and Hayou, "Tensor Programs VI:
Feature Learning in Infinite-Depth Neural Networks", ICLR 2024, arXiv:2310.02244; Bordelon
et al., "Depthwise Hyperparameter Transfer in Residual Networks", ICLR 2024,
arXiv:2309.16620): every block adds its attention and MLP outputs to the residual stream
scaled by 1/sqrt(depth), so the stream's size and, with the block learning rate of
`encoder.module` also scaled by 1/sqrt(depth), the change of the network per optimiser
step stay the same whatever the depth. A learning rate that suits one block then suits six.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

DROPOUT_BITS = 15  # a CPU dropout mask rounds the drop probability to a multiple of 2**-15


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
    pooling: str = "mean"  # "mean" over real tokens, "cls" (the first token), or "tokens": a label per token
    pad_id: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


def dropout(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """Inverted dropout, as F.dropout, with a cheaper random mask on CPU.

    F.dropout on CPU draws one random float per element, and that made it the largest
    non-matmul cost of a training step. Here each 64-bit draw of torch's generator gives
    four 15-bit integers, and an element is dropped when its integer is below
    round(p * 2**15): the same Bernoulli mask, from a quarter of the generator calls.
    """
    if not training or p == 0.0:
        return x
    if x.device.type != "cpu":  # CUDA's fused dropout kernel is already cheap
        return F.dropout(x, p, training=True)
    words = torch.empty((x.numel() + 3) // 4, dtype=torch.int64).random_()  # uniform on [0, 2**63)
    chunks = words.view(torch.int16)[: x.numel()].bitwise_and_(2**DROPOUT_BITS - 1)  # uniform on [0, 2**15)
    keep = torch.empty_like(x)
    torch.ge(chunks.view(x.shape), round(p * 2**DROPOUT_BITS), out=keep)  # 1.0 where kept, 0.0 where dropped
    return x * keep.mul_(1.0 / (1.0 - p))


class SelfAttention(nn.Module):
    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        assert cfg.d_model % cfg.n_heads == 0, "d_model must be divisible by n_heads"
        self.n_heads = cfg.n_heads
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)  # one fused projection for q, k, v
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.dropout = cfg.dropout

    def forward(self, x: torch.Tensor, key_mask: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)  # each (B, T, C)
        # (B, T, C) -> (B, n_heads, T, head_dim)
        q, k, v = (t.view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2) for t in (q, k, v))
        if self.training and self.dropout > 0 and x.device.type == "cpu":
            # SDPA's CPU kernels have no dropout: it falls back to this same computation,
            # with F.dropout's slower mask.
            scores = (q * (q.shape[-1] ** -0.5)) @ k.transpose(-2, -1)  # (B, n_heads, T, T)
            # Adding a (B, 1, 1, T) bias in place is ~20x faster than a broadcast masked_fill.
            bias = torch.zeros(key_mask.shape, dtype=scores.dtype, device=scores.device)
            scores += bias.masked_fill_(~key_mask, float("-inf"))  # (B, 1, 1, T): -inf at padding keys
            y = dropout(scores.softmax(dim=-1), self.dropout, training=True) @ v
        else:
            y = F.scaled_dot_product_attention(
                q, k, v,
                attn_mask=key_mask,  # (B, 1, 1, T): True where a key is a real token
                dropout_p=self.dropout if self.training else 0.0,
            )  # (B, n_heads, T, head_dim)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return dropout(self.proj(y), self.dropout, self.training)


class MLP(nn.Module):
    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        self.fc = nn.Linear(cfg.d_model, cfg.d_ff)
        self.proj = nn.Linear(cfg.d_ff, cfg.d_model)
        self.dropout = cfg.dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return dropout(self.proj(F.gelu(self.fc(x))), self.dropout, self.training)


class Block(nn.Module):
    """Pre-LN: normalise before each sub-layer, add its output to the residual stream."""

    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        self.branch_scale = 1.0 / math.sqrt(cfg.depth)  # Depth-muP, see the module docstring
        self.ln_1 = nn.LayerNorm(cfg.d_model)
        self.attn = SelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.d_model)
        self.mlp = MLP(cfg)

    def forward(self, x: torch.Tensor, key_mask: torch.Tensor) -> torch.Tensor:
        x = torch.add(x, self.attn(self.ln_1(x), key_mask), alpha=self.branch_scale)
        return torch.add(x, self.mlp(self.ln_2(x)), alpha=self.branch_scale)


class EncoderClassifier(nn.Module):
    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model, padding_idx=cfg.pad_id)
        self.pos_emb = nn.Embedding(cfg.max_len, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.depth))  # depth lives here
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.n_classes)
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        # The same init at every depth: the 1/sqrt(depth) branch scale does what GPT-2's
        # depth-scaled init of the output projections did, and unlike an init it is not
        # washed out by Adam's first, weight-size-independent steps.
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.padding_idx is not None:
                nn.init.zeros_(module.weight[module.padding_idx])

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """input_ids (B, T) int64, attention_mask (B, T) bool (True = real token) -> logits (B, n_classes), or
        (B, T, n_classes) for a network of token labels."""
        B, T = input_ids.shape
        assert self.cfg.max_len >= T, f"sequence of {T} tokens exceeds max_len {self.cfg.max_len}"
        positions = torch.arange(T, device=input_ids.device)
        x = dropout(self.tok_emb(input_ids) + self.pos_emb(positions), self.cfg.dropout, self.training)  # (B, T, C)
        key_mask = attention_mask[:, None, None, :]  # (B, 1, 1, T), broadcast over heads and queries
        for block in self.blocks:
            x = block(x, key_mask)
        x = self.ln_f(x)  # (B, T, C)
        if self.cfg.pooling == "tokens":
            return self.head(x)  # (B, T, n_classes)
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
