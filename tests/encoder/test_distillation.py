"""Distillation in the model's floor: the loss, the soft labels travelling with their rows, the student learning from
them, and the cache keyed by the teacher's content."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F
from tokenizers import Tokenizer

from depthfinder.encoder import distillation
from depthfinder.encoder.bundle import save_bundle
from depthfinder.encoder.datamodule import TextDataModule
from depthfinder.encoder.distillation import (
    UNLABELLED,
    SoftLabels,
    bundle_digest,
    distillation_loss,
    soft_labels_path,
    teacher_logits,
    train_texts,
)
from depthfinder.encoder.model import EncoderClassifier, EncoderConfig
from depthfinder.encoder.module import DepthClassifier
from depthfinder.encoder.tokenizer import train_tokenizer
from depthfinder.encoder.training import TrainingData, TrainingSetup, train_candidate
from tests.encoder.keyword_task import LABELS, keyword_frame, tiny_model_config, tiny_train_config
from tests.encoder.tiny_models import tiny_network, tiny_tokenizer

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")


def test_the_loss_is_alpha_t_squared_kl_plus_the_rest_cross_entropy() -> None:
    generator = torch.Generator().manual_seed(0)
    student, teacher = torch.randn(6, 3, generator=generator), torch.randn(6, 3, generator=generator)
    labels = torch.tensor([0, 1, 2, 0, 1, 2])
    p_teacher = torch.softmax(teacher / 3.0, dim=-1)
    kl = (p_teacher * (p_teacher.log() - torch.log_softmax(student / 3.0, dim=-1))).sum(dim=-1).mean()
    expected = 0.7 * 9.0 * kl + 0.3 * F.cross_entropy(student, labels)
    assert distillation_loss(student, teacher, labels, 3.0, 0.7).item() == pytest.approx(expected.item(), rel=1e-5)
    # alpha 0 is the plain loss exactly; a student that already agrees with its teacher pays no soft term
    assert torch.equal(distillation_loss(student, teacher, labels, 3.0, 0.0), F.cross_entropy(student, labels))
    assert distillation_loss(teacher, teacher, labels, 3.0, 1.0).item() == pytest.approx(0.0, abs=1e-6)


def test_an_unlabelled_row_is_learnt_from_its_soft_label_alone() -> None:
    generator = torch.Generator().manual_seed(1)
    student, teacher = torch.randn(5, 3, generator=generator), torch.randn(5, 3, generator=generator)
    labels = torch.tensor([0, UNLABELLED, 2, UNLABELLED, 1])
    labelled = labels != UNLABELLED
    p_teacher = torch.softmax(teacher / 2.0, dim=-1)
    kl = (p_teacher * (p_teacher.log() - torch.log_softmax(student / 2.0, dim=-1))).sum(dim=-1).mean()
    expected = 0.6 * 4.0 * kl + 0.4 * F.cross_entropy(student[labelled], labels[labelled])
    assert distillation_loss(student, teacher, labels, 2.0, 0.6).item() == pytest.approx(expected.item(), rel=1e-5)
    # a batch of unlabelled texts only: the soft term, finite, and nothing of the (absent) labels
    alone = distillation_loss(student, teacher, torch.full((5,), UNLABELLED), 2.0, 0.6)
    assert alone.item() == pytest.approx(0.6 * 4.0 * kl.item(), rel=1e-5)


def test_unlabelled_texts_join_the_train_batches_with_their_soft_labels_and_no_class() -> None:
    frame = keyword_frame(240)
    tokenizer = train_tokenizer(frame.loc[frame["split"] == "train", "text"], vocab_size=200)
    n_train = int((frame["split"] == "train").sum())
    extra = keyword_frame(60, seed=5)["text"].tolist()
    logits = np.zeros((n_train, 3), dtype=np.float32)
    extra_logits = np.tile(np.array([[0.0, 0.0, 9.0]], dtype=np.float32), (len(extra), 1))  # each says 'tech'
    data = TextDataModule(frame, tokenizer, LABELS, 32, 8, seed=3, teacher_logits=logits,
                          unlabeled=(extra, extra_logits))
    data.setup()
    batches = list(data.train_dataloader())
    labels = torch.cat([batch["labels"] for batch in batches])
    soft = torch.cat([batch["teacher_logits"] for batch in batches])
    assert (labels == UNLABELLED).sum().item() == len(extra) and len(labels) == n_train + len(extra)
    assert torch.equal(soft[labels == UNLABELLED].argmax(dim=-1), torch.full((len(extra),), 2))  # theirs travel along
    assert not (soft[labels != UNLABELLED] != 0).any()
    assert all((batch["labels"] != UNLABELLED).all() for batch in data.val_dataloader())
    # the length its cost per example is measured at is its twin's: the labelled rows'
    twin = TextDataModule(frame, tokenizer, LABELS, 32, 8, seed=3)
    assert np.array_equal(data.token_lengths("train"), twin.token_lengths("train"))
    with pytest.raises(ValueError, match="give teacher_logits too"):
        TextDataModule(frame, tokenizer, LABELS, 32, 8, seed=3, unlabeled=(extra, extra_logits))


def test_unlabelled_pairs_join_a_pair_models_train_batches_read_as_its_pairs_are() -> None:
    from depthfinder.encoder.serving import encode_texts

    frame = keyword_frame(120)
    frame["pair"] = frame["text"].iloc[::-1].to_numpy()
    tokenizer = train_tokenizer(frame["text"], vocab_size=200)
    n_train = int((frame["split"] == "train").sum())
    extra = list(zip(keyword_frame(20, seed=5)["text"], keyword_frame(20, seed=6)["text"], strict=True))
    data = TextDataModule(frame, tokenizer, LABELS, 32, 8, seed=3, teacher_logits=np.zeros((n_train, 3), np.float32),
                          unlabeled=(extra, np.zeros((len(extra), 3), np.float32)))
    data.setup()
    assert data.splits["train"].ids[n_train:] == encode_texts(tokenizer, extra, 32)  # both texts, one sequence
    assert data.splits["train"].ids[n_train:] != encode_texts(tokenizer, [first for first, _ in extra], 32)


def test_a_student_learns_from_unlabelled_texts_what_its_few_labelled_rows_cannot_teach(tmp_path: Path) -> None:
    """Nine labelled train rows and a teacher that knows the task: a student that also learns the teacher's soft labels
    on 300 unlabelled texts beats one taught on the nine alone, and one given those texts with soft labels that say
    the wrong class (so it is what the teacher says of them, not more steps, that teaches)."""
    full = keyword_frame(360)
    tokenizer = train_tokenizer(full.loc[full["split"] == "train", "text"], vocab_size=200)
    recipe = tiny_train_config(max_epochs=8, patience=8)
    train_rows = full.index[full["split"] == "train"]
    few = full.drop(index=train_rows[9:])  # three labelled rows per class (the classes take turns)
    extra = keyword_frame(300, seed=7)["text"].tolist()

    def fit(frame: pd.DataFrame, out: str, soft_labels: SoftLabels | None = None):
        return train_candidate(TrainingData(frame, LABELS, tokenizer, soft_labels=soft_labels), 1, tiny_model_config(),
                               recipe, TrainingSetup(tmp_path / out, progress=False))

    teacher = fit(full, "teacher")
    bundle = save_bundle(tmp_path / "teacher-bundle", teacher.network, tokenizer, LABELS)
    digest = bundle_digest(bundle)
    logits = teacher_logits(bundle, digest, train_texts(few), "few", tmp_path / "work")
    extra_logits = teacher_logits(bundle, digest, extra, "extra", tmp_path / "work")
    wrong = np.roll(extra_logits, 1, axis=1)  # each text's soft label moved to the next class

    def student(out: str, unlabeled: np.ndarray | None) -> float:
        soft = SoftLabels(logits=logits, temperature=2.0, alpha=0.5, unlabeled_texts=tuple(extra) if
                          unlabeled is not None else (), unlabeled_logits=unlabeled)
        return fit(few, out, soft).test_metrics["macro_f1"]

    taught, alone, misled = student("taught", extra_logits), student("alone", None), student("misled", wrong)
    assert teacher.test_metrics["macro_f1"] > 0.9
    assert taught > 0.9, (taught, alone, misled)  # measured 1.000; alone 0.571, misled 0.201
    assert taught > alone + 0.1 and taught > misled + 0.3, (taught, alone, misled)


def test_a_students_training_loss_is_the_distillation_loss_of_the_batchs_soft_labels() -> None:
    cfg = EncoderConfig(vocab_size=50, n_classes=3, depth=1, d_model=16, n_heads=2, d_ff=32, max_len=8, dropout=0.0)
    torch.manual_seed(0)
    module = DepthClassifier(EncoderClassifier(cfg), n_classes=3, distill_temperature=2.0, distill_alpha=0.8)
    module.log = lambda *args, **kwargs: None  # no trainer to log to
    batch = {"input_ids": torch.randint(1, 50, (4, 8)), "attention_mask": torch.ones(4, 8, dtype=torch.bool),
             "labels": torch.tensor([0, 1, 2, 0]), "teacher_logits": 5.0 * torch.eye(3)[[2, 2, 0, 1]]}
    logits = module(batch["input_ids"], batch["attention_mask"]).float()
    loss = module.training_step(batch, 0)
    assert loss.item() == pytest.approx(distillation_loss(logits, batch["teacher_logits"], batch["labels"], 2.0,
                                                          0.8).item(), rel=1e-5)
    assert loss.item() != pytest.approx(F.cross_entropy(logits, batch["labels"]).item(), rel=1e-3)
    # validation keeps the labels' cross-entropy, so every candidate's val/loss reads alike
    assert module.validation_step(batch, 0).item() == pytest.approx(F.cross_entropy(logits, batch["labels"]).item())


def test_each_train_rows_soft_labels_travel_with_it_through_the_shuffled_batches() -> None:
    frame = keyword_frame(240)
    tokenizer = train_tokenizer(frame.loc[frame["split"] == "train", "text"], vocab_size=200)
    train_labels = frame.loc[frame["split"] == "train", "label"].map(LABELS.index).to_numpy()
    logits = np.eye(3, dtype=np.float32)[train_labels] * 10.0  # each row's soft label names its own class
    data = TextDataModule(frame, tokenizer, LABELS, 32, 8, seed=3, teacher_logits=logits)
    data.setup()
    batches = list(data.train_dataloader())
    assert sum(len(batch["labels"]) for batch in batches) == len(train_labels)
    for batch in batches:
        assert torch.equal(batch["teacher_logits"].argmax(dim=-1), batch["labels"])
    assert all("teacher_logits" not in batch for batch in data.val_dataloader())
    with pytest.raises(ValueError, match="teacher logits for 5 rows"):
        TextDataModule(frame, tokenizer, LABELS, 32, 8, seed=3, teacher_logits=logits[:5]).setup()


def _noisy(frame: pd.DataFrame) -> pd.DataFrame:
    """The train labels with a systematic noise that misleads: 80 % of the sport rows are labelled food (so food is
    what the labels say of `football`); validation and test keep the true labels."""
    rng = np.random.default_rng(0)
    flipped = (frame["split"] == "train") & (frame["label"] == "sport") & (rng.random(len(frame)) < 0.8)
    return frame.assign(label=np.where(flipped, "food", frame["label"]))


def test_a_student_beats_its_plain_twin_where_the_teacher_knows_more_than_the_labels_show(tmp_path: Path) -> None:
    """A teacher trained on the clean labels teaches, through its bundle and the cache, a student trained on the noisy
    ones; the student's plain twin (same initialisation, same noisy labels, no soft labels) learns the noise."""
    clean = keyword_frame(360)
    noisy = _noisy(clean)
    tokenizer = train_tokenizer(clean.loc[clean["split"] == "train", "text"], vocab_size=200)
    recipe = tiny_train_config(max_epochs=8, patience=8)

    def fit(frame: pd.DataFrame, out: str, soft_labels: SoftLabels | None = None):
        return train_candidate(TrainingData(frame, LABELS, tokenizer, soft_labels=soft_labels), 1, tiny_model_config(),
                               recipe, TrainingSetup(tmp_path / out, progress=False))

    teacher = fit(clean, "teacher")
    bundle = save_bundle(tmp_path / "teacher-bundle", teacher.network, tokenizer, LABELS)
    logits = teacher_logits(bundle, bundle_digest(bundle), train_texts(noisy), "noisy", tmp_path / "work")
    plain = fit(noisy, "plain").metrics["macro_f1"]
    student = fit(noisy, "student", SoftLabels(logits=logits, temperature=2.0, alpha=0.8)).metrics["macro_f1"]
    assert teacher.metrics["macro_f1"] > 0.9
    assert student > 0.9  # measured 1.000
    assert student > plain + 0.1, (student, plain)  # plain measured 0.556
    # the same initialisation and batches: at alpha 0 the student is its plain twin, weight for weight
    twin = fit(noisy, "alpha-0", SoftLabels(logits=logits, temperature=2.0, alpha=0.0))
    weights = fit(noisy, "plain-again").network.state_dict()
    assert all(torch.equal(value, weights[key]) for key, value in twin.network.state_dict().items())


def test_a_student_stopped_at_an_epoch_and_resumed_ends_as_one_trained_straight_through(tmp_path: Path) -> None:
    """Its soft labels travel with its rows, so a resumed student takes the same steps as one never stopped."""
    frame = keyword_frame(240)
    tokenizer = train_tokenizer(frame.loc[frame["split"] == "train", "text"], vocab_size=200)
    n_train = int((frame["split"] == "train").sum())
    soft = SoftLabels(logits=np.random.default_rng(1).normal(size=(n_train, 3)).astype(np.float32), temperature=2.0,
                      alpha=0.5)
    recipe = tiny_train_config(max_epochs=4, min_epochs=4)

    def run(out: str, **budget: object):
        return train_candidate(TrainingData(frame, LABELS, tokenizer, soft_labels=soft), 1, tiny_model_config(), recipe,
                               TrainingSetup(tmp_path / out, progress=False, **budget))

    straight = run("straight")
    stopped = run("stopped", epochs=2)
    resumed = run("stopped", resume_from=stopped.checkpoint)
    weights = straight.network.state_dict()
    assert all(torch.equal(value, weights[key]) for key, value in resumed.network.state_dict().items())
    assert resumed.history == straight.history and len(straight.history) == 4


def test_the_soft_label_cache_is_keyed_by_the_teachers_content(tmp_path: Path, monkeypatch) -> None:
    tokenizer: Tokenizer = tiny_tokenizer()
    frame = pd.DataFrame({"text": ["a great film", "an awful film", "great fun", "awful mess"],
                          "split": ["train", "val", "train", "train"]})
    teacher = save_bundle(tmp_path / "teacher", tiny_network(tokenizer, seed=0), tokenizer, ["neg", "pos"])
    digest = bundle_digest(teacher)
    first = teacher_logits(teacher, digest, train_texts(frame), "data1", tmp_path / "work")
    assert first.shape == (3, 2)
    assert soft_labels_path(tmp_path / "work", digest, "data1").is_file()

    def no_teacher(path):
        raise AssertionError("the teacher ran again: its logits were cached")

    monkeypatch.setattr(distillation, "load_bundle", no_teacher)
    assert np.array_equal(teacher_logits(teacher, digest, train_texts(frame), "data1", tmp_path / "work"), first)
    monkeypatch.undo()

    # the same path with other weights is another teacher, and so is another table
    save_bundle(teacher, tiny_network(tokenizer, seed=1), tokenizer, ["neg", "pos"])
    assert bundle_digest(teacher) != digest
    other = teacher_logits(teacher, bundle_digest(teacher), train_texts(frame), "data1", tmp_path / "work")
    assert not np.allclose(other, first)
    assert soft_labels_path(tmp_path / "work", digest, "data2") != soft_labels_path(tmp_path / "work", digest, "data1")


def test_any_family_teaches_any_other_whatever_their_tokenizers(tmp_path: Path) -> None:
    """Soft labels are per text: a scratch teacher (its own WordPiece) teaches a pretrained checkpoint's bottom layer
    (the checkpoint's tokenizer); the student learns from them (it is not its plain twin) and serves alone."""
    from depthfinder.encoder.config import ModelConfig
    from depthfinder.encoder.families import Pretrained
    from depthfinder.encoder.serving import load_bundle, load_tokenizer
    from tests.encoder.tiny_checkpoint import WORDS, tiny_checkpoint

    frame = _noisy(keyword_frame(240))
    scratch_tokenizer = train_tokenizer(frame.loc[frame["split"] == "train", "text"], vocab_size=200)
    teacher = train_candidate(TrainingData(keyword_frame(240), LABELS, scratch_tokenizer), 1, tiny_model_config(),
                              tiny_train_config(max_epochs=4), TrainingSetup(tmp_path / "teacher", progress=False))
    bundle = save_bundle(tmp_path / "teacher-bundle", teacher.network, scratch_tokenizer, LABELS)
    logits = teacher_logits(bundle, bundle_digest(bundle), train_texts(frame), "noisy", tmp_path / "work")

    model = ModelConfig(pretrained=str(tiny_checkpoint(tmp_path / "ckpt", [" ".join(WORDS)] * 4, layers=2)),
                        max_len=32)
    (family,) = Pretrained.open(model)
    tokenizer = load_tokenizer(family.tokenizer(Path(), "", model, tmp_path))
    assert tokenizer.get_vocab() != scratch_tokenizer.get_vocab()

    def fit(out: str, soft: SoftLabels | None):
        return train_candidate(TrainingData(frame, LABELS, tokenizer, soft_labels=soft), 1, model,
                               tiny_train_config(max_epochs=2, learning_rate=1e-3),
                               TrainingSetup(tmp_path / out, progress=False), family=family)

    student = fit("student", SoftLabels(logits=logits, temperature=2.0, alpha=0.8))
    plain = fit("plain", None)
    assert any(not torch.equal(value, plain.network.state_dict()[key])
               for key, value in student.network.state_dict().items())
    served = save_bundle(tmp_path / "student-bundle", student.network, tokenizer, LABELS)
    assert load_bundle(served).predict(["football is fun"])[0] in LABELS  # nothing of the teacher at serving time


def test_a_student_from_its_trained_twin_never_ends_below_it_on_validation(tmp_path: Path) -> None:
    """A student continued from its trained plain twin (sweep.distill.start twin) with soft labels that say the wrong
    class: started from the twin's initialisation the misled student falls far below its twin; from the twin's weights
    no taught epoch beats them, so it keeps them (kept_start), weight for weight, and scores what the twin scores. With
    a teacher that knows more than the noisy labels show, the student from its twin improves on it."""
    clean = keyword_frame(360)
    noisy = _noisy(clean)
    tokenizer = train_tokenizer(clean.loc[clean["split"] == "train", "text"], vocab_size=200)
    recipe = tiny_train_config(max_epochs=8, patience=8)
    half = recipe.model_copy(update={"learning_rate": recipe.learning_rate / 2})

    def fit(frame: pd.DataFrame, out: str, soft_labels: SoftLabels | None = None, **given: object):
        return train_candidate(TrainingData(frame, LABELS, tokenizer, soft_labels=soft_labels), 1, tiny_model_config(),
                               given.pop("train", recipe), TrainingSetup(tmp_path / out, progress=False), **given)

    twin = fit(clean, "twin")
    twin_bundle = save_bundle(tmp_path / "twin-bundle", twin.network, tokenizer, LABELS)
    logits = teacher_logits(twin_bundle, bundle_digest(twin_bundle), train_texts(clean), "clean", tmp_path / "work")
    wrong = SoftLabels(logits=np.roll(logits, 1, axis=1) * 3, temperature=1.0, alpha=1.0)
    misled = fit(clean, "misled", wrong)
    kept = fit(clean, "kept", wrong, start_from=twin_bundle, train=half)
    assert twin.metrics["macro_f1"] > 0.9 and misled.metrics["macro_f1"] < twin.metrics["macro_f1"] - 0.3
    assert kept.kept_start and kept.metrics == twin.metrics and kept.test_metrics == twin.test_metrics
    weights = twin.network.state_dict()
    assert all(torch.equal(value, weights[key]) for key, value in kept.network.state_dict().items())

    noisy_twin = fit(noisy, "noisy-twin")
    noisy_bundle = save_bundle(tmp_path / "noisy-bundle", noisy_twin.network, tokenizer, LABELS)
    taught = fit(noisy, "taught", SoftLabels(logits=teacher_logits(twin_bundle, bundle_digest(twin_bundle),
                                                                   train_texts(noisy), "noisy", tmp_path / "work"),
                                             temperature=2.0, alpha=0.8), start_from=noisy_bundle, train=half)
    assert not taught.kept_start
    assert taught.metrics["macro_f1"] > noisy_twin.metrics["macro_f1"] + 0.1, (taught.metrics, noisy_twin.metrics)
