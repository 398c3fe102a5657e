"""Token labels in the encoder: each word labelled at its first piece, networks that label every token (scratch and
a pretrained type's own token-classification head), a tagger trained at a depth scored by its entities, and the
entities read back as character spans."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from depthfinder.encoder.config import ModelConfig, TrainConfig
from depthfinder.encoder.datamodule import TextDataModule
from depthfinder.encoder.distillation import UNLABELLED
from depthfinder.encoder.families import Pretrained
from depthfinder.encoder.serving import TextClassifier, encode_words, load_tokenizer, spans_of
from depthfinder.encoder.tokenizer import train_tokenizer
from depthfinder.encoder.training import TrainingData, TrainingSetup, train_candidate
from depthfinder.expectations.table.datasets import DATASETS
from depthfinder.expectations.table.shape import class_labels
from tests.encoder.tiny_checkpoint import tiny_checkpoint

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")
TEXTS = ["Omar flew to Kyoto", "the Initech board met Priya yesterday", "Lima"]


@pytest.fixture(scope="module")
def tagged():
    """names-in-context's sentences, split, with a tokenizer trained on its train rows."""
    table = DATASETS["names-in-context"].generate(300, 1)
    table["text"], table["label"] = table["tokens"].map(" ".join), table["tags"].map(" ".join)  # the canonical table
    table["split"] = np.where(np.arange(len(table)) % 5 == 0, "val", np.where(np.arange(len(table)) % 5 == 1,
                                                                               "test", "train"))
    tokenizer = train_tokenizer(table.loc[table["split"] == "train", "text"], 300)
    return table, tokenizer


def test_each_word_is_read_at_its_first_piece_and_a_word_past_the_cut_is_not_read() -> None:
    tokenizer = train_tokenizer(["the cat sat on the mat", "a dog"], 120)
    (ids, first), (cut_ids, cut_first) = encode_words(tokenizer, ["the cat-sat zzqx", "the cat sat on the mat"], 4)
    pieces = [tokenizer.id_to_token(i) for i in ids]
    assert pieces[0] == "[CLS]" and len(ids) == 4
    assert first[:2] == [1, 2] and pieces[first[1]] == "cat"  # "cat-sat" is one word: read at "cat"
    assert first[2] == -1  # past max_len
    assert cut_first == [1, 2, 3, -1, -1, -1] and len(cut_ids) == 4


def test_the_datamodule_trains_a_words_first_piece_on_its_tag_and_scores_no_other_token(tagged) -> None:
    table, tokenizer = tagged
    labels = class_labels(table)
    data = TextDataModule(table, tokenizer, labels, 32, 8, seed=0, tokens=True)
    data.setup()
    row = table[table["split"] == "train"].iloc[0]
    ids, target = data.splits["train"][0]
    (pieces, first), = encode_words(tokenizer, [row["text"]], 32)
    assert ids == pieces and len(target) == len(pieces)
    assert [labels[target[p]] for p in first if p >= 0] == row["label"].split()[: sum(p >= 0 for p in first)]
    assert (np.delete(target, [p for p in first if p >= 0]) == UNLABELLED).all()  # [CLS] and later pieces
    batch = next(iter(data.val_dataloader()))
    assert batch["labels"].shape == batch["input_ids"].shape
    assert (batch["labels"][~batch["attention_mask"]] == UNLABELLED).all()  # padding is not scored


def test_the_class_labels_of_a_token_table_are_its_tags(tagged) -> None:
    table, _ = tagged
    assert class_labels(table) == ["B-LOC", "B-ORG", "B-PER", "I-ORG", "I-PER", "O"]
    assert class_labels(table.drop(columns="tags")) == sorted(table["label"].unique())  # a label per text


def test_a_pretrained_tagger_is_its_types_token_classification_model(tmp_path, tagged) -> None:
    from transformers import BertForTokenClassification

    table, _ = tagged
    checkpoint = tiny_checkpoint(tmp_path / "bert", table["text"], layers=3)
    family = Pretrained.open(ModelConfig(pretrained=str(checkpoint), pretrained_pooling="tokens"))[0]
    network = family.network(2, 6, ModelConfig(pretrained=str(checkpoint), pretrained_pooling="tokens"),
                             load_tokenizer(checkpoint / "tokenizer.json"))
    assert isinstance(network.encoder, BertForTokenClassification) and network.cfg.depth == 2
    ids = torch.tensor([[2, 5, 6, 7, 0]])
    assert network(ids, ids != 0).shape == (1, 5, 6)


def trained_tagger(tagged, depth: int, epochs: int, folder, **options):
    """A scratch tagger of names-in-context trained at `depth` for `epochs` (train_candidate's `options`)."""
    table, tokenizer = tagged
    model = ModelConfig(d_model=32, n_heads=2, d_ff=64, max_len=32, pooling="tokens")
    train = TrainConfig(max_epochs=epochs, min_epochs=epochs, batch_size=16, learning_rate=3e-3)
    return train_candidate(TrainingData(table, class_labels(table), tokenizer), depth, model, train,
                           TrainingSetup(folder, progress=False), **options)


def test_a_tagger_trained_at_a_depth_tags_words_and_is_scored_by_its_entities(tmp_path, tagged) -> None:
    table, tokenizer = tagged
    labels = class_labels(table)
    trained = trained_tagger(tagged, 1, 4, tmp_path)
    assert {"entity_f1", "entity_macro_f1", "token_accuracy"} <= set(trained.metrics)
    assert trained.metrics["entity_f1"] > 0.5  # a majority tagger (all O) finds no entity: 0
    val = table[table["split"] == "val"]
    assert trained.val_true.shape == (len(val), 3) and trained.val_predicted.shape == (len(val), 6)  # LOC ORG PER
    assert trained.val_true.sum() == sum(tag.startswith("B-") for tags in val["label"] for tag in tags.split())
    tags = TextClassifier(trained.network, tokenizer, labels).predict_tags(TEXTS)
    assert [len(words) for words in tags] == [4, 6, 1] and all(set(words) <= set(labels) for words in tags)
    with pytest.raises(ValueError, match="predict_tags"):
        TextClassifier(trained.network, tokenizer, labels).predict_proba(TEXTS)


def test_spans_are_the_entities_of_the_tags_with_their_character_offsets() -> None:
    text = "Dr  Omar Haddad joined Initech in Kyoto"
    spans = spans_of(text, ["O", "B-PER", "I-PER", "O", "B-ORG", "O", "B-LOC"])
    assert spans == [{"text": "Omar Haddad", "type": "PER", "start": 4, "end": 15},
                     {"text": "Initech", "type": "ORG", "start": 23, "end": 30},
                     {"text": "Kyoto", "type": "LOC", "start": 34, "end": 39}]
    assert [s["text"] for s in spans_of("a b c d", ["S-PER", "B-LOC", "E-LOC", "I-ORG"])] == ["a", "b c", "d"]
    assert [s["text"] for s in spans_of("a b", ["B-PER", "B-PER"])] == ["a", "b"]  # two mentions side by side


def test_a_student_tagger_learns_each_words_soft_label_from_its_teacher(tmp_path, tagged) -> None:
    from depthfinder.encoder.distillation import SoftLabels, train_texts

    table, tokenizer = tagged
    labels = class_labels(table)
    model = ModelConfig(d_model=32, n_heads=2, d_ff=64, max_len=32, pooling="tokens")
    train = TrainConfig(max_epochs=3, min_epochs=3, batch_size=16, learning_rate=3e-3)
    teacher = TextClassifier(train_candidate(TrainingData(table, labels, tokenizer), 2, model, train,
                                             TrainingSetup(tmp_path / "teacher", progress=False)).network,
                             tokenizer, labels)
    texts = train_texts(table)
    logits = teacher.predict_logits(texts)  # per word, NaN past each sentence's words
    words = [len(text.split()) for text in texts]
    assert logits.shape == (len(texts), max(words), len(labels))
    assert all(np.isnan(row[n:]).all() and not np.isnan(row[:n]).any() for row, n in zip(logits, words, strict=True))
    assert [[labels[k] for k in row[:n].argmax(axis=1)] for row, n in zip(logits, words, strict=True)] == \
        teacher.predict_tags(texts)

    lesson = SoftLabels(logits=logits, temperature=2.0, alpha=0.5)
    data = TextDataModule(table, tokenizer, labels, 32, 8, seed=0, tokens=True, teacher_logits=logits)
    data.setup()
    ids, target, soft = data.splits["train"][0]
    assert np.isnan(soft[target == UNLABELLED]).all()  # [CLS] and later pieces are taught nothing
    assert np.allclose(soft[target != UNLABELLED], logits[0, : (target != UNLABELLED).sum()])
    student = train_candidate(TrainingData(table, labels, tokenizer, soft_labels=lesson), 1, model, train,
                              TrainingSetup(tmp_path / "student", progress=False))
    plain = train_candidate(TrainingData(table, labels, tokenizer), 1, model, train,
                            TrainingSetup(tmp_path / "plain", progress=False))
    assert student.metrics["entity_f1"] > 0.5
    weights = [next(iter(candidate.network.state_dict().values())) for candidate in (student, plain)]
    assert not torch.equal(*weights)  # the soft labels changed what it learnt


def test_untagged_sentences_join_a_student_taggers_train_split_with_their_soft_labels_per_word(tagged) -> None:
    table, tokenizer = tagged
    labels = class_labels(table)
    n_train = int((table["split"] == "train").sum())
    extra = ["Omar met Priya in Lima", "the board flew to Kyoto yesterday"]
    words = np.full((len(extra), 6, len(labels)), np.nan, dtype=np.float32)
    for row, text in enumerate(extra):
        words[row, : len(text.split())] = np.arange(len(text.split()))[:, None]  # word w says w for every tag
    data = TextDataModule(table, tokenizer, labels, 32, 8, seed=0, tokens=True,
                          teacher_logits=np.zeros((n_train, 40, len(labels)), np.float32), unlabeled=(extra, words))
    data.setup()
    assert len(data.splits["train"]) == n_train + len(extra)
    for row, ((pieces, first),) in enumerate(encode_words(tokenizer, [text], 32) for text in extra):
        ids, target, soft = data.splits["train"][n_train + row]
        assert ids == pieces and (target == UNLABELLED).all()  # no tag: the teacher's word alone teaches
        assert [soft[position, 0] for position in first] == list(range(len(first)))
        assert np.isnan(np.delete(soft, first, axis=0)).all()
    plain = TextDataModule(table, tokenizer, labels, 32, 8, seed=0, tokens=True)
    assert np.array_equal(data.token_lengths("train"), plain.token_lengths("train"))  # cost: the tagged rows'


def test_a_screened_tagger_probes_every_layer_by_token_and_scores_each_by_its_entities(tmp_path, tagged) -> None:
    from depthfinder.evidence.counts import f1_of_counts
    from depthfinder.evidence.entities import row_counts

    screened = trained_tagger(tagged, 3, 2, tmp_path / "screen", probes=True)
    assert len(screened.probe_metrics) == len(screened.probe_val_predicted) == 2  # depths 1 and 2 of 3
    for metrics, rows in zip(screened.probe_metrics, screened.probe_val_predicted, strict=True):
        assert rows.shape == (len(screened.val_true), 2 * screened.val_true.shape[1])  # each sentence's entity counts
        gold, predicted, hits = (counts.sum(axis=0, keepdims=True) for counts in row_counts(screened.val_true, rows))
        assert metrics["entity_f1"] == pytest.approx(f1_of_counts(gold, predicted, hits, "micro")[0])
