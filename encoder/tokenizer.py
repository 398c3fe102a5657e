"""WordPiece tokenizer trained on the train split, and batching of token ids into tensors."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

PAD, UNK, CLS, SEP = "[PAD]", "[UNK]", "[CLS]", "[SEP]"
PAD_ID = 0  # PAD is the first special token, so its id is 0
SUBWORD_PREFIX = "##"


def train_tokenizer(texts: Iterable[str], vocab_size: int) -> Tokenizer:
    """Train a lower-casing WordPiece tokenizer that puts [CLS] first in every encoding.

    The same texts give the same vocabulary and ids in every process. The library's trainer
    alone does not (huggingface/tokenizers#1794): it numbers the `##c` continuation
    tokens in hash-map order, and those numbers break ties between equally frequent merges.
    So the `##c` of every character that can continue a word is registered up front, in
    sorted order, as a reserved token, and the tokenizer is then rebuilt from the trained
    vocabulary with only the four real special tokens.
    """
    texts = list(texts)
    reserved = [f"{SUBWORD_PREFIX}{c}" for c in _word_characters(texts)]
    trained = _wordpiece(models.WordPiece(unk_token=UNK, continuing_subword_prefix=SUBWORD_PREFIX))
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab_size, special_tokens=[PAD, UNK, CLS, SEP, *reserved],
        continuing_subword_prefix=SUBWORD_PREFIX, show_progress=False,
    )
    trained.train_from_iterator(texts, trainer=trainer)
    # Same ids, but the reserved tokens become ordinary vocabulary (not added tokens that
    # would match a literal "##a" in a text).
    vocab = trained.get_vocab(with_added_tokens=False)
    tokenizer = _wordpiece(models.WordPiece(vocab, unk_token=UNK, continuing_subword_prefix=SUBWORD_PREFIX))
    tokenizer.add_special_tokens([PAD, UNK, CLS, SEP])
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{CLS} $A", special_tokens=[(CLS, tokenizer.token_to_id(CLS))]
    )
    return tokenizer


def _word_characters(texts: list[str], chunk: int = 10_000) -> list[str]:
    """Sorted characters of the normalised texts that can continue a word (not spaces,
    punctuation or CJK characters, which the pre-tokeniser splits off on their own)."""
    normalizer, pre_tokenizer = normalizers.BertNormalizer(lowercase=True), pre_tokenizers.BertPreTokenizer()
    characters: set[str] = set()
    for start in range(0, len(texts), chunk):  # one call per chunk: per-text calls are slow
        characters.update(normalizer.normalize_str("\n".join(texts[start : start + chunk])))
    return sorted(c for c in characters if _words(normalizer, pre_tokenizer, f"a{c}") == [f"a{c}"])


def _words(normalizer: normalizers.Normalizer, pre_tokenizer: pre_tokenizers.PreTokenizer, text: str) -> list[str]:
    """The words the pre-tokeniser cuts a normalised text into."""
    return [word for word, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(text))]


def _wordpiece(model: models.WordPiece) -> Tokenizer:
    """A tokenizer around `model` with BERT's lower-casing normaliser and pre-tokeniser."""
    tokenizer = Tokenizer(model)
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece(prefix=SUBWORD_PREFIX)
    return tokenizer


def load_tokenizer(path: str | Path) -> Tokenizer:
    """A tokenizer saved by `tokenizers` (ours, or a pretrained checkpoint's tokenizer.json), with any padding
    and truncation of its own turned off: batches pad themselves, and max_len truncates."""
    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


def encode_texts(tokenizer: Tokenizer, texts: Sequence[str], max_len: int) -> list[list[int]]:
    """Token ids per text, [CLS] first, truncated to max_len."""
    return [enc.ids[:max_len] for enc in tokenizer.encode_batch(list(texts))]


def pad_batch(ids: Sequence[Sequence[int]], pad_id: int = PAD_ID) -> tuple[torch.Tensor, torch.Tensor]:
    """Pad to the longest sequence in the batch: (input_ids (B, T) int64, attention_mask (B, T) bool)."""
    longest = max(len(seq) for seq in ids)
    lengths = torch.tensor([len(seq) for seq in ids])
    input_ids = torch.full((len(ids), longest), pad_id, dtype=torch.long)
    for i, seq in enumerate(ids):
        input_ids[i, : len(seq)] = torch.tensor(seq, dtype=torch.long)
    return input_ids, torch.arange(longest) < lengths[:, None]
