"""Train one candidate depth: the plain function behind the Prefect training task."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import lightning as L
import numpy as np
import torch

from depthfinder.encoder.datamodule import TextDataModule
from depthfinder.encoder.distillation import SoftLabels
from depthfinder.encoder.families import Family, Scratch
from depthfinder.encoder.module import DepthClassifier
from depthfinder.encoder.probes import LayerProbes
from depthfinder.encoder.serving import (
    WEIGHTS_FILE,
    ModelInput,
    Network,
    TextClassifier,
    encode_texts,
    labels_tokens,
    pad_batch,
)
from depthfinder.encoder.threads import torch_threads, training_threads
from depthfinder.encoder.trainer import (
    MONITOR,
    EarlyStoppingFrom,
    EpochState,
    StopOnRequest,
    best_checkpoint,
    build_trainer,
    checkpoint_threads,
    last_checkpoint,
    progress_bars,
    quiet_lightning,
    restore_network_weights,
)
from depthfinder.evidence.entities import entity_rows, entity_types
from depthfinder.evidence.metrics import ENTITY_METRICS, classification_metrics, entity_metrics
from depthfinder.expectations.table.shape import model_inputs

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pandas as pd
    from lightning.pytorch.loggers import Logger
    from tokenizers import Tokenizer

    from depthfinder.encoder.config import ModelConfig, TrainConfig



@dataclass(frozen=True)
class TrainedCandidate:
    depth: int
    network: Network  # best weights restored, eval mode, on CPU
    metrics: dict[str, float]  # validation: accuracy, balanced_accuracy, macro_f1
    test_metrics: dict[str, float]  # test split, same keys
    train_seconds: float  # in all, those before a resumed checkpoint included
    epochs: int  # epochs run in all, those before a resumed checkpoint included
    median_length: int  # median token length of the train split (for FLOPs)
    finished: bool  # early-stopped or at max_epochs: nothing left to train
    checkpoint: Path  # full training state after the last epoch, to continue from
    val_true: np.ndarray  # (n_val,) class ids of the validation rows, in the frame's order
    val_predicted: np.ndarray  # (n_val,) class ids the restored network predicts for them
    test_true: np.ndarray  # (n_test,) class ids of the test rows, in the frame's order
    test_predicted: np.ndarray  # (n_test,) class ids the restored network predicts for them
    history: list[float]  # validation macro-F1 after each epoch, resumed parts included
    # With probes (a screen): per layer k = 1..depth-1, the class ids its probe predicts for the validation rows,
    # and its validation and test metrics.
    probe_val_predicted: list[np.ndarray] = ()
    probe_metrics: list[dict[str, float]] = ()
    probe_test_metrics: list[dict[str, float]] = ()
    kept_start: bool = False  # started from another's weights (a student's twin), none of its epochs beat them


def inverse_frequency_weights(train_labels: Sequence[str], labels: Sequence[str]) -> torch.Tensor:
    """Per-class loss weights proportional to 1 / train count, with mean 1 over the classes."""
    counts = Counter(train_labels)
    absent = [label for label in labels if counts[label] == 0]
    if absent:
        raise ValueError(f"class(es) {absent[:5]} have no train rows; cannot weight them by frequency")
    inverse = torch.tensor([1.0 / counts[label] for label in labels], dtype=torch.float32)
    return inverse / inverse.mean()


@dataclass(frozen=True)
class TrainingData:
    """What a candidate learns from and is scored on.

    Args:
        frame: columns `text`, `label`, `split` (train/val/test); others are ignored.
        labels: the class order; a label's index is its class id.
        tokenizer: fitted on the train split (a pretrained family's: the checkpoint's own).
        class_weights: weight the loss by inverse train-class frequency.
        soft_labels: a student's lesson (encoder.distillation): the teacher's logits on the train rows, learnt with
            the labels by the distillation loss, and on its transfer set's texts (if any) alone.
    """

    frame: pd.DataFrame
    labels: list[str]
    tokenizer: Tokenizer
    class_weights: bool = False
    soft_labels: SoftLabels | None = None


@dataclass(frozen=True)
class TrainingSetup:
    """Where a training writes, how far it goes, where it resumes and who watches it.

    Args:
        out_dir: where the best weights and, after every epoch, the full training state
            (`last_checkpoint(out_dir, depth)`) are written, replacing earlier ones of this depth.
        epochs: stop once this many epochs are done in all (a successive-halving budget);
            None = `train_cfg.max_epochs`. The learning-rate schedule always spans
            `max_epochs`, so stopping at a budget and resuming trains as one run would.
            More than `max_epochs` extends a candidate that was still improving: resumed from
            its state at `max_epochs`, the schedule restarts for the extra epochs (warm-up to
            half the peak rate, cosine decay to 0; `encoder.module.warmup_cosine`).
        resume_from: a `TrainedCandidate.checkpoint` of an earlier call with the same data
            and settings and the same `out_dir`, or the last checkpoint of such a call that was
            killed, to continue from.
        logger: a Lightning logger (e.g. MLFlowLogger), or None for no logging.
        callbacks: more Lightning callbacks, e.g. to report progress elsewhere.
        progress: show Lightning's progress bars (only when it trains alone: `concurrent` 1).
        concurrent: trainings running at once on this machine (the sweep's workers): each takes its share
            of the cores (encoder.threads; a resumed training keeps the thread count it was trained with).
    """

    out_dir: Path
    epochs: int | None = None
    resume_from: Path | None = None
    logger: Logger | None = None
    callbacks: Sequence[L.Callback] = ()
    progress: bool = True
    concurrent: int = 1


def train_candidate(
    data: TrainingData,
    depth: int,
    model_cfg: ModelConfig,
    train_cfg: TrainConfig,
    setup: TrainingSetup,
    *,
    family: Family = Scratch(),
    probes: bool = False,
    start_from: Path | None = None,
) -> TrainedCandidate:
    """Train the encoder at one depth, early-stopped on validation macro-F1.

    Args:
        data: the table, its classes and tokenizer, the loss weighting, a student's soft labels.
        depth: number of Transformer blocks.
        model_cfg: width, heads, dropout, max_len, pooling.
        train_cfg: the training recipe.
        setup: where it writes, the epochs it stops at, what it resumes, its logger, callbacks and bars.
        family: what the network is (encoder.families): depthfinder's own encoder, from scratch,
            or the bottom `depth` layers of a pretrained checkpoint with a new head (`data.tokenizer`
            is then the checkpoint's own, and `model_cfg` gives only max_len and pooling).
        probes: also train a probe on each layer below the last (encoder.probes), a screen of every
            shallower depth that the network never feels; their predictions come back too.
        start_from: a bundle (encoder.bundle.save_bundle) of the same network whose weights it starts from instead of
            its initialisation: a student continues from its trained plain twin, so it begins where the twin ended
            and the teacher refines it (without it a student far below its teacher had lost to its twin). A student
            otherwise starts as its plain twin does (same family, depth, seed), so the two differ only by what they
            learnt from.

    Returns:
        The candidate with its best-validation weights restored, on CPU in eval mode, and
        validation and test metrics: `evidence.metrics` over the labels predicted by
        `encoder.bundle.TextClassifier`, the path a registered champion is scored by.
    """
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    epochs = train_cfg.max_epochs if setup.epochs is None else setup.epochs
    if epochs < 1:
        raise ValueError(f"epochs must be at least 1, got {epochs}")
    L.seed_everything(train_cfg.seed, workers=True, verbose=False)
    network = family.network(depth, len(data.labels), model_cfg, data.tokenizer)
    if start_from is not None and setup.resume_from is None:  # a resumed state holds its own weights
        network.load_state_dict(torch.load(Path(start_from) / WEIGHTS_FILE, map_location="cpu", weights_only=True))
    screen = _probes(network, len(data.labels), train_cfg.seed) if probes else None
    encoded = _data_module(data, network, train_cfg)
    median_length = int(np.median(encoded.token_lengths("train")))
    threads = checkpoint_threads(setup.resume_from) or training_threads(
        network, depth, train_cfg.batch_size, median_length, setup.concurrent)
    with torch_threads(threads):  # the same count however often it resumes, so the same sums and weights
        batches = len(encoded.train_dataloader())
        extension = max(0, epochs - train_cfg.max_epochs)
        module = _classifier(network, data, train_cfg, total_steps=train_cfg.max_epochs * batches,
                             restart_steps=extension * batches, probes=screen)
        out_dir = Path(setup.out_dir)
        checkpoint = best_checkpoint(out_dir, depth, keep_earlier=setup.resume_from is not None)
        early_stopping = EarlyStoppingFrom(train_cfg.min_epochs, monitor=MONITOR, mode="max",
                                           patience=train_cfg.patience)
        state = EpochState(last_checkpoint(out_dir, depth))
        stop = StopOnRequest(f"depth {depth} (seed {train_cfg.seed})", max(epochs, train_cfg.max_epochs))
        with quiet_lightning():
            # One progress bar at a time: rich's live display is the process's one console (two trainings in
            # threads broke it: IndexError in Console.clear_live), and bars from processes would interleave.
            trainer = build_trainer(train_cfg, [stop, early_stopping, checkpoint, state, *setup.callbacks], epochs,
                                    out_dir, setup.logger, progress_bars(setup.progress, setup.concurrent), batches)
            trainer.fit(module, datamodule=encoded, ckpt_path=setup.resume_from, weights_only=True)
        if not checkpoint.best_model_path:
            raise RuntimeError(f"depth {depth}: no checkpoint was saved; was {MONITOR!r} ever logged?")
        scores = _best_scores(network, screen, checkpoint.best_model_path, data)
        if start_from is not None and (started := _start_if_not_beaten(network, start_from, scores, data)) is not None:
            scores = started
    return TrainedCandidate(
        depth=depth, train_seconds=state.train_seconds, epochs=trainer.current_epoch, median_length=median_length,
        finished=early_stopping.stopped_epoch > 0 or trainer.current_epoch >= train_cfg.max_epochs,
        checkpoint=state.path, history=state.history, **scores,
    )


def _probes(network: Network, n_classes: int, seed: int) -> LayerProbes:
    """A probe on each layer below the network's last (on each token for a network of token labels), initialised
    apart: the network's random stream is left as it was, so a candidate trains the same with and without them."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return LayerProbes(network, n_classes, per_token=labels_tokens(network.cfg))


def _data_module(data: TrainingData, network: Network, train_cfg: TrainConfig) -> TextDataModule:
    """The splits encoded for the network (with a student's soft labels and its transfer set's texts), set up; a
    frame without test rows refused."""
    soft_labels = data.soft_labels
    unlabeled = (None if soft_labels is None or not soft_labels.unlabeled_texts
                 else (soft_labels.unlabeled_texts, soft_labels.unlabeled_logits))
    encoded = TextDataModule(data.frame, data.tokenizer, data.labels, network.cfg.max_len, train_cfg.batch_size,
                             train_cfg.seed, pad_id=network.cfg.pad_id,
                             teacher_logits=None if soft_labels is None else soft_labels.logits, unlabeled=unlabeled,
                             tokens=labels_tokens(network.cfg))
    encoded.setup()
    if len(encoded.splits["test"]) == 0:
        raise ValueError("the 'test' split is empty; test metrics need test rows")
    return encoded


def _start_if_not_beaten(network: Network, start_from: Path, best: dict[str, Any], data: TrainingData
                         ) -> dict[str, Any] | None:
    """The starting weights' scores, restored into `network`, when no epoch trained from them beat them on the
    validation rows (by MONITOR's metric, a tagger's by entity F1; a tie keeps the start): a student's early
    stopping counts where it started, so it never ends below the twin it started from there. None (the best epoch's
    weights left in place) otherwise."""
    trained = {key: value.detach().clone() for key, value in network.state_dict().items()}
    network.load_state_dict(torch.load(Path(start_from) / WEIGHTS_FILE, map_location="cpu", weights_only=True))
    started = _scores(network, data)
    metric = ENTITY_METRICS[0] if labels_tokens(network.cfg) else MONITOR.removeprefix("val/")  # as served
    if started["metrics"][metric] >= best["metrics"][metric]:
        return {**best, **started, "kept_start": True}
    network.load_state_dict(trained)
    return None


def _best_scores(network: Network, screen: LayerProbes | None, best: str, data: TrainingData) -> dict[str, Any]:
    """The best epoch's weights restored, and what they score on validation and test (and each probe's)."""
    restore_network_weights(network, best)
    scores = _scores(network, data)
    if screen is not None:
        restore_network_weights(screen, best, prefix="probes.")
        scores |= _probe_results(TextClassifier(network, data.tokenizer, data.labels), screen, data.frame, data.labels)
    return scores


def _scores(network: Network, data: TrainingData) -> dict[str, Any]:
    """What `network` as it is scores on validation and test, as served."""
    classifier = TextClassifier(network, data.tokenizer, data.labels)  # CPU, eval mode: as served from the registry
    (val_metrics, val_true, val_predicted), (test_metrics, test_true, test_predicted) = (
        _split_metrics(classifier, data.frame, data.labels, split) for split in ("val", "test")
    )
    return {"network": classifier.network, "metrics": val_metrics, "test_metrics": test_metrics,
            "val_true": val_true, "val_predicted": val_predicted, "test_true": test_true,
            "test_predicted": test_predicted}


def _probe_results(classifier: TextClassifier, screen: LayerProbes, frame: pd.DataFrame, labels: list[str]) -> dict:
    """Each probe's evidence rows on the validation rows (class ids; for token labels, each sentence's entity counts)
    and its validation and test metrics, layer 1 first."""
    results: dict[str, list] = {"probe_val_predicted": [], "probe_metrics": [], "probe_test_metrics": []}
    screen.eval()
    tagger = labels_tokens(classifier.network.cfg)
    for split, key in (("val", "probe_metrics"), ("test", "probe_test_metrics")):
        rows = frame[frame["split"] == split]
        truths = rows["label"].astype(str).tolist()
        if tagger:
            predicted = probe_tags(classifier, screen, model_inputs(rows))  # per layer, each sentence's tags
            results[key] = [entity_metrics(truths, layer) for layer in predicted]
            evidence = [entity_rows(truths, layer, entity_types(labels))[1] for layer in predicted]
        else:
            ids = probe_predictions(classifier, screen, model_inputs(rows))  # (layers, n)
            results[key] = [classification_metrics(truths, [labels[k] for k in layer]) for layer in ids]
            evidence = [layer.astype(np.int32) for layer in ids]
        if split == "val":
            results["probe_val_predicted"] = evidence
    return results


def probe_tags(classifier: TextClassifier, screen: LayerProbes, texts: list[str]) -> list[list[str]]:
    """Each probe's tags of `texts` (a network of token labels), per layer: each sentence's tags, joined, as served:
    read at each word's first piece, O past max_len."""
    def forward(input_ids: torch.Tensor, attention_mask: torch.Tensor) -> list[torch.Tensor]:
        screen.watch(attention_mask)
        classifier.network(input_ids, attention_mask)
        return screen.logits()

    layers = classifier.word_outputs(texts, forward) or [[] for _ in screen.probes]  # no texts: none read
    return [[" ".join(classifier.tags_of(words)) for words in layer] for layer in layers]


def probe_predictions(classifier: TextClassifier, screen: LayerProbes, texts: list[ModelInput], batch_size: int = 64
                      ) -> np.ndarray:
    """Class ids each probe predicts for `texts`, (layers - 1, n), in input order, batched as served."""
    ids = encode_texts(classifier.tokenizer, texts, classifier.network.cfg.max_len)
    out = np.empty((len(screen.probes), len(ids)), dtype=np.int64)
    with torch.inference_mode():
        for start in range(0, len(ids), batch_size):
            rows = list(range(start, min(start + batch_size, len(ids))))
            input_ids, attention_mask = pad_batch([ids[i] for i in rows], classifier.network.cfg.pad_id)
            screen.watch(attention_mask)
            classifier.network(input_ids, attention_mask)
            for layer, logits in enumerate(screen.logits()):
                out[layer, rows] = logits.argmax(dim=-1).numpy()
    return out


def _classifier(network: Network, data: TrainingData, train_cfg: TrainConfig, total_steps: int, restart_steps: int = 0,
                probes: LayerProbes | None = None) -> DepthClassifier:
    """The LightningModule around `network`, with inverse-frequency class weights if asked."""
    frame, labels, soft_labels = data.frame, data.labels, data.soft_labels
    train_labels = frame.loc[frame["split"] == "train", "label"].astype(str)
    train_labels = (train_labels.str.split().explode() if labels_tokens(network.cfg) else train_labels).tolist()
    return DepthClassifier(
        network,
        n_classes=len(labels),
        learning_rate=train_cfg.learning_rate,
        weight_decay=train_cfg.weight_decay,
        warmup_fraction=train_cfg.warmup_fraction,
        class_weights=inverse_frequency_weights(train_labels, labels) if data.class_weights else None,
        total_steps=total_steps,
        restart_steps=restart_steps,
        probes=probes,
        **({} if soft_labels is None else {"distill_temperature": soft_labels.temperature,
                                           "distill_alpha": soft_labels.alpha}),
    )


def _split_metrics(
    classifier: TextClassifier, frame: pd.DataFrame, labels: list[str], split: str
) -> tuple[dict[str, float], np.ndarray, np.ndarray]:
    """Quality on one split, from the labels the served model would predict; and the true and predicted
    class ids of its rows (for token labels, each sentence's entity counts: evidence.entities.entity_rows)."""
    rows = frame[frame["split"] == split]
    true = rows["label"].astype(str).tolist()
    predicted = classifier.predict(model_inputs(rows))
    if labels_tokens(classifier.network.cfg):  # a sentence's tags: scored by its entities, its rows their counts
        return entity_metrics(true, predicted), *entity_rows(true, predicted, entity_types(labels))
    index = {label: i for i, label in enumerate(labels)}
    ids = (np.array([index[label] for label in values], dtype=np.int32) for values in (true, predicted))
    return classification_metrics(true, predicted), *ids


