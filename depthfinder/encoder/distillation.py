"""Distillation: a teacher's soft labels on the train rows, cached once, and the loss a student learns them by.

The teacher is any trained candidate's bundle: its logits are computed per text, with its own tokenizer, so any
family can teach any other (a checkpoint of one tokenizer a scratch encoder of another). They are kept without a
temperature (the loss divides by it), so one cache serves every temperature, keyed by what decides them: the
teacher's content (its bundle's files) and the table's hash. A student's loss (Hinton et al. 2015) is

    alpha * T^2 * KL(softmax(teacher / T) || softmax(student / T)) + (1 - alpha) * CE(student, labels)

where T^2 keeps the soft term's gradient the size of the hard term's as T grows (its gradient scales as 1/T^2).

A teacher that fitted its train rows says little there that their labels do not (its soft labels on them are nearly
one-hot); on texts it never trained on it says what it knows. So a student may also learn from unlabelled texts
(Tang et al. 2019, "Distilling task-specific knowledge from BERT into simple neural networks": the transfer set):
the teacher's soft labels are their only target (their rows carry the class id UNLABELLED, which the cross-entropy
skips), and the batches mix them with the train rows.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from depthfinder.encoder.serving import ModelInput, load_bundle
from depthfinder.expectations.table.shape import model_inputs
from depthfinder.runtime.files import written_whole

CACHE_FOLDER = "soft-labels"
UNLABELLED = -100  # the class id of a transfer text: F.cross_entropy's ignore_index, so only the soft term sees it


@dataclass(frozen=True)
class SoftLabels:
    """What a student learns from besides the labels: the teacher's logits on the train rows, and the recipe."""

    logits: np.ndarray  # (n_train, K) the teacher's logits, in the order of the table's train rows
    temperature: float
    alpha: float  # weight of the soft term; 1 - alpha weighs the labels' cross-entropy
    unlabeled_texts: tuple[str, ...] = ()  # the transfer set: texts learnt from the teacher's soft labels alone
    unlabeled_logits: np.ndarray | None = None  # (len(unlabeled_texts), K) the teacher's logits on them


def distillation_loss(
    student: torch.Tensor, teacher: torch.Tensor, labels: torch.Tensor, temperature: float, alpha: float,
    weight: torch.Tensor | None = None,
) -> torch.Tensor:
    """`alpha * T^2 * KL(teacher || student) + (1 - alpha) * CE(student, labels)`, averaged over the batch.

    Args:
        student: the student's logits (B, K); for token labels, of every token (tokens, K).
        teacher: the teacher's logits (B, K) on the same rows; NaN on a row (a token) it teaches nothing about.
        labels: class ids (B,); UNLABELLED for a transfer text, which only the soft term sees (the cross-entropy is
            the mean over the labelled rows, 0 in a batch of none).
        temperature: T, of both softmaxes.
        alpha: weight of the soft term, in [0, 1].
        weight: per-class weights of the cross-entropy (class weights), or None.
    """
    labelled = labels != UNLABELLED
    hard = F.cross_entropy(student[labelled], labels[labelled], weight=weight) if labelled.any() \
        else student.sum() * 0.0
    if alpha == 0:  # exactly the plain loss: a student at alpha 0 trains as its plain twin
        return hard
    taught = ~torch.isnan(teacher).any(dim=-1)  # a token the teacher read no word at has no soft label
    if not taught.any():
        return (1 - alpha) * hard + student.sum() * 0.0
    soft = F.kl_div(F.log_softmax(student[taught] / temperature, dim=-1),
                    F.log_softmax(teacher[taught].float() / temperature, dim=-1),
                    log_target=True, reduction="batchmean")
    return alpha * temperature**2 * soft + (1 - alpha) * hard


def bundle_digest(bundle: Path) -> str:
    """The teacher's content as a short hash: every file of its bundle (weights, config, tokenizer), by name and
    bytes, so a bundle retrained or replaced is another teacher whatever its path."""
    digest = hashlib.sha256()
    for path in sorted(Path(bundle).rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(bundle)).encode() + b"\0")
            with path.open("rb") as file:
                for chunk in iter(lambda: file.read(1 << 20), b""):
                    digest.update(chunk)
    return digest.hexdigest()[:16]


def soft_labels_path(cache: Path, teacher: str, texts: str) -> Path:
    """Where the logits of the teacher of digest `teacher` on the texts of digest `texts` (a table's hash for its
    train rows) are kept."""
    return Path(cache) / CACHE_FOLDER / f"{teacher}-{texts}.npy"


def train_texts(frame: pd.DataFrame) -> list[ModelInput]:
    """The inputs a student's soft labels are in the order of: `frame`'s train rows."""
    return model_inputs(frame[frame["split"] == "train"])


def teacher_logits(bundle: Path, teacher: str, texts: list[ModelInput], digest: str, cache: Path) -> np.ndarray:
    """The teacher's logits (len(texts), K) on `texts`, in their order: read from the cache, or computed once and
    written there (atomically: students training at once may both compute them, and one file wins).

    Args:
        bundle: the teacher's bundle (encoder.bundle.save_bundle).
        teacher: its digest (`bundle_digest`), the cache's key with `digest`.
        texts: the train rows' texts (`train_texts`) or a transfer set's.
        digest: what names `texts` (the table's content hash, or the transfer set's).
        cache: the work folder the cache lives under.
    """
    path = soft_labels_path(cache, teacher, digest)
    if path.is_file():
        logits = np.load(path, allow_pickle=False)
        if logits.shape[0] == len(texts):
            return logits
    logits = load_bundle(bundle).predict_logits(texts)
    with written_whole(path) as partial, partial.open("wb") as file:
        np.save(file, logits, allow_pickle=False)
    return logits
