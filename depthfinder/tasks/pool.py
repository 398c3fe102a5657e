"""Tasks of the unlabelled pool (selection.pool): its texts prepared once, before training (bad input stops the run
before a candidate trains), and each depth to settle predicting them after the sweep, kept on disk by what decides
them (the model's bundle, the texts), so a stopped run predicts again only what it had not."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
from prefect import get_run_logger, task
from prefect.cache_policies import NONE

from depthfinder.evidence.disagreement import UNLABELLED
from depthfinder.expectations.table.config import DataConfig
from depthfinder.expectations.table.near_duplicates import DEFAULT_THRESHOLD
from depthfinder.expectations.table.pool import (
    PoolAudit,
    audit_pool,
    load_text_labels,
    load_texts,
    refuse_unknown_labels,
)
from depthfinder.expectations.table.shape import PAIR_COLUMN, ModelInput, model_inputs, read_inputs, side_texts
from depthfinder.runtime.files import written_whole
from depthfinder.selection.candidate import Candidate
from depthfinder.tasks.data import PreparedData

# The seed of the sample drawn from a pool larger than sweep.pool.rows: the same texts on every run.
SAMPLE_SEED = 20261204


@dataclass(frozen=True)
class PoolTexts:
    """The pool's examples as the run uses them, on disk (`text`, a pair's `pair`, and `label` where one was given,
    else empty)."""

    path: str
    digest: str  # of the texts, in order: what their predictions are kept by
    rows: int
    labelled: int
    read: int = 0  # texts in the file
    of_held_out: int = 0  # of them, copies or near-copies of validation or test texts: left out
    of_train: int = 0  # of train texts only: left out


@task(cache_policy=NONE)
def prepare_pool(unlabeled: Path, labels: Path | None, most: int, data: DataConfig, dataset: PreparedData,
                 workdir: Path, threshold: float = DEFAULT_THRESHOLD) -> PoolTexts:
    """The pool's new texts, audited like a split (expectations.table.pool.audit_pool: copies and near-copies of
    validation or test texts, and of train texts, left out and counted; a fixed sample of `most` of the rest) and the
    labels given for some of them, written once per content; ValueError (one line) on a bad file, a pool with no new
    text or a label that is not one of the dataset's classes."""
    texts = load_texts(unlabeled, data)
    audit = audit_pool(texts, read_inputs(dataset.path, "split"), threshold)
    if not audit.new:
        raise ValueError(f"{unlabeled}: every text is a copy or near-copy of a labelled text; give texts the models "
                         "never saw")
    fresh = [texts[i] for i in audit.new]
    sample = fresh
    if len(fresh) > most:
        keep = np.sort(np.random.default_rng(SAMPLE_SEED).choice(len(fresh), most, replace=False))
        sample = [fresh[i] for i in keep]
    given = load_text_labels(labels, data) if labels is not None else {}
    refuse_unknown_labels(labels, given, set(dataset.labels))
    frame = _examples(sample).assign(label=[given.get(example, "") for example in sample])
    _say(unlabeled, len(texts), audit, len(sample), len(set(given) - set(sample)))
    return replace(_written(frame, workdir), read=len(texts), of_held_out=audit.of_held_out, of_train=audit.of_train)


@task(cache_policy=NONE)
def teaching_texts(pool: PoolTexts, rows: int, workdir: Path) -> tuple[PoolTexts | None, PoolTexts]:
    """The pool cut in two: `rows` texts (at most half the pool) that students also learn their teacher's soft
    labels on (distillation's transfer set, without labels), and the rest, the evidence: a student learnt to agree
    with its teacher on the first part, so its disagreement there bounds nothing. Drawn by the texts' positions
    alone, so a rerun with labels (given for the evidence's texts) cuts it the same way; each part written once."""
    frame = pd.read_parquet(pool.path)
    taught = min(rows, len(frame) // 2)
    order = np.random.default_rng([SAMPLE_SEED, len(frame)]).permutation(len(frame))
    teaching = frame.iloc[np.sort(order[:taught])].assign(label="")
    return (_written(teaching, workdir) if taught else None,
            _written(frame.iloc[np.sort(order[taught:])].reset_index(drop=True), workdir))


@task(cache_policy=NONE)
def predict_pool(candidate: Candidate, pool: PoolTexts, classes: list[str], workdir: Path) -> str:
    """`candidate`'s predicted class ids (by `classes`' order) of the pool's texts, as a .npy file kept by its bundle
    and the texts; predicted once."""
    from depthfinder.encoder.serving import load_bundle

    key = hashlib.sha256(f"{Path(candidate.bundle).resolve()}|{pool.digest}".encode()).hexdigest()[:16]
    path = Path(workdir) / "pool" / f"predicted-{key}.npy"
    if path.is_file():
        return str(path)
    get_run_logger().info("%s predicts %d unlabelled texts", candidate.name, pool.rows)
    predicted = load_bundle(Path(candidate.bundle)).predict(pool_examples(pool))
    ids = np.array([classes.index(label) for label in predicted], dtype=np.int64)
    with written_whole(path) as partial, partial.open("wb") as file:
        np.save(file, ids)
    return str(path)


def pool_examples(pool: PoolTexts) -> list[ModelInput]:
    """The pool's examples, in order: what a model reads (a text, or a pair)."""
    return model_inputs(read_inputs(pool.path))


def pool_texts(pool: PoolTexts | None) -> list[str]:
    """Every text of the pool, each side of a pair on its own (what a vocabulary keeps); none without a pool."""
    return [] if pool is None else side_texts(read_inputs(pool.path))


def pool_labels(pool: PoolTexts, classes: list[str]) -> np.ndarray:
    """The pool's given labels as class ids by `classes`' order, UNLABELLED where none."""
    labels = pd.read_parquet(pool.path, columns=["label"])["label"].tolist()
    return np.array([classes.index(label) if label else UNLABELLED for label in labels], dtype=np.int64)


def class_shares(dataset: PreparedData, confidence: float) -> np.ndarray:
    """Each class's share among the train and validation rows, by `dataset.labels`' order, at the lower end of its
    one-sided interval at `confidence`'s tail (a normal approximation; at least half a row): a smaller share only
    loosens the disagreement bound."""
    from scipy.stats import norm

    frame = pd.read_parquet(dataset.path, columns=["label", "split"])
    labels = frame.loc[frame["split"].isin(["train", "val"]), "label"].astype(str)
    rows = len(labels)
    shares = labels.value_counts().reindex(dataset.labels, fill_value=0).to_numpy() / rows
    z = norm.ppf(1 - (1 - confidence) / 2)
    return np.maximum(shares - z * np.sqrt(shares * (1 - shares) / rows), 0.5 / rows)


def write_rows_to_label(pool: PoolTexts, rows: list[int], path: Path, data: DataConfig) -> Path:
    """The pool's `rows`, in that order, as a CSV of the data's input columns (--text-col, and --pair-col for pairs)
    and an empty --label-col to fill in, written atomically: given back as --labels, it reads as the data does."""
    examples = read_inputs(pool.path).iloc[rows]
    names = {"text": data.text_col, PAIR_COLUMN: data.pair_col}
    with written_whole(path) as partial:
        examples.rename(columns=names).assign(**{data.label_col: ""}).to_csv(partial, index=False)
    return path


def _say(path: Path, texts: int, audit: PoolAudit, used: int, unmatched: int) -> None:
    """What the run makes of the pool, in the log: what it left out and why."""
    logger = get_run_logger()
    logger.info("Unlabelled texts: %d of the %d in %s", used, texts, path)
    if audit.of_held_out:
        logger.warning("%d unlabelled texts are copies or near-copies of validation or test texts: left out (never "
                       "taught on, never evidence)", audit.of_held_out)
    if audit.of_train:
        logger.warning("%d unlabelled texts are copies or near-copies of train texts: left out (the models fitted "
                       "them)", audit.of_train)
    if unmatched:
        logger.warning("%d labelled texts are not among the unlabelled texts used: ignored", unmatched)


def _labels_digest(frame: pd.DataFrame) -> str:
    return hashlib.sha256(json.dumps(frame["label"].tolist()).encode()).hexdigest()[:8]


def _examples(examples: list[ModelInput]) -> pd.DataFrame:
    """Examples as the prepared table holds them: `text`, and `pair` where they are pairs."""
    if examples and isinstance(examples[0], tuple):
        return pd.DataFrame(examples, columns=["text", PAIR_COLUMN])
    return pd.DataFrame({"text": examples})


def _written(frame: pd.DataFrame, workdir: Path) -> PoolTexts:
    """Pool examples (`text`, a pair's `pair`, `label`) on disk, once per content, named by their examples and their
    labels."""
    examples = model_inputs(frame)
    digest = hashlib.sha256(json.dumps(examples).encode()).hexdigest()[:16]
    path = Path(workdir) / "pool" / f"{digest}-{_labels_digest(frame)}.parquet"
    if not path.is_file():
        with written_whole(path) as partial:
            frame.reset_index(drop=True).to_parquet(partial, index=False)
    return PoolTexts(path=str(path), digest=digest, rows=len(frame), labelled=int((frame["label"] != "").sum()))
