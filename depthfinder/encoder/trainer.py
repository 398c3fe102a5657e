"""The Lightning trainer a candidate trains in (encoder.training): the callbacks that stop it on request, stop it
early only after its minimum epochs and write its whole state after every epoch; where that state lies and what it
holds (epochs done, the threads it ran on); the best weights restored from a checkpoint; the precision a device
supports; and progress bars and Lightning's logs kept to what a person reads."""

from __future__ import annotations

import contextlib
import logging
import sys
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import lightning as L
import torch
from lightning.pytorch.callbacks import Checkpoint, EarlyStopping, ModelCheckpoint

from depthfinder.runtime.files import written_whole
from depthfinder.runtime.interrupt import STOP, StopRequest

if TYPE_CHECKING:
    from collections.abc import Iterator

    from lightning.pytorch.loggers import Logger

    from depthfinder.encoder.config import TrainConfig

MONITOR = "val/macro_f1"
# Lightning loggers whose INFO lines (GPU/TPU available, CUDA_VISIBLE_DEVICES, ...) a
# normal run does not need; warnings still come through.
_CHATTY_LOGGERS = ("lightning.pytorch.utilities.rank_zero", "lightning.pytorch.accelerators.cuda")


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


def best_checkpoint(out_dir: Path, depth: int, keep_earlier: bool) -> ModelCheckpoint:
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


def build_trainer(
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


@contextlib.contextmanager
def quiet_lightning() -> Iterator[None]:
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
