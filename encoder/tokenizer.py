"""WordPiece tokenizer trained on the train split, and batching of token ids into tensors."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

PAD, UNK, CLS, SEP = "[PAD]", "[UNK]", "[CLS]", "[SEP]"
PAD_ID = 0  # PAD is the first special token, so its id is 0


def train_tokenizer(texts: Iterable[str], vocab_size: int) -> Tokenizer:
    """Train a lower-casing WordPiece tokenizer that puts [CLS] first in every encoding."""
    tokenizer = Tokenizer(models.WordPiece(unk_token=UNK))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab_size, special_tokens=[PAD, UNK, CLS, SEP], show_progress=False
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{CLS} $A", special_tokens=[(CLS, tokenizer.token_to_id(CLS))]
    )
    return tokenizer


def encode_texts(tokenizer: Tokenizer, texts: Sequence[str], max_len: int) -> list[list[int]]:
    """Token ids per text, [CLS] first, truncated to max_len."""
    return [enc.ids[:max_len] for enc in tokenizer.encode_batch(list(texts))]


def pad_batch(ids: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Pad to the longest sequence in the batch: (input_ids (B, T) int64, attention_mask (B, T) bool)."""
    longest = max(len(seq) for seq in ids)
    input_ids = torch.full((len(ids), longest), PAD_ID, dtype=torch.long)
    for i, seq in enumerate(ids):
        input_ids[i, : len(seq)] = torch.tensor(seq, dtype=torch.long)
    return input_ids, input_ids != PAD_ID
