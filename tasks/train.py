"""Tasks of the depth sweep: fit the tokenizer once, train and measure one depth."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from prefect import task
from prefect.cache_policies import NONE

from encoder.config import ModelConfig, TrainConfig
from tasks.data import TRAINING_COLUMNS, PreparedData
from tasks.tracking import SweepRun, flatten, log_metrics, log_params, set_tags, start_child_run


@task(name="train_tokenizer", cache_policy=NONE)
def fit_tokenizer(dataset: PreparedData, model: ModelConfig, out_dir: Path) -> str:
    """Train WordPiece on the train split only and save it as tokenizer.json."""
    from encoder.tokenizer import train_tokenizer

    frame = pd.read_parquet(dataset.path, columns=TRAINING_COLUMNS)
    tokenizer = train_tokenizer(frame.loc[frame["split"] == "train", "text"], model.vocab_size)
    path = Path(out_dir) / "tokenizer.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(path))
    return str(path)


@task(name="train_depth", task_run_name="train-depth-{depth}-seed-{seed}", cache_policy=NONE)
def train_depth(
    dataset: PreparedData,
    tokenizer_path: str,
    depth: int,
    seed: int,
    model: ModelConfig,
    train: TrainConfig,
    class_weights: bool,
    sweep: SweepRun,
    out_dir: Path,
) -> dict:
    """Train one (depth, seed) in its own MLflow child run; return its metrics, cost and bundle path."""
    from lightning.pytorch.loggers import MLFlowLogger
    from tokenizers import Tokenizer

    from encoder.bundle import save_bundle
    from encoder.cost import measure_cost
    from encoder.training import train_candidate

    client = sweep.client
    train = train.model_copy(update={"seed": seed})
    run_id = start_child_run(
        sweep, f"depth-{depth}-seed-{seed}", {"depthfinder.depth": str(depth), "depthfinder.seed": str(seed)}
    )
    try:
        log_params(client, run_id, {"depth": depth, "seed": seed, "class_weights": class_weights})
        tokenizer = Tokenizer.from_file(tokenizer_path)
        frame = pd.read_parquet(dataset.path, columns=TRAINING_COLUMNS)
        candidate_dir = Path(out_dir) / f"depth-{depth}-seed-{seed}"
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
        )
        cost = measure_cost(trained.network, trained.median_length) | {"train_seconds": trained.train_seconds}
        bundle = save_bundle(candidate_dir / "bundle", trained.network, tokenizer, dataset.labels)
        result = {"metrics": trained.metrics, "test_metrics": trained.test_metrics, "cost": cost}
        log_metrics(
            client, run_id, flatten("", {"best_val": trained.metrics, "test": trained.test_metrics, "cost": cost})
        )
        set_tags(client, run_id, {"depthfinder.status": "trained"})
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
        "mlflow_run_id": run_id,
        "bundle": str(bundle),
    }
