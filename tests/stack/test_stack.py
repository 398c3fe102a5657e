"""The team deployment for real: nightly-retrain deployed to the stack's work pool, triggered through the
Prefect REST API as the UI's form would, its candidates trained on the Dask workers and logged to the MLflow
server on PostgreSQL."""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from mlflow import MlflowClient

from flows.stack import POOL, Stack, bin_path

pytestmark = pytest.mark.stack
ROOT = Path(__file__).resolve().parents[2]
TINY = {
    "model": {"d_model": 16, "n_heads": 2, "d_ff": 32, "vocab_size": 300, "max_len": 32},
    "train": {"max_epochs": 3, "patience": 2, "batch_size": 32, "learning_rate": 0.003},
}
FINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}


def unique(what: str) -> str:
    """A model (and experiment) name of its own: the stack's servers outlive a test session."""
    return f"stack-{what}-{uuid.uuid4().hex[:8]}"


def api(stack: Stack, method: str, path: str, body: dict | None = None) -> dict | list:
    """One call of the Prefect REST API."""
    request = urllib.request.Request(f"{stack.prefect_api}{path}", method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read() or b"null")


@pytest.fixture(scope="module")
def deployment(stack: Stack) -> dict:
    """nightly-retrain deployed from prefect.yaml to the stack's process pool, as a team would (`prefect deploy`)."""
    env = {**os.environ, "PREFECT_API_URL": stack.prefect_api}
    subprocess.run([bin_path("prefect"), "--no-prompt", "deploy", "--name", "nightly-retrain"], cwd=ROOT, env=env,
                   check=True, capture_output=True, timeout=180)
    found = api(stack, "GET", "/deployments/name/retrain/nightly-retrain")
    assert found["work_pool_name"] == POOL
    return found


def form_parameters(stack: Stack, work: Path, model_name: str, **sections: dict) -> dict:
    """What the UI's Custom run form sends: every section, the deployment's defaults edited."""
    return {
        "data": {"dataset": "topics", "dataset_rows": 600}, **TINY,
        "sweep": {"depths": [1, 2], "task_runner": "dask", "dask_address": stack.dask_address},
        "changes": {"skip_minor": True},
        "registry": {"tracking_uri": stack.mlflow_uri, "experiment": model_name, "model_name": model_name,
                     "workdir": str(work)},
        "force": False, **sections,
    }


def trigger(stack: Stack, deployment: dict, parameters: dict) -> str:
    """Create a flow run of the deployment through the REST API; its id."""
    return api(stack, "POST", f"/deployments/{deployment['id']}/create_flow_run", {"parameters": parameters})["id"]


def wait_final(stack: Stack, flow_run: str, seconds: float = 420) -> dict:
    """The flow run once its state is final (the worker picks it up and runs it)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        run = api(stack, "GET", f"/flow_runs/{flow_run}")
        if run["state_type"] in FINAL:
            return run
        time.sleep(2)
    raise AssertionError(f"flow run {flow_run} not finished after {seconds} s: {run['state_type']}")


def test_a_run_triggered_through_the_api_trains_on_the_dask_workers_and_logs_to_the_mlflow_server(
    stack: Stack, deployment: dict, tmp_path: Path
) -> None:
    name = unique("api")
    run = wait_final(stack, trigger(stack, deployment, form_parameters(stack, tmp_path / "work", name)))

    assert run["state_type"] == "COMPLETED", run["state"]["message"]
    client = MlflowClient(tracking_uri=stack.mlflow_uri)
    experiment = client.get_experiment_by_name(name)
    runs = client.search_runs([experiment.experiment_id])
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    assert len(children) == 2 and {c.info.status for c in children} == {"FINISHED"}
    trained_by = {int(c.data.tags["depthfinder.process"].rsplit("/", 2)[1]) for c in children}
    workers = {pid for name, pid in stack.pids.items() if name.startswith("dask-worker")}
    assert {os.getpgid(pid) for pid in trained_by} <= workers  # each trained in a Dask worker's process group
    assert client.get_model_version_by_alias(name, "champion").version == "1"
    assert [a.path for a in client.list_artifacts(parents[0].info.run_id, "data")]  # the champion's table, served
