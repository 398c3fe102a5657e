"""MLflow runs of a sweep: one parent run per flow run, one child run per depth.

The active MLflow run is thread-local, so every call names its run id explicitly.
"""

from __future__ import annotations

import functools
import hashlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mlflow
from mlflow import MlflowClient
from mlflow.entities import Metric, Param, RunTag

PARENT_TAG = "mlflow.parentRunId"
RUN_NAME_TAG = "mlflow.runName"
# The packages whose source decides what a run computes.
SOURCE_PACKAGES = ("encoder", "expectations", "flows", "tasks")


@dataclass(frozen=True)
class SweepRun:
    """Where a sweep's parent run lives; small enough to pass to tasks."""

    tracking_uri: str
    experiment_id: str
    run_id: str

    @property
    def client(self) -> MlflowClient:
        return MlflowClient(tracking_uri=self.tracking_uri)


def resolve_tracking_uri(uri: str) -> str:
    """Pin a relative SQLite path to the working directory of now.

    MLflow caches one store per URI string, so a relative `sqlite:///mlflow.db` would keep
    writing to the first directory it was opened in after the process changes directory.
    """
    prefix = "sqlite:///"
    if uri.startswith(prefix) and not uri.startswith(prefix + "/"):
        return prefix + str(Path(uri.removeprefix(prefix)).resolve())
    return uri


def _artifact_root(tracking_uri: str) -> str | None:
    """Artifacts of a SQLite store go beside the database (`mlruns/`), not into the working directory."""
    prefix = "sqlite:///"
    if not tracking_uri.startswith(prefix):
        return None
    return (Path(tracking_uri.removeprefix(prefix)).parent / "mlruns").as_uri()


def start_sweep_run(
    tracking_uri: str, experiment: str, run_name: str, params: dict[str, Any], tags: dict[str, str]
) -> SweepRun:
    """Create the parent run of a sweep, with the flattened config as params."""
    tracking_uri = resolve_tracking_uri(tracking_uri)
    mlflow.set_tracking_uri(tracking_uri)
    client = MlflowClient(tracking_uri=tracking_uri)
    found = client.get_experiment_by_name(experiment)
    experiment_id = found.experiment_id if found else client.create_experiment(experiment, _artifact_root(tracking_uri))
    run = client.create_run(experiment_id, tags={RUN_NAME_TAG: run_name, **tags})
    sweep = SweepRun(tracking_uri, experiment_id, run.info.run_id)
    log_params(sweep.client, sweep.run_id, params)
    return sweep


def start_child_run(sweep: SweepRun, run_name: str, tags: dict[str, str]) -> str:
    """Create a child run under the sweep's parent run and return its id."""
    tags = {PARENT_TAG: sweep.run_id, RUN_NAME_TAG: run_name, **tags}
    return sweep.client.create_run(sweep.experiment_id, tags=tags).info.run_id


def log_params(client: MlflowClient, run_id: str, params: dict[str, Any]) -> None:
    client.log_batch(run_id, params=[Param(k, str(v)) for k, v in params.items()])


def log_metrics(client: MlflowClient, run_id: str, metrics: dict[str, float | None]) -> None:
    timestamp = int(time.time() * 1000)
    rows = [Metric(k, float(v), timestamp, 0) for k, v in metrics.items() if v is not None]
    client.log_batch(run_id, metrics=rows)


def set_tags(client: MlflowClient, run_id: str, tags: dict[str, str]) -> None:
    client.log_batch(run_id, tags=[RunTag(k, str(v)) for k, v in tags.items()])


def flatten(prefix: str, values: dict[str, Any]) -> dict[str, Any]:
    """`{"a": {"b": 1}}` -> `{"prefix.a.b": 1}`, for params and metrics."""
    flat: dict[str, Any] = {}
    for key, value in values.items():
        name = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict):
            flat.update(flatten(name, value))
        else:
            flat[name] = value
    return flat


@functools.cache
def code_version() -> str:
    """The installed depthfinder version and a digest of its source, for tags and cache keys.

    The digest changes with any edit to the code (the version number alone does not), so a
    changed recipe neither reuses old cached candidates nor skips a nightly retrain.
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        release = version("depthfinder")
    except PackageNotFoundError:
        release = "unknown"
    return f"{release}+{source_digest(Path(__file__).resolve().parents[1])}"


def source_digest(root: Path) -> str:
    """A short digest of the names and contents of the Python files of SOURCE_PACKAGES under root."""
    digest = hashlib.sha256()
    for package in SOURCE_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def record_cached_candidate(sweep: SweepRun, candidate: dict, run_id: str | None = None) -> dict:
    """Record a candidate reused from an earlier sweep in this sweep's child run of it (`run_id`, or
    a new one); return the candidate, marked cached."""
    depth, seed = candidate["depth"], candidate.get("seed")
    tags = {"depthfinder.status": "cached", "depthfinder.source_run_id": candidate["mlflow_run_id"],
            "depthfinder.epochs": str(candidate["epochs"])}
    if run_id is None:
        tags |= {"depthfinder.depth": str(depth), "depthfinder.seed": str(seed)}
        run_id = start_child_run(sweep, f"depth-{depth}-seed-{seed}", tags)
    else:
        set_tags(sweep.client, run_id, tags)
    figures = {"best_val": candidate["metrics"], "test": candidate["test_metrics"], "cost": candidate["cost"]}
    log_metrics(sweep.client, run_id, flatten("", figures))
    sweep.client.set_terminated(run_id, "FINISHED")
    return candidate | {"status": "cached", "mlflow_run_id": run_id, "source_run_id": candidate["mlflow_run_id"]}
