"""Train one candidate depth: the plain function behind the Prefect training task."""

from __future__ import annotations

import contextlib
import logging
import sys
import time
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import lightning as L
import numpy as np
import torch
from lightning.pytorch.callbacks import Checkpoint, EarlyStopping, ModelCheckpoint

from depthfinder.encoder.datamodule import TextDataModule
from depthfinder.encoder.distillation import SoftLabels
from depthfinder.encoder.families import Family, Scratch
from depthfinder.encoder.module import DepthClassifier
from depthfinder.encoder.probes import LayerProbes
from depthfinder.encoder.serving import WEIGHTS_FILE, Network, TextClassifier, encode_texts, pad_batch
from depthfinder.encoder.threads import torch_threads, training_threads
from depthfinder.evidence.metrics import classification_metrics
from depthfinder.runtime.files import written_whole
from depthfinder.runtime.interrupt import STOP, StopRequest

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    import pandas as pd
    from lightning.pytorch.loggers import Logger
    from tokenizers import Tokenizer

    from depthfinder.encoder.config import ModelConfig, TrainConfig

MONITOR = "val/macro_f1"
# Lightning loggers whose INFO lines (GPU/TPU available, CUDA_VISIBLE_DEVICES, ...) a
# normal run does not need; warnings still come through.
_CHATTY_LOGGERS = ("lightning.pytorch.utilities.rank_zero", "lightning.pytorch.accelerators.cuda")


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


def train_candidate(
    frame: pd.DataFrame,
    labels: list[str],
    tokenizer: Tokenizer,
    depth: int,
    model_cfg: ModelConfig,
    train_cfg: TrainConfig,
    *,
    class_weights: bool,
    out_dir: Path,
    logger: Logger | None = None,
    progress: bool = True,
    epochs: int | None = None,
    resume_from: Path | None = None,
    callbacks: Sequence[L.Callback] = (),
    family: Family = Scratch(),
    probes: bool = False,
    concurrent: int = 1,
    soft_labels: SoftLabels | None = None,
    start_from: Path | None = None,
) -> TrainedCandidate:
    """Train the encoder at one depth, early-stopped on validation macro-F1.

    Args:
        frame: columns `text`, `label`, `split` (train/val/test); others are ignored.
        labels: the class order; a label's index is its class id.
        tokenizer: fitted on the train split.
        depth: number of Transformer blocks.
        model_cfg: width, heads, dropout, max_len, pooling.
        train_cfg: the training recipe.
        class_weights: weight the loss by inverse train-class frequency.
        out_dir: where the best weights and, after every epoch, the full training state
            (`last_checkpoint(out_dir, depth)`) are written, replacing earlier ones of this depth.
        logger: a Lightning logger (e.g. MLFlowLogger), or None for no logging.
        progress: show Lightning's progress bars (only when it trains alone: `concurrent` 1).
        epochs: stop once this many epochs are done in all (a successive-halving budget);
            None = `train_cfg.max_epochs`. The learning-rate schedule always spans
            `max_epochs`, so stopping at a budget and resuming trains as one run would.
            More than `max_epochs` extends a candidate that was still improving: resumed from
            its state at `max_epochs`, the schedule restarts for the extra epochs (warm-up to
            half the peak rate, cosine decay to 0; `encoder.module.warmup_cosine`).
        resume_from: a `TrainedCandidate.checkpoint` of an earlier call with the same data
            and settings and the same `out_dir`, or the last checkpoint of such a call that was
            killed, to continue from.
        callbacks: more Lightning callbacks, e.g. to report progress elsewhere.
        family: what the network is (encoder.families): depthfinder's own encoder, from scratch,
            or the bottom `depth` layers of a pretrained checkpoint with a new head (`tokenizer`
            is then the checkpoint's own, and `model_cfg` gives only max_len and pooling).
        probes: also train a probe on each layer below the last (encoder.probes), a screen of every
            shallower depth that the network never feels; their predictions come back too.
        concurrent: trainings running at once on this machine (the sweep's workers): each takes its share
            of the cores (encoder.threads; a resumed training keeps the thread count it was trained with).
        soft_labels: train a student (encoder.distillation): the teacher's logits on the train rows, learnt with
            the labels by the distillation loss, and on its transfer set's texts (if any) alone. The network starts
            as its plain twin's does (same family, depth, seed), so the two differ only by what they learnt from.
        start_from: a bundle (encoder.bundle.save_bundle) of the same network whose weights it starts from instead of
            its initialisation: a student continues from its trained plain twin, so it begins where the twin ended
            and the teacher refines it (without it a student far below its teacher had lost to its twin).

    Returns:
        The candidate with its best-validation weights restored, on CPU in eval mode, and
        validation and test metrics: `evidence.metrics` over the labels predicted by
        `encoder.bundle.TextClassifier`, the path a registered champion is scored by.
    """
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    epochs = train_cfg.max_epochs if epochs is None else epochs
    if epochs < 1:
        raise ValueError(f"epochs must be at least 1, got {epochs}")
    L.seed_everything(train_cfg.seed, workers=True, verbose=False)
    network = family.network(depth, len(labels), model_cfg, tokenizer)
    if start_from is not None and resume_from is None:  # a resumed state holds its own weights
        network.load_state_dict(torch.load(Path(start_from) / WEIGHTS_FILE, map_location="cpu", weights_only=True))
    screen = _probes(network, len(labels), train_cfg.seed) if probes else None
    data = _data_module(frame, tokenizer, labels, network, train_cfg, soft_labels)
    median_length = int(np.median(data.token_lengths("train")))
    threads = checkpoint_threads(resume_from) or training_threads(
        network, depth, train_cfg.batch_size, median_length, concurrent)
    with torch_threads(threads):  # the same count however often it resumes, so the same sums and weights
        batches = len(data.train_dataloader())
        extension = max(0, epochs - train_cfg.max_epochs)
        module = _classifier(network, frame, labels, train_cfg, class_weights,
                             total_steps=train_cfg.max_epochs * batches, restart_steps=extension * batches,
                             probes=screen, soft_labels=soft_labels)
        checkpoint = _best_checkpoint(Path(out_dir), depth, keep_earlier=resume_from is not None)
        early_stopping = EarlyStoppingFrom(train_cfg.min_epochs, monitor=MONITOR, mode="max",
                                           patience=train_cfg.patience)
        state = EpochState(last_checkpoint(Path(out_dir), depth))
        stop = StopOnRequest(f"depth {depth} (seed {train_cfg.seed})", max(epochs, train_cfg.max_epochs))
        with _quiet_lightning():
            # One progress bar at a time: rich's live display is the process's one console (two trainings in
            # threads broke it: IndexError in Console.clear_live), and bars from processes would interleave.
            trainer = _build_trainer(train_cfg, [stop, early_stopping, checkpoint, state, *callbacks], epochs,
                                     out_dir, logger, progress_bars(progress, concurrent), batches)
            trainer.fit(module, datamodule=data, ckpt_path=resume_from, weights_only=True)
        if not checkpoint.best_model_path:
            raise RuntimeError(f"depth {depth}: no checkpoint was saved; was {MONITOR!r} ever logged?")
        scores = _best_scores(network, screen, checkpoint.best_model_path, tokenizer, frame, labels)
        if start_from is not None and (started := _start_if_not_beaten(network, start_from, scores, tokenizer,
                                                                         frame, labels)) is not None:
            scores = started
    return TrainedCandidate(
        depth=depth, train_seconds=state.train_seconds, epochs=trainer.current_epoch, median_length=median_length,
        finished=early_stopping.stopped_epoch > 0 or trainer.current_epoch >= train_cfg.max_epochs,
        checkpoint=state.path, history=state.history, **scores,
    )


def _probes(network: Network, n_classes: int, seed: int) -> LayerProbes:
    """A probe on each layer below the network's last, initialised apart: the network's random stream is left as it
    was, so a candidate trains the same with and without them."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return LayerProbes(network, n_classes)


def _data_module(frame: pd.DataFrame, tokenizer: Tokenizer, labels: list[str], network: Network,
                 train_cfg: TrainConfig, soft_labels: SoftLabels | None) -> TextDataModule:
    """The splits encoded for the network (with a student's soft labels and its transfer set's texts), set up; a
    frame without test rows refused."""
    unlabeled = (None if soft_labels is None or not soft_labels.unlabeled_texts
                 else (soft_labels.unlabeled_texts, soft_labels.unlabeled_logits))
    data = TextDataModule(frame, tokenizer, labels, network.cfg.max_len, train_cfg.batch_size, train_cfg.seed,
                          pad_id=network.cfg.pad_id, teacher_logits=None if soft_labels is None else soft_labels.logits,
                          unlabeled=unlabeled)
    data.setup()
    if len(data.splits["test"]) == 0:
        raise ValueError("the 'test' split is empty; test metrics need test rows")
    return data


def _start_if_not_beaten(network: Network, start_from: Path, best: dict[str, Any], tokenizer: Tokenizer,
                         frame: pd.DataFrame, labels: list[str]) -> dict[str, Any] | None:
    """The starting weights' scores, restored into `network`, when no epoch trained from them beat them on the
    validation rows (by MONITOR's metric; a tie keeps the start): a student's early stopping counts where it started,
    so it never ends below the twin it started from there. None (the best epoch's weights left in place) otherwise."""
    trained = {key: value.detach().clone() for key, value in network.state_dict().items()}
    network.load_state_dict(torch.load(Path(start_from) / WEIGHTS_FILE, map_location="cpu", weights_only=True))
    started = _scores(network, tokenizer, frame, labels)
    metric = MONITOR.removeprefix("val/")
    if started["metrics"][metric] >= best["metrics"][metric]:
        return {**best, **started, "kept_start": True}
    network.load_state_dict(trained)
    return None


def _best_scores(network: Network, screen: LayerProbes | None, best: str, tokenizer: Tokenizer,
                 frame: pd.DataFrame, labels: list[str]) -> dict[str, Any]:
    """The best epoch's weights restored, and what they score on validation and test (and each probe's)."""
    restore_network_weights(network, best)
    scores = _scores(network, tokenizer, frame, labels)
    if screen is not None:
        restore_network_weights(screen, best, prefix="probes.")
        scores |= _probe_results(TextClassifier(network, tokenizer, labels), screen, frame, labels)
    return scores


def _scores(network: Network, tokenizer: Tokenizer, frame: pd.DataFrame, labels: list[str]) -> dict[str, Any]:
    """What `network` as it is scores on validation and test, as served."""
    classifier = TextClassifier(network, tokenizer, labels)  # CPU, eval mode: as served from the registry
    (val_metrics, val_true, val_predicted), (test_metrics, test_true, test_predicted) = (
        _split_metrics(classifier, frame, labels, split) for split in ("val", "test")
    )
    return {"network": classifier.network, "metrics": val_metrics, "test_metrics": test_metrics,
            "val_true": val_true, "val_predicted": val_predicted, "test_true": test_true,
            "test_predicted": test_predicted}


class StopOnRequest(L.Callback):
    """End training at the next batch once `STOP` is requested; `name` says which candidate it was."""

    def __init__(self, name: str, max_epochs: int, stop: StopRequest = STOP) -> None:
        self.name, self.max_epochs, self.stop = name, max_epochs, stop

    def on_train_batch_end(self, trainer: L.Trainer, *args: Any) -> None:
        self.stop.raise_if_requested(f"training {self.name} at epoch {trainer.current_epoch + 1} of {self.max_epochs}")

    def on_validation_batch_end(self, trainer: L.Trainer, *args: Any) -> None:
        self.on_train_batch_end(trainer)


def last_checkpoint(out_dir: Path, depth: int) -> Path:
    """Where `train_candidate` keeps the full training state after the latest finished epoch."""
    return Path(out_dir) / f"depth{depth}-last.ckpt"


def checkpoint_epochs(path: Path) -> int | None:
    """Epochs done in a checkpoint written by `train_candidate`, or None if it is missing or unreadable
    (a write cut short by a crash cannot happen, see EpochState, but a disk can still lose a file)."""
    return _saved(path, "epochs")


def checkpoint_threads(path: Path | None) -> int | None:
    """The CPU threads the training in a checkpoint ran on (None: no checkpoint, or one from before they were
    kept): a resumed training takes the same, so it adds in the same order as the training it continues."""
    return None if path is None else _saved(path, "threads")


def _saved(path: Path, key: str) -> int | None:
    """A whole number kept by EpochState in a checkpoint, or None if the file or the number is missing."""
    try:
        return int(torch.load(path, map_location="cpu", weights_only=True)[EpochState.KEY][key])
    except (OSError, RuntimeError, KeyError, EOFError, ValueError):
        return None


class EpochState(Checkpoint):
    """After every epoch (its validation, early stopping and best checkpoint included) write the full
    training state to `path`, atomically, so a run killed mid-candidate resumes from its last
    finished epoch. Over every resumed part of the run it also counts training seconds and keeps the
    validation metric of each epoch (the history that tells a converged candidate from a rising one).

    A `Checkpoint` subclass, so Lightning runs it after the other callbacks and after the best-weights
    ModelCheckpoint listed before it, which also acts at the end of the epoch: the state it writes then
    holds this epoch's best checkpoint (without that, a resumed run could crown a tying later epoch).
    """

    KEY = "depthfinder"

    def __init__(self, path: Path) -> None:
        self.path = path
        self.train_seconds = 0.0
        self.history: list[float] = []  # MONITOR after each epoch
        self._epoch_started = 0.0

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._epoch_started = time.perf_counter()

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.train_seconds += time.perf_counter() - self._epoch_started
        self.history.append(float(trainer.callback_metrics[MONITOR]))
        with written_whole(self.path) as partial:
            trainer.save_checkpoint(partial, weights_only=False)

    def on_save_checkpoint(self, trainer: L.Trainer, pl_module: L.LightningModule, checkpoint: dict) -> None:
        checkpoint[self.KEY] = {"epochs": trainer.current_epoch + 1, "train_seconds": self.train_seconds,
                                "history": self.history, "threads": torch.get_num_threads()}

    def on_load_checkpoint(self, trainer: L.Trainer, pl_module: L.LightningModule, checkpoint: dict) -> None:
        state = checkpoint.get(self.KEY, {})
        self.train_seconds = float(state.get("train_seconds", 0.0))
        self.history = [float(value) for value in state.get("history", [])]


def restore_network_weights(network: torch.nn.Module, checkpoint_path: str | Path, prefix: str = "network.") -> None:
    """Load the `network.*` weights (or another prefix's: `probes.`) of a DepthClassifier checkpoint into `network`."""
    state = torch.load(checkpoint_path, map_location="cpu", weights_only=True)["state_dict"]
    weights = {key.removeprefix(prefix): value for key, value in state.items() if key.startswith(prefix)}
    network.load_state_dict(weights)


def _probe_results(classifier: TextClassifier, screen: LayerProbes, frame: pd.DataFrame, labels: list[str]) -> dict:
    """Each probe's class ids on the validation rows and its validation and test metrics, layer 1 first."""
    results: dict[str, list] = {"probe_val_predicted": [], "probe_metrics": [], "probe_test_metrics": []}
    screen.eval()
    for split, key in (("val", "probe_metrics"), ("test", "probe_test_metrics")):
        rows = frame[frame["split"] == split]
        truths = rows["label"].astype(str).tolist()
        predicted = probe_predictions(classifier, screen, rows["text"].astype(str).tolist())  # (layers, n)
        results[key] = [classification_metrics(truths, [labels[k] for k in layer]) for layer in predicted]
        if split == "val":
            results["probe_val_predicted"] = [layer.astype(np.int32) for layer in predicted]
    return results


def probe_predictions(classifier: TextClassifier, screen: LayerProbes, texts: list[str], batch_size: int = 64
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


def _classifier(
    network: Network,
    frame: pd.DataFrame,
    labels: list[str],
    train_cfg: TrainConfig,
    class_weights: bool,
    total_steps: int,
    restart_steps: int = 0,
    probes: LayerProbes | None = None,
    soft_labels: SoftLabels | None = None,
) -> DepthClassifier:
    """The LightningModule around `network`, with inverse-frequency class weights if asked."""
    train_labels = frame.loc[frame["split"] == "train", "label"].astype(str).tolist()
    return DepthClassifier(
        network,
        n_classes=len(labels),
        learning_rate=train_cfg.learning_rate,
        weight_decay=train_cfg.weight_decay,
        warmup_fraction=train_cfg.warmup_fraction,
        class_weights=inverse_frequency_weights(train_labels, labels) if class_weights else None,
        total_steps=total_steps,
        restart_steps=restart_steps,
        probes=probes,
        **({} if soft_labels is None else {"distill_temperature": soft_labels.temperature,
                                           "distill_alpha": soft_labels.alpha}),
    )


def _best_checkpoint(out_dir: Path, depth: int, keep_earlier: bool) -> ModelCheckpoint:
    """Keep only the best-validation weights of this depth in out_dir; a fresh run first removes
    older ones, a resumed run keeps the best so far (the callback's restored state points to it)."""
    for stale in [] if keep_earlier else out_dir.glob(f"depth{depth}-*.ckpt"):
        stale.unlink()
    return ModelCheckpoint(
        dirpath=out_dir, filename=f"depth{depth}-best-{{epoch}}", monitor=MONITOR, mode="max",
        save_top_k=1, save_weights_only=True,
    )


class EarlyStoppingFrom(EarlyStopping):
    """Early stopping that may end a run only once `min_epochs` epochs are done.

    Patience counts from the best epoch as usual, the epochs before `min_epochs` included.
    (Lightning's `Trainer(min_epochs=...)` instead remembers a stop signalled earlier and
    acts on it at `min_epochs`, even if the metric has improved since.)
    """

    def __init__(self, min_epochs: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.min_epochs = min_epochs

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        with self._not_before_min_epochs(trainer):
            super().on_train_epoch_end(trainer, pl_module)

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        with self._not_before_min_epochs(trainer):
            super().on_validation_end(trainer, pl_module)

    @contextlib.contextmanager
    def _not_before_min_epochs(self, trainer: L.Trainer) -> Iterator[None]:
        """Undo a stop this callback signals before `min_epochs` epochs are done."""
        should_stop = trainer.should_stop
        yield
        if trainer.current_epoch + 1 < self.min_epochs:
            trainer.should_stop = should_stop


def progress_bars(progress: bool, concurrent: int) -> bool:
    """Whether Lightning draws its progress bars: asked for, one training at a time (rich's live display is the
    process's one console), and stderr a terminal: written to a file or a pipe, a bar's redraws land as wrapped
    fragments, and the epoch's one line in the log (tasks.train) says the same."""
    return progress and concurrent == 1 and sys.stderr.isatty()


def _build_trainer(
    train_cfg: TrainConfig,
    callbacks: list[L.Callback],
    epochs: int,
    out_dir: Path,
    logger: Logger | None,
    progress: bool,
    train_batches: int,
) -> L.Trainer:
    """A single-device Trainer that early-stops and keeps the best checkpoint."""
    on_cpu = _on_cpu(train_cfg.accelerator)
    return L.Trainer(
        max_epochs=epochs,
        accelerator=train_cfg.accelerator,
        devices=1,  # never DDP behind the caller's back on a multi-GPU machine
        precision=resolve_precision(train_cfg.precision, train_cfg.accelerator),
        gradient_clip_val=train_cfg.grad_clip,
        callbacks=callbacks,
        logger=logger if logger is not None else False,
        default_root_dir=out_dir,
        enable_progress_bar=progress,
        enable_model_summary=False,
        # Deterministic CPU kernels cost next to nothing. On CUDA determinism means slower
        # kernels for some ops (attention backward) and a fixed cuBLAS workspace, so there
        # we rely on seeding alone.
        deterministic=True if on_cpu else None,
        log_every_n_steps=max(1, min(10, train_batches)),
    )


def resolve_precision(precision: str, accelerator: str) -> str:
    """Lightning's precision for a TrainConfig `precision`: "auto" becomes "bf16-mixed" where the
    device computes in bf16 natively (a CUDA GPU with bf16; a CPU with AVX512-BF16 or AMX
    tiles), else "32-true". Other values pass through unchanged."""
    if precision != "auto":
        return precision
    if not _on_cpu(accelerator):
        return "bf16-mixed" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "32-true"
    return "bf16-mixed" if cpu_has_native_bf16() else "32-true"


def cpu_has_native_bf16() -> bool:
    """Whether this CPU has bf16 instructions (AVX512-BF16 or AMX); without them bf16 is emulated and slow."""
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(getattr(torch.cpu, name, lambda: False)() for name in checks)


def _on_cpu(accelerator: str) -> bool:
    """Whether a Trainer with this accelerator runs on the CPU."""
    return accelerator == "cpu" or (accelerator == "auto" and not torch.cuda.is_available())


def _split_metrics(
    classifier: TextClassifier, frame: pd.DataFrame, labels: list[str], split: str
) -> tuple[dict[str, float], np.ndarray, np.ndarray]:
    """Quality on one split, from the labels the served model would predict; and the true and predicted
    class ids of its rows."""
    rows = frame[frame["split"] == split]
    true = rows["label"].astype(str).tolist()
    predicted = classifier.predict(rows["text"].astype(str).tolist())
    index = {label: i for i, label in enumerate(labels)}
    ids = (np.array([index[label] for label in values], dtype=np.int32) for values in (true, predicted))
    return classification_metrics(true, predicted), *ids


@contextlib.contextmanager
def _quiet_lightning() -> Iterator[None]:
    """Hide Lightning's routine notices for the duration; restore global torch state after."""
    deterministic = torch.are_deterministic_algorithms_enabled()
    deterministic_warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    levels = {name: logging.getLogger(name).level for name in _CHATTY_LOGGERS}
    for name in _CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    # Permanent, targeted filters (catch_warnings is not thread-safe). Loaders use no worker
    # processes on purpose: tokenised batches are cheap to collate. A CPU run on a GPU machine
    # was asked for. Other files in out_dir are the caller's (stale checkpoints of the same
    # depth are removed before training).
    warnings.filterwarnings("ignore", message=r".*does not have many workers.*")
    warnings.filterwarnings("ignore", message=r"GPU available but not used.*")
    warnings.filterwarnings("ignore", message=r"Checkpoint directory .* exists and is not empty.*")
    # Lightning 2.6 still builds LeafSpec, which torch 2.13 deprecates: not ours to fix.
    warnings.filterwarnings("ignore", message=r".*isinstance\(treespec, LeafSpec\)", category=FutureWarning)
    try:
        yield
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
        torch.use_deterministic_algorithms(deterministic, warn_only=deterministic_warn_only)
