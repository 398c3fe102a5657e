"""The team stack for the integration suite (the one running, `make stack-up`, else one of its own), and the
nightly-retrain deployment and one night on it, shared by the stack tests and the browser test."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

from depthfinder.runtime.services import basic_auth_header, bin_path
from depthfinder.runtime.stack import POOL, Ports, Stack, down, status, up

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="session")
def stack() -> Stack:
    """The stack in $DEPTHFINDER_STACK (default .stack) when all of it runs; else a fresh one, brought down after.
    Either way this process gets its address and credentials, as a team member's shell would."""
    running = Stack.load(Path(os.environ.get("DEPTHFINDER_STACK", ROOT / ".stack")))
    if running.pids and all(alive for _, _, alive in status(running)):
        with pytest.MonkeyPatch.context() as patch:
            for key, value in running.environment().items():
                patch.setenv(key, value)
            yield running
        return
    # Under /tmp, readable by the postgres user the database runs as when the suite runs as root.
    home = Path(tempfile.mkdtemp(prefix="depthfinder-stack-"))
    home.chmod(0o755)
    own = Stack(home, Ports(mlflow=free_port(), prefect=free_port(), dask=free_port()))
    try:
        with pytest.MonkeyPatch.context() as patch:
            for key, value in own.environment().items():
                patch.setenv(key, value)
            yield up(own)
    finally:
        down(own)
        shutil.rmtree(home, ignore_errors=True)


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
    headers = {"Content-Type": "application/json", **basic_auth_header(os.environ["PREFECT_API_AUTH_STRING"])}
    request = urllib.request.Request(f"{stack.prefect_api}{path}", method=method,
                                     data=None if body is None else json.dumps(body).encode(), headers=headers)
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read() or b"null")


@pytest.fixture(scope="session")
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
        "sweep": {"depths": [1, 2], "crossfit": {"mode": "off"},
                  "runner": {"kind": "dask", "dask_address": stack.dask_address}},
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


@pytest.fixture(scope="session")
def nightly(stack: Stack, deployment: dict, tmp_path_factory) -> tuple[str, dict]:
    """One nightly run triggered through the API on the stack: its model name and final flow-run state (shared by
    the stack tests and the browser test, so the suite trains it once)."""
    name = unique("api")
    work = tmp_path_factory.mktemp("work")
    return name, wait_final(stack, trigger(stack, deployment, form_parameters(stack, work, name)))
