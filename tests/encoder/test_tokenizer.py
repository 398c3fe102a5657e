from __future__ import annotations

import pytest
import torch
from tokenizers import Tokenizer

from depthfinder.encoder.serving import encode_texts, pad_batch
from depthfinder.encoder.tokenizer import CLS, PAD, PAD_ID, SEP, UNK, train_tokenizer
from tests.encoder.keyword_task import keyword_frame


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return train_tokenizer(keyword_frame(60)["text"], vocab_size=200)


def test_every_encoding_starts_with_cls(tokenizer: Tokenizer) -> None:
    ids = encode_texts(tokenizer, ["the football", "Pizza!", ""], max_len=16)
    assert [seq[0] for seq in ids] == [tokenizer.token_to_id(CLS)] * 3
    assert ids[2] == [tokenizer.token_to_id(CLS)]
    assert tokenizer.token_to_id(PAD) == PAD_ID


def test_long_texts_are_truncated_to_max_len_and_short_ones_kept_whole(tokenizer: Tokenizer) -> None:
    long_text, short_text = "the football " * 20, "the pizza"
    ids = encode_texts(tokenizer, [long_text, short_text], max_len=8)
    assert len(ids[0]) == 8
    assert ids[0] == tokenizer.encode(long_text).ids[:8]
    assert ids[1] == tokenizer.encode(short_text).ids
    assert len(ids[1]) < 8


def test_pad_batch_pads_to_the_longest_and_masks_only_the_padding() -> None:
    input_ids, mask = pad_batch([[2, 5, 6], [2], [2, 7, 8, 9]])
    assert input_ids.shape == mask.shape == (3, 4)
    assert input_ids.dtype == torch.long and mask.dtype == torch.bool
    assert input_ids.tolist() == [[2, 5, 6, PAD_ID], [2, PAD_ID, PAD_ID, PAD_ID], [2, 7, 8, 9]]
    assert mask.sum(dim=1).tolist() == [3, 1, 4]


def test_training_gives_the_same_vocabulary_and_ids_every_time() -> None:
    """The tokenizers library's trainer alone numbers some tokens in hash-map order
    (huggingface/tokenizers#1794): ten trainings used to give ten vocabularies."""
    texts = keyword_frame(120)["text"].tolist() + ["unbelievably", "believable", "unbelief", "beliefs"]
    vocabularies = {tuple(sorted(train_tokenizer(texts, vocab_size=120).get_vocab().items())) for _ in range(10)}
    assert len(vocabularies) == 1
    (vocabulary,) = vocabularies
    assert len(vocabulary) <= 120


def test_subword_tokens_are_ordinary_vocabulary_not_special_tokens(tokenizer: Tokenizer) -> None:
    """The trainer was given every `##c` as a special token; the tokenizer must not keep them as such."""
    assert "##a" not in tokenizer.encode("##a football").tokens
    assert {token.content for token in tokenizer.get_added_tokens_decoder().values()} == {PAD, UNK, CLS, SEP}
