"""WordPiece tokenizer trained on the train split (batching token ids into tensors is encoder.serving's: it
travels with every registered model)."""

from __future__ import annotations

from collections.abc import Iterable

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

PAD, UNK, CLS, SEP = "[PAD]", "[UNK]", "[CLS]", "[SEP]"
SPECIAL_TOKENS = (PAD, UNK, CLS, SEP)  # every vocabulary holds them, first
PAD_ID = 0  # PAD is the first special token, so its id is 0
SUBWORD_PREFIX = "##"


def train_tokenizer(texts: Iterable[str], vocab_size: int) -> Tokenizer:
    """Train a lower-casing WordPiece tokenizer that puts [CLS] first in every encoding, and [SEP] between the two
    texts of a pair.

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
        vocab_size=vocab_size, special_tokens=[*SPECIAL_TOKENS, *reserved],
        continuing_subword_prefix=SUBWORD_PREFIX, show_progress=False,
    )
    trained.train_from_iterator(texts, trainer=trainer)
    # Same ids, but the reserved tokens become ordinary vocabulary (not added tokens that
    # would match a literal "##a" in a text).
    vocab = trained.get_vocab(with_added_tokens=False)
    tokenizer = _wordpiece(models.WordPiece(vocab, unk_token=UNK, continuing_subword_prefix=SUBWORD_PREFIX))
    tokenizer.add_special_tokens(list(SPECIAL_TOKENS))
    tokenizer.post_processor = processors.TemplateProcessing(  # a pair: the second text after a [SEP], as BERT's
        single=f"{CLS} $A", pair=f"{CLS} $A {SEP} $B:1",
        special_tokens=[(CLS, tokenizer.token_to_id(CLS)), (SEP, tokenizer.token_to_id(SEP))],
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
