"""MLflow runs of a sweep: one parent run per flow run, one child run per depth.

The active MLflow run is thread-local, so every call names its run id explicitly.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import shutil
import tempfile
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mlflow
from mlflow import MlflowClient
from mlflow.entities import Metric, Param, RunTag

from depthfinder.runtime.credentials import store_uri
from depthfinder.runtime.interrupt import Interrupted, StoppedOnPurpose
from depthfinder.runtime.liveness import ProcessIdentity, this_process
from depthfinder.selection.candidate import DISTILLED, Candidate, arm_label
from depthfinder.tracking.store import SQLITE, resolve_tracking_uri

# Where a child run keeps each epoch's figures as curves (`by_epoch/val/macro_f1`); its own `val/<metric>` is the
# best epoch's, the one the decision uses.
EPOCH_CURVES = "by_epoch/"
PARENT_TAG = "mlflow.parentRunId"
RUN_NAME_TAG = "mlflow.runName"
MODEL_TAG = "depthfinder.model_name"
PROCESS_TAG = "depthfinder.process"  # the process that runs it (pid, host, start), to tell an abandoned run
# Where a registered version's run keeps the table it was trained on: data/<table_hash>.parquet.
TABLE_ARTIFACTS = "data"
# The packages whose source decides what a run computes.
SOURCE_PACKAGES = ("encoder", "evidence", "expectations", "flows", "runtime", "selection", "tasks", "tracking")
# The depthfinder package (in a checkout or installed) whose floors the code version digests.
SOURCE_ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class SweepRun:
    """Where a sweep's parent run lives; small enough to pass to tasks."""

    tracking_uri: str  # as it may be shown: credentials are never in it (runtime.credentials)
    experiment_id: str
    run_id: str
    model_name: str = ""
    night: str = ""  # which night its child runs belong to, in their names: `2026-12-01 · 7f3a`

    def child_name(self, label: str, seed: int) -> str:
        """`depth-2-seed-1 · 2026-12-01 · 7f3a`: a candidate's child run (an arm's `label`), and the night it belongs
        to; a student's teacher as the logs name it: `depth-1-seed-1, distilled from depth 6`."""
        arm, *teacher = label.split(DISTILLED, 1)
        return (f"{arm.replace(' ', '-')}-seed-{seed}" + "".join(f"{DISTILLED}{name}" for name in teacher)
                + (f" · {self.night}" if self.night else ""))

    @property
    def client(self) -> MlflowClient:
        return client_of(self.tracking_uri)


def client_of(tracking_uri: str) -> MlflowClient:
    """A client of the store `tracking_uri` names, with the credentials this process holds for it."""
    return MlflowClient(tracking_uri=store_uri(resolve_tracking_uri(tracking_uri)))


def use_store(tracking_uri: str) -> None:
    """Point MLflow's fluent API (mlflow.start_run, log_model) at `tracking_uri`, credentials included."""
    mlflow.set_tracking_uri(store_uri(resolve_tracking_uri(tracking_uri)))


def _artifact_root(tracking_uri: str) -> str | None:
    """Artifacts of a SQLite store go beside the database (`mlruns/`), not into the working directory."""
    if not tracking_uri.startswith(SQLITE):
        return None
    return (Path(tracking_uri.removeprefix(SQLITE)).parent / "mlruns").as_uri()


def experiment_id_of(client: MlflowClient, experiment: str) -> str:
    """The id of the experiment named `experiment`, created (artifacts beside a SQLite store) if missing."""
    found = client.get_experiment_by_name(experiment)
    return found.experiment_id if found else client.create_experiment(experiment, _artifact_root(client.tracking_uri))


def create_sweep_run(
    tracking_uri: str, experiment: str, model_name: str, run_name: str, params: dict[str, Any], tags: dict[str, str],
    night: str = "",
) -> SweepRun:
    """Create the parent run of a sweep of `model_name`, with the flattened config as params.

    The sweep's runs are tagged with the model and the process that runs them, so that a later
    retrain of the model can end them if that process dies (end_abandoned_runs).
    """
    tracking_uri = resolve_tracking_uri(tracking_uri)
    use_store(tracking_uri)
    client = client_of(tracking_uri)
    experiment_id = experiment_id_of(client, experiment)
    tags = {RUN_NAME_TAG: run_name, MODEL_TAG: model_name, **_process_tag(), **tags}
    sweep = SweepRun(tracking_uri, experiment_id, client.create_run(experiment_id, tags=tags).info.run_id, model_name,
                     night)
    log_params(sweep.client, sweep.run_id, params)
    return sweep


def log_dataset(sweep: SweepRun, table_path: str, name: str, digest: str) -> None:
    """The run's data as MLflow datasets (`mlflow.log_input`'s record: the runs list's Dataset column), one per split,
    each `name` with the training data's `digest` and its rows, its context the split. `table_path` is the prepared
    table (text, label, split), a local file."""
    from mlflow.entities import DatasetInput, InputTag

    from depthfinder.expectations.table.shape import read_inputs

    table = read_inputs(table_path, "label", "split")
    inputs = []
    for split, part in table.groupby("split", sort=False):
        with warnings.catch_warnings():  # "the source can be interpreted in multiple ways": a local file, either way
            warnings.simplefilter("ignore", UserWarning)
            dataset = mlflow.data.from_pandas(part.reset_index(drop=True), source=str(Path(table_path).resolve()),
                                              targets="label", name=name, digest=f"{digest[:10]}-{split}")
        inputs.append(DatasetInput(dataset._to_mlflow_entity(),
                                   tags=[InputTag(key="mlflow.data.context", value=str(split))]))
    sweep.client.log_inputs(sweep.run_id, datasets=inputs)


def start_child_run(sweep: SweepRun, run_name: str, tags: dict[str, str]) -> str:
    """Create a child run under the sweep's parent run and return its id."""
    tags = {PARENT_TAG: sweep.run_id, RUN_NAME_TAG: run_name, MODEL_TAG: sweep.model_name, **_process_tag(), **tags}
    return sweep.client.create_run(sweep.experiment_id, tags=tags).info.run_id


def _process_tag() -> dict[str, str]:
    return {PROCESS_TAG: this_process().describe()}


def _process_of(tags: dict[str, str]) -> ProcessIdentity | None:
    """The process a run's tag names: as `describe` writes it, or as `host/pid/start` (older runs)."""
    text = tags.get(PROCESS_TAG, "")
    if (identity := ProcessIdentity.parse(text)) is not None:
        return identity
    try:
        host, pid, started = text.rsplit("/", 2)
        return ProcessIdentity(host, int(pid), float(started))
    except ValueError:
        return None


def end_status(exc: BaseException | None) -> str:
    """The MLflow status a run ends with: FINISHED, also for a night stopped on purpose (StoppedOnPurpose: MLflow's
    lists mark FAILED as a crash); KILLED when the process was asked to stop (a training thread's Interrupted, or
    what is not an Exception: KeyboardInterrupt for SIGINT, Prefect's TerminationSignal for SIGTERM); FAILED
    otherwise."""
    if exc is None or isinstance(exc, StoppedOnPurpose):
        return "FINISHED"
    return "KILLED" if isinstance(exc, Interrupted) or not isinstance(exc, Exception) else "FAILED"


@contextlib.contextmanager
def ending(client: MlflowClient, run_id: str) -> Iterator[None]:
    """End the run `run_id` with a status that says how the block ended: FINISHED (or stopped on purpose), KILLED or
    FAILED."""
    try:
        yield
    except BaseException as exc:
        try:
            client.set_terminated(run_id, end_status(exc))
        except Exception:  # the store failed too (a full disk): the next retrain closes the run; say what happened
            logging.getLogger(__name__).warning("could not mark MLflow run %s %s", run_id, end_status(exc))
        raise
    client.set_terminated(run_id, "FINISHED")


def end_abandoned_runs(tracking_uri: str, experiment: str, model_name: str) -> list[str]:
    """End as KILLED the runs of `model_name` still RUNNING whose process, on this host, has died.

    Runs of another host are left alone (whether their process lives cannot be told from here).
    Returns the ids of the runs closed.
    """
    client = client_of(tracking_uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        return []
    running = client.search_runs(
        [found.experiment_id], filter_string=f"attributes.status = 'RUNNING' and tags.`{MODEL_TAG}` = '{model_name}'"
    )
    closed = []
    for run in running:
        process = _process_of(run.data.tags)
        if process is not None and process.is_alive() is False:
            set_tags(client, run.info.run_id, {"depthfinder.abandoned": "its process died"})
            client.set_terminated(run.info.run_id, "KILLED")
            closed.append(run.info.run_id)
    return closed


def log_folder(client: MlflowClient, run_id: str, local_dir: str, artifact_path: str) -> None:
    """Log a folder as the run's artifacts at `artifact_path`, whole or not at all: an upload that fails part
    way (a full disk) removes what it wrote, so the space comes back and the run can still be ended."""
    try:
        client.log_artifacts(run_id, local_dir, artifact_path)
    except BaseException:
        from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository

        with contextlib.suppress(Exception):
            get_artifact_repository(client.get_run(run_id).info.artifact_uri).delete_artifacts(artifact_path)
        raise


def fetch_table(client: MlflowClient, run_id: str, local: Path) -> bool:
    """Copy the table the run `run_id` keeps under TABLE_ARTIFACTS, named like `local`, to `local`, whole or not
    at all; False when the run does not keep it (or it cannot be read)."""
    from mlflow.exceptions import MlflowException

    local.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=local.parent) as scratch:
        try:
            fetched = client.download_artifacts(run_id, f"{TABLE_ARTIFACTS}/{local.name}", scratch)
        except (MlflowException, OSError):
            return False
        shutil.move(fetched, local)  # same folder: a rename, so the table appears whole or not at all
    return True


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
    return f"{release}+{source_digest(SOURCE_ROOT)}"


def source_digest(root: Path) -> str:
    """A short digest of the names and contents of the Python files of SOURCE_PACKAGES under root.

    Raises:
        FileNotFoundError: when a package is not there: a digest of nothing would not change with the code.
    """
    digest = hashlib.sha256()
    for package in SOURCE_PACKAGES:
        if not (root / package / "__init__.py").is_file():
            raise FileNotFoundError(f"no package {package} under {root}: the code version cannot be computed")
        for path in sorted((root / package).rglob("*.py")):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def log_candidate(sweep: SweepRun, run_id: str, candidate: Candidate) -> None:
    """Log a candidate's summary figures to its child run, those the decision uses: the best epoch's validation
    metrics (`val/macro_f1`, and `best_val.*` as before), that epoch (`best_epoch`, 1-based), test metrics and
    cost; and tag how it ended."""
    figures = {"best_val": candidate.metrics, "test": candidate.test_metrics,
               "cost": {k: v for k, v in (candidate.cost.to_dict() if candidate.cost else {}).items()
                        if isinstance(v, int | float)}}
    best = {f"val/{name}": value for name, value in candidate.metrics.items()}
    if candidate.history:
        best["best_epoch"] = float(candidate.history.index(max(candidate.history)) + 1)
    log_metrics(sweep.client, run_id, flatten("", figures) | best)
    tags = {"depthfinder.status": candidate.status, "depthfinder.epochs": str(candidate.epochs)}
    if candidate.source_run_id:
        tags["depthfinder.source_run_id"] = candidate.source_run_id
    set_tags(sweep.client, run_id, tags)


def log_cached_candidate(sweep: SweepRun, candidate: Candidate, run_id: str | None = None) -> Candidate:
    """Record a candidate reused from an earlier sweep in this sweep's child run of it (`run_id`, or
    a new one); return the candidate, marked cached, with that run."""
    if run_id is None:
        tags = {"depthfinder.depth": str(candidate.depth), "depthfinder.seed": str(candidate.seed)}
        run_id = start_child_run(sweep, sweep.child_name(arm_label(candidate.family, candidate.depth),
                                                         candidate.seed), tags)
    cached = candidate.model_copy(
        update={"status": "cached", "mlflow_run_id": run_id, "source_run_id": candidate.mlflow_run_id}
    )
    log_candidate(sweep, run_id, cached)
    sweep.client.set_terminated(run_id, "FINISHED")
    return cached


def tag_pruned(sweep: SweepRun, candidates: list[Candidate]) -> None:
    """Tag the child runs of candidates that successive halving pruned."""
    for candidate in candidates:
        set_tags(sweep.client, candidate.mlflow_run_id, {"depthfinder.status": "pruned"})


def log_convergence(sweep: SweepRun, candidates: list[Candidate]) -> None:
    """Tag each candidate's child run with whether its validation metric had stopped rising (`not_converged`)."""
    for candidate in candidates:
        set_tags(sweep.client, candidate.mlflow_run_id,
                 {"depthfinder.converged": "false" if candidate.not_converged else "true"})
