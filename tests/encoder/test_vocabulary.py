"""Vocabulary pruning: a pruned model keeps the logits of every text made of kept tokens, still tokenises and
predicts texts it never saw (their words cut into kept pieces, never into [UNK] where the original had pieces), and
saves and loads as any bundle; a tokenizer that is not WordPiece is refused in one clause."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from tokenizers import Tokenizer, models, pre_tokenizers

from depthfinder.encoder.bundle import save_bundle
from depthfinder.encoder.checkpoint import resolve_checkpoint
from depthfinder.encoder.pretrained import load_truncated
from depthfinder.encoder.serving import TextClassifier, load_bundle, load_tokenizer
from depthfinder.encoder.vocabulary import kept_ids, prunable, prune, save_vocab_file, token_counts, vocabulary_texts
from tests.encoder.keyword_task import LABELS, keyword_frame
from tests.encoder.tiny_checkpoint import WORDS, tiny_checkpoint
from tests.encoder.tiny_models import TRAIN_TEXTS, tiny_network, tiny_tokenizer

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning", "ignore::DeprecationWarning")
# The task's training texts use the sport keyword only: the checkpoint's other words (pizza, computer, film, ...)
# are pruned, and texts with them are the unseen words.
TRAIN = [text for text in keyword_frame(120)["text"] if "football" in text]
UNSEEN = ["pizza computer", "an awful film with great music", "truly fun acting", "zebra quokka football"]


@pytest.fixture(scope="module", params=["mean", "head"])
def pretrained(request, tmp_path_factory):
    """Depth 2 of a tiny 3-layer BERT checkpoint whose tokenizer was trained on all three classes' texts and more,
    with `pooling`, its head scaled so the classes differ from text to text, and its tokenizer."""
    root = tmp_path_factory.mktemp("vocab")
    texts = [*keyword_frame(120)["text"], " ".join(WORDS), "zebras and quokkas"]
    checkpoint = resolve_checkpoint(str(tiny_checkpoint(root / "bert", texts, layers=3)))
    network = load_truncated(checkpoint, 2, n_classes=len(LABELS), max_len=32, pooling=request.param)
    head = network.head if request.param != "head" else network.encoder.classifier
    with torch.no_grad():
        head.weight.normal_(std=3.0, generator=torch.Generator().manual_seed(0))
    return network.eval(), load_tokenizer(checkpoint.tokenizer_path)


def test_a_pruned_checkpoint_gives_the_same_logits_on_texts_of_kept_tokens(pretrained) -> None:
    network, tokenizer = pretrained
    pruned, pruned_tokenizer = prune(network, tokenizer, TRAIN)
    assert pruned_tokenizer.get_vocab_size() < tokenizer.get_vocab_size()
    assert pruned.cfg.vocab_size == pruned_tokenizer.get_vocab_size()
    assert pruned.body().get_input_embeddings().num_embeddings == pruned_tokenizer.get_vocab_size()
    assert network.body().get_input_embeddings().num_embeddings == tokenizer.get_vocab_size()  # left as it was
    for text in TRAIN[:5]:
        assert pruned_tokenizer.encode(text).tokens == tokenizer.encode(text).tokens
    original = TextClassifier(network, tokenizer, LABELS).predict_proba(TRAIN)
    assert np.allclose(TextClassifier(pruned, pruned_tokenizer, LABELS).predict_proba(TRAIN), original, atol=1e-6)
    assert not np.allclose(original, original[0], atol=1e-4)  # the texts' probabilities differ: they say something


def test_unseen_words_are_cut_into_kept_pieces_and_still_predict(pretrained) -> None:
    network, tokenizer = pretrained
    pruned, pruned_tokenizer = prune(network, tokenizer, TRAIN)
    for text in UNSEEN:
        before, after = tokenizer.encode(text), pruned_tokenizer.encode(text)
        assert before.tokens != after.tokens or text == UNSEEN[-1]  # their words were pruned: other pieces now
        assert after.tokens.count("[UNK]") == before.tokens.count("[UNK]")  # never [UNK] where there were pieces
        assert _words(after.tokens) == _words(before.tokens)  # the same characters, in more pieces
    probs = TextClassifier(pruned, pruned_tokenizer, LABELS).predict_proba(UNSEEN)
    assert probs.shape == (len(UNSEEN), len(LABELS)) and np.allclose(probs.sum(axis=1), 1.0)


def test_the_vocabulary_keeps_the_validation_and_pool_texts_words_and_never_the_test_splits(pretrained) -> None:
    """Pruned to every text the run reads without labels deciding (train, validation, the pool), a word only the
    validation rows or the pool use keeps its own piece; a word only the test split uses does not."""
    import pandas as pd

    network, tokenizer = pretrained
    frame = pd.DataFrame({"text": [*TRAIN, "a pizza", "a computer"], "split": [*["train"] * len(TRAIN), "val",
                                                                            "test"]})
    texts = vocabulary_texts(frame, ["zebras and quokkas"])
    assert texts == [*TRAIN, "a pizza", "zebras and quokkas"]
    _, pruned_tokenizer = prune(network, tokenizer, texts)
    for kept in ("pizza", "zebras", "quokkas"):
        assert pruned_tokenizer.encode(kept).tokens == tokenizer.encode(kept).tokens
    assert pruned_tokenizer.encode("computer").tokens != tokenizer.encode("computer").tokens  # test's alone: cut


def _words(tokens: list[str]) -> str:
    """The text the pieces spell, continuations joined to the piece before."""
    return "".join(token[2:] if token.startswith("##") else f" {token}" for token in tokens)


def test_a_pruned_bundle_loads_with_its_vocabulary(tmp_path: Path, pretrained) -> None:
    network, tokenizer = pretrained
    pruned, pruned_tokenizer = prune(network, tokenizer, TRAIN)
    loaded = load_bundle(save_bundle(tmp_path / "bundle", pruned, pruned_tokenizer, LABELS))
    assert loaded.tokenizer.get_vocab() == pruned_tokenizer.get_vocab()
    texts = [*TRAIN[:10], *UNSEEN]
    expected = TextClassifier(pruned, pruned_tokenizer, LABELS).predict_proba(texts)
    assert np.allclose(loaded.predict_proba(texts), expected, atol=1e-6)


def test_the_vocab_file_tokenises_as_the_pruned_tokenizer(tmp_path: Path, pretrained) -> None:
    """vocab.txt, what BERT's `transformers` tokenizer reads, holds the pruned vocabulary in the new id order."""
    from transformers import BertTokenizer

    _, tokenizer = pretrained
    _, pruned_tokenizer = prune(pretrained[0], tokenizer, TRAIN)
    path = save_vocab_file(tmp_path, pruned_tokenizer)
    assert path is not None
    slow = BertTokenizer(str(path), do_lower_case=True)
    for text in [*TRAIN[:5], *UNSEEN]:
        assert slow(text)["input_ids"] == pruned_tokenizer.encode(text).ids


def test_a_scratch_network_prunes_too() -> None:
    tokenizer = tiny_tokenizer()
    network = tiny_network(tokenizer).eval()
    positive = [text for text in TRAIN_TEXTS if "great" in text]
    pruned, pruned_tokenizer = prune(network, tokenizer, positive)
    assert pruned.cfg.vocab_size == pruned_tokenizer.get_vocab_size() < tokenizer.get_vocab_size()
    original = TextClassifier(network, tokenizer, ["neg", "pos"]).predict_proba(positive)
    assert np.allclose(TextClassifier(pruned, pruned_tokenizer, ["neg", "pos"]).predict_proba(positive), original,
                       atol=1e-6)


def test_a_higher_count_threshold_keeps_fewer_tokens_but_every_character() -> None:
    tokenizer = tiny_tokenizer()
    counts = token_counts(tokenizer, TRAIN_TEXTS)
    once, twice = kept_ids(tokenizer, counts, 1), kept_ids(tokenizer, counts, 2)
    assert set(twice) < set(once)
    vocab = tokenizer.get_vocab()
    dropped = {vocab_token for vocab_token, index in vocab.items() if index in set(once) - set(twice)}
    assert dropped and all(counts[vocab[token]] == 1 for token in dropped)
    assert all(vocab[token] in twice for token in vocab if len(token.removeprefix("##")) == 1 or token[0] == "[")
    with pytest.raises(ValueError, match="min_count must be at least 1"):
        kept_ids(tokenizer, counts, 0)


def test_a_tokenizer_that_is_not_wordpiece_is_refused() -> None:
    tokenizer = Tokenizer(models.BPE(vocab={"a": 0, "b": 1, "ab": 2}, merges=[("a", "b")]))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    assert "BPE" in prunable(tokenizer) and "WordPiece" in prunable(tokenizer)
    with pytest.raises(ValueError, match="the vocabulary cannot be pruned: its tokenizer is BPE"):
        prune(tiny_network(tiny_tokenizer()), tokenizer, ["ab"])
    assert save_vocab_file(Path("/nonexistent"), tokenizer) is None


def test_a_tokenizer_with_more_tokens_than_the_embedding_has_rows_is_refused(pretrained) -> None:
    """A checkpoint whose tokenizer holds tokens past its embedding's rows (its model never embeds them): no row to
    keep for them, so no pruning, and the form is weighed without it (it crashed the candidate before)."""
    from depthfinder.encoder.size import TORCH_PRUNED, form_sizes

    network, tokenizer = pretrained
    small = prune(network, tokenizer, TRAIN)[0]  # an embedding of fewer rows than the full tokenizer's tokens
    assert "holds" in prunable(tokenizer, small) and prunable(tokenizer, network) is None
    with pytest.raises(ValueError, match="the vocabulary cannot be pruned: its tokenizer holds"):
        prune(small, tokenizer, TRAIN)
    assert TORCH_PRUNED not in form_sizes(small, tokenizer, TRAIN)


def test_the_standard_folders_of_a_pruned_model_carry_its_vocabulary(tmp_path: Path, pretrained) -> None:
    """The Hugging Face folder (type's own head) or the sentence-transformers folder (pooled), read by transformers
    alone: the pruned vocabulary in tokenizer.json and vocab.txt, and the pruned model's probabilities, unseen words
    included."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from depthfinder.encoder.bundle import save_hf_folder, save_sentence_transformers_folder
    from tests.encoder.test_sentence_transformers_form import read_as_sentence_transformers_does

    network, tokenizer = pretrained
    pruned, pruned_tokenizer = prune(network, tokenizer, TRAIN)
    texts = [*TRAIN[:10], *UNSEEN]
    expected = TextClassifier(pruned, pruned_tokenizer, LABELS).predict_proba(texts)
    if pruned.cfg.pooling == "head":
        folder = save_hf_folder(tmp_path / "hf", pruned, pruned_tokenizer, LABELS)
        model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
        features = AutoTokenizer.from_pretrained(folder)(texts, padding=True, return_tensors="pt")
        with torch.no_grad():
            logits = model(input_ids=features["input_ids"], attention_mask=features["attention_mask"]).logits
    else:
        folder = save_sentence_transformers_folder(tmp_path / "st", pruned, pruned_tokenizer, LABELS)
        logits = torch.from_numpy(read_as_sentence_transformers_does(folder, texts))
    assert np.allclose(torch.softmax(logits, dim=-1).numpy(), expected, atol=1e-5)
    vocab = (folder / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert vocab == [token for token, _ in sorted(pruned_tokenizer.get_vocab().items(), key=lambda item: item[1])]
    assert len(vocab) == pruned.cfg.vocab_size < tokenizer.get_vocab_size()
