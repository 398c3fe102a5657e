"""The embedding rows a task never used, product-quantised: the checkpoint's whole vocabulary in a few MiB.

Pruning the vocabulary to the task's texts (encoder.vocabulary) makes the smallest form, and loses where the texts a
model meets hold words those texts never used: they are cut into pieces the network never learned (0.016-0.022
macro-F1 on a 6-class file of review sentences, bench/quantization.py). Coding keeps every token and the tokenizer
as they were, so every text gets the ids it was trained on: the rows the task's texts use (every text the run may
read without labels, encoder.vocabulary.vocabulary_texts) stay exact, and every other row is product-quantised
(Jégou et al., 2011): cut into sub-vectors of `CODE_DIMS` numbers, each replaced by the nearest of 256 centroids
k-means found for its position, so the row is one byte per sub-vector. all-MiniLM-L6-v2's 30,522 rows of 384
numbers (44.7 MiB in float32) become ~3,700 exact rows (the tokens a 1,500-row file of review sentences uses) and
26,900 codes of 96 bytes: 2.5 MiB of codes beside 1.4 MiB of exact rows at int8.

The coded rows are those no labelled or unlabelled text of the task used, so no training signal reached them; their
error (0.32 of a row's norm at 4 numbers per code, 0.46 at 6) costs a test text only where it holds such a token.
Measured on the 6-class file and sms_spam.csv (bench/quantization.py, five trained models), the coded int8 form kept
macro-F1 within 0.005 of the full model, each shown within the 0.01 margin, where the pruned one lost up to 0.027.
Any tokenizer codes (BPE and Unigram too: nothing about it changes).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from pathlib import Path

import torch
from pydantic import Field
from tokenizers import Tokenizer
from torch import nn

from depthfinder.encoder.serving import Network
from depthfinder.encoder.vocabulary import set_word_embedding, token_counts, word_embedding
from depthfinder.runtime.records import Record

CODED = "onnx-int8-coded"  # the form's name, as the cost table and the deployment call it
CENTROIDS = 256  # one byte per sub-vector
CODE_DIMS = 4  # numbers per sub-vector at most (the largest divisor of the width up to it)
# Under a size limit the coded form's file is over: the coarsest code tried, numbers per byte (all-MiniLM-L6-v2's
# rows at 0.32 of their norm at 4, 0.47 at 6, 0.56 at 8).
MAX_CODE_DIMS = 8
ITERATIONS = 20  # of k-means: all-MiniLM-L6-v2's rows at 0.322 of their norm after 5, 0.319 after 10, 0.318 after 20
SAMPLE = 8192  # rows the centroids are fitted on (every row is then coded): seconds, not half a minute


class Coding(Record):
    """What coding the rare embedding rows kept exact and what each coded row costs."""

    exact: int = Field(description="Rows kept exact: the tokens the task's texts (train, validation, pool) use.")
    coded: int = Field(description="Rows product-quantised: every other token of the vocabulary.")
    code_dims: int = Field(description="Numbers of a row per one-byte code.")
    error: float = Field(description="The coded rows' reconstruction error, relative to their norm.")

    def text(self) -> str:
        """`kept 3,666 embedding rows exact, coded 26,856 at one byte per 4 numbers (error 0.32)`."""
        return (f"kept {self.exact:,} embedding rows exact, coded {self.coded:,} at one byte per {self.code_dims} "
                f"numbers (error {self.error:.2f})")


class CodedEmbedding(nn.Module):
    """An embedding whose rows are either exact (`rows`) or product-quantised (`codes` into `codebooks`), with
    `slot` telling which for every token id: below the exact rows' count an index into them, else into the codes."""

    def __init__(self, rows: torch.Tensor, codes: torch.Tensor, codebooks: torch.Tensor, slot: torch.Tensor,
                 padding_idx: int | None) -> None:
        super().__init__()
        self.rows = nn.Embedding.from_pretrained(rows, freeze=True)  # (K, H), quantised to int8 with the network
        self.register_buffer("codes", codes)  # (V - K, H / d) uint8
        self.register_buffer("codebooks", codebooks.reshape(-1, codebooks.shape[-1]))  # (H / d * 256, d)
        self.register_buffer("offsets", torch.arange(codes.shape[1]) * CENTROIDS)  # (H / d,)
        self.register_buffer("slot", slot.to(torch.int32))  # (V,)
        self.num_embeddings, self.embedding_dim, self.padding_idx = len(slot), rows.shape[1], padding_idx

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        slot = self.slot[input_ids].long()  # (B, T)
        exact = self.rows(slot.clamp(max=self.rows.num_embeddings - 1))  # (B, T, H)
        code = self.codes[(slot - self.rows.num_embeddings).clamp(min=0)].long() + self.offsets  # (B, T, H / d)
        decoded = self.codebooks[code].flatten(-2)  # (B, T, H)
        return torch.where((slot < self.rows.num_embeddings).unsqueeze(-1), exact, decoded)


def coded_network(network: Network, tokenizer: Tokenizer, texts: Iterable[str], seed: int = 0, fit: bool = True,
                  code_dims: int = CODE_DIMS) -> tuple[Network, Coding]:
    """A copy of the network whose word embedding keeps the rows `texts` use exact and codes the rest; the tokenizer
    is unchanged. What coding kept and cost. Without `fit`, the codes are all zero: a form of the same shapes, to
    weigh (encoder.size), in no time."""
    network = copy.deepcopy(network).cpu().eval()
    embedding = word_embedding(network)
    weight = embedding.weight.detach().float()
    used = torch.zeros(len(weight), dtype=torch.bool)
    used[[token for token in token_counts(tokenizer, texts) if token < len(weight)]] = True
    if embedding.padding_idx is not None:
        used[embedding.padding_idx] = True
    exact, rare = used.nonzero().squeeze(1), (~used).nonzero().squeeze(1)
    dims = max(d for d in range(1, code_dims + 1) if weight.shape[1] % d == 0)
    codes, codebooks = (product_quantise(weight[rare], dims, seed) if fit else
                        (torch.zeros(len(rare), weight.shape[1] // dims, dtype=torch.uint8),
                         torch.zeros(weight.shape[1] // dims, CENTROIDS, dims)))
    slot = torch.empty(len(weight), dtype=torch.long)
    slot[exact], slot[rare] = torch.arange(len(exact)), len(exact) + torch.arange(len(rare))
    coded = CodedEmbedding(weight[exact], codes, codebooks, slot, embedding.padding_idx)
    decoded = codebooks.reshape(-1, dims)[codes.long() + coded.offsets].flatten(-2)
    error = float((decoded - weight[rare]).norm() / weight[rare].norm().clamp(min=1e-12)) if len(rare) else 0.0
    set_word_embedding(network, coded)
    return network, Coding(exact=len(exact), coded=len(rare), code_dims=dims, error=error)


def coded_file(network: Network, tokenizer: Tokenizer, texts: Iterable[str], path: Path,
               limit_mb: float | None = None, fit: bool = True) -> tuple[Network, Coding, Path]:
    """The int8 ONNX file (`path`, encoder.export) of the network with the rows `texts` never use coded: at
    `CODE_DIMS` numbers per byte, or, where that file is over `limit_mb`, at the fewest numbers per byte (up to
    `MAX_CODE_DIMS`) that bring it within the limit, the finest code it allows (the coarsest where none does). The
    coded network and its coding beside. Every code is weighed unfitted (its shapes are the file's): one fit."""
    from depthfinder.encoder.export import export_onnx, quantize

    texts, width = list(texts), word_embedding(network).weight.shape[1]
    fp32, dims = path.with_suffix(".fp32.onnx"), CODE_DIMS
    if limit_mb is not None:
        for dims in [CODE_DIMS, *(d for d in range(CODE_DIMS + 1, MAX_CODE_DIMS + 1) if width % d == 0)]:
            coded, coding = coded_network(network, tokenizer, texts, fit=False, code_dims=dims)
            if quantize(export_onnx(coded, fp32), path).stat().st_size / 2**20 <= limit_mb:
                break
    if fit or limit_mb is None:
        coded, coding = coded_network(network, tokenizer, texts, fit=fit, code_dims=dims)
        quantize(export_onnx(coded, fp32), path)
    fp32.unlink()
    return coded, coding, path


def product_quantise(rows: torch.Tensor, dims: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row cut into sub-vectors of `dims` numbers, coded by k-means per position: the codes (rows, H / dims)
    uint8 and the codebooks (H / dims, 256, dims)."""
    count, width = rows.shape
    parts = rows.reshape(count, width // dims, dims).transpose(0, 1).contiguous()  # (M, N, d)
    if count <= CENTROIDS:  # each row's sub-vector its own centroid: exact
        codebooks = torch.zeros(width // dims, CENTROIDS, dims)
        codebooks[:, :count] = parts
        return torch.arange(count, dtype=torch.uint8).unsqueeze(1).expand(-1, width // dims).contiguous(), codebooks
    generator = torch.Generator().manual_seed(seed)
    sample = parts[:, torch.randperm(count, generator=generator)[:SAMPLE]]  # (M, S, d)
    start = torch.randint(0, sample.shape[1], (width // dims, CENTROIDS), generator=generator)  # (M, C)
    codebooks = torch.gather(sample, 1, start.unsqueeze(-1).expand(-1, -1, dims))  # (M, C, d)
    for _ in range(ITERATIONS):
        codes = torch.cdist(sample, codebooks).argmin(-1)  # (M, S)
        sums = torch.zeros_like(codebooks).scatter_add_(1, codes.unsqueeze(-1).expand(-1, -1, dims), sample)
        counts = torch.zeros(codebooks.shape[:2]).scatter_add_(1, codes, torch.ones_like(codes, dtype=torch.float))
        codebooks = torch.where(counts.unsqueeze(-1) > 0, sums / counts.clamp(min=1).unsqueeze(-1), codebooks)
    codes = torch.cdist(parts, codebooks).argmin(-1)
    return codes.T.contiguous().to(torch.uint8), codebooks
