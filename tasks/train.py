"""Tasks of the depth sweep: fit the tokenizer once, train and measure one (depth, seed).

A candidate is cached by what decides it: data hash, model and training settings, class
weights, depth, seed and code version, and the epochs it was trained to (plus the work
folder, where its files live), so a sweep that died half-way trains only what had not
finished when it runs again. A successive-halving rung continues a candidate from the
previous rung's checkpoint, which ends exactly where training straight to that budget
would, so a result at a budget is the same however it was reached.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pandas as pd
from lightning.pytorch.callbacks import Callback
from prefect import get_run_logger, task
from prefect.cache_policies import NONE

from encoder.config import ModelConfig, TrainConfig
from tasks.data import TRAINING_COLUMNS, PreparedData
from tasks.tracking import SweepRun, code_version, flatten, log_metrics, log_params, set_tags, start_child_run


class EpochLog(Callback):
    """One line per epoch in the task's Prefect log (the UI shows it; progress bars stay in the terminal)."""

    def __init__(self, name: str, max_epochs: int) -> None:
        self.name, self.max_epochs = name, max_epochs

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:  # after this epoch's validation
        figures = {key: float(value) for key, value in trainer.callback_metrics.items()}
        keys = [key for key in ("train/loss", "val/loss", "val/macro_f1") if key in figures]
        shown = ", ".join(f"{key} {figures[key]:.3f}" for key in keys)
        get_run_logger().info("%s epoch %d/%d: %s", self.name, trainer.current_epoch + 1, self.max_epochs, shown)


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


@task(name="train_tokenizer", cache_policy=NONE)
def fit_tokenizer(dataset: PreparedData, model: ModelConfig, workdir: Path) -> str:
    """Train WordPiece on the train split only; reuse the one already fitted to this data and vocabulary."""
    from encoder.tokenizer import train_tokenizer

    path = Path(workdir) / "tokenizers" / f"{dataset.data_hash}-{model.vocab_size}.json"
    if path.exists():
        return str(path)
    frame = pd.read_parquet(dataset.path, columns=TRAINING_COLUMNS)
    tokenizer = train_tokenizer(frame.loc[frame["split"] == "train", "text"], model.vocab_size)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    tokenizer.save(str(partial))
    partial.replace(path)
    return str(path)


def candidate_key(
    dataset: PreparedData, model: ModelConfig, train: TrainConfig, class_weights: bool, depth: int, seed: int
) -> str:
    """What decides a trained candidate, as a short hash."""
    return _digest({
        "data": dataset.data_hash,
        "model": model.model_dump(mode="json"),
        "train": train.model_dump(mode="json", exclude={"seed"}),
        "class_weights": class_weights, "depth": depth, "seed": seed, "code": code_version(),
    })


def _cache_key(context: Any, parameters: dict[str, Any]) -> str:
    """Prefect's cache key of train_depth: the candidate key and the work folder holding its bundle."""
    names = ("dataset", "model", "train", "class_weights", "depth", "seed")
    key = candidate_key(*(parameters[name] for name in names))
    folder = _digest(str(Path(parameters["workdir"]).resolve()))
    epochs = parameters.get("epochs") or parameters["train"].max_epochs
    return f"train-depth-{parameters['depth']}-seed-{parameters['seed']}-epochs-{epochs}-{key}-{folder}"


@task(
    name="train_depth",
    task_run_name="train-depth-{depth}-seed-{seed}",
    cache_key_fn=_cache_key,
    persist_result=True,
)
def train_depth(
    dataset: PreparedData,
    tokenizer_path: str,
    depth: int,
    seed: int,
    model: ModelConfig,
    train: TrainConfig,
    class_weights: bool,
    sweep: SweepRun,
    workdir: Path,
    epochs: int | None = None,
    previous: dict | None = None,
) -> dict:
    """Train one (depth, seed) to `epochs` (None: to the end) in its MLflow child run, continuing
    `previous` (this candidate's result at an earlier rung) if given; return metrics, cost and paths."""
    from lightning.pytorch.loggers import MLFlowLogger
    from tokenizers import Tokenizer

    from encoder.bundle import save_bundle
    from encoder.cost import measure_cost
    from encoder.training import train_candidate

    client = sweep.client
    train = train.model_copy(update={"seed": seed})
    epochs = epochs or train.max_epochs
    if previous is not None:
        run_id = previous["mlflow_run_id"]
    else:
        tags = {"depthfinder.depth": str(depth), "depthfinder.seed": str(seed)}
        run_id = start_child_run(sweep, f"depth-{depth}-seed-{seed}", tags)
        log_params(client, run_id, {"depth": depth, "seed": seed, "class_weights": class_weights})
    resume = Path(previous["checkpoint"]) if previous is not None else None
    if resume is not None and not resume.exists():  # cleaned since: training from scratch ends the same
        resume, previous = None, None
    try:
        tokenizer = Tokenizer.from_file(tokenizer_path)
        frame = pd.read_parquet(dataset.path, columns=TRAINING_COLUMNS)
        key = candidate_key(dataset, model, train, class_weights, depth, seed)
        candidate_dir = Path(workdir) / "candidates" / f"depth-{depth}-seed-{seed}-{key}"
        trained = train_candidate(
            frame,
            dataset.labels,
            tokenizer,
            depth,
            model,
            train,
            class_weights=class_weights,
            out_dir=candidate_dir / "checkpoints",
            logger=MLFlowLogger(tracking_uri=sweep.tracking_uri, run_id=run_id),
            epochs=epochs,
            resume_from=resume,
            callbacks=[EpochLog(f"depth {depth} seed {seed}", train.max_epochs)],
        )
        seconds = trained.train_seconds + (previous["cost"]["train_seconds"] if previous is not None else 0.0)
        cost = measure_cost(trained.network, trained.median_length) | {"train_seconds": seconds}
        bundle = save_bundle(candidate_dir / f"bundle-epochs-{epochs}", trained.network, tokenizer, dataset.labels)
        result = {"metrics": trained.metrics, "test_metrics": trained.test_metrics, "cost": cost}
        log_metrics(
            client, run_id, flatten("", {"best_val": trained.metrics, "test": trained.test_metrics, "cost": cost})
        )
        set_tags(client, run_id, {"depthfinder.status": "trained", "depthfinder.epochs": str(trained.epochs)})
        client.set_terminated(run_id, "FINISHED")
    except BaseException:
        set_tags(client, run_id, {"depthfinder.status": "failed"})
        client.set_terminated(run_id, "FAILED")
        raise
    return {
        "depth": depth,
        "seed": seed,
        "status": "trained",
        **result,
        "epochs": trained.epochs,
        "finished": trained.finished,
        "mlflow_run_id": run_id,
        "bundle": str(bundle),
        "checkpoint": str(trained.checkpoint),
    }
