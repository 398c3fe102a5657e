"""Signals and crashes at the worst moments: the run stops at once, leaves nothing stuck or half-done,
and a rerun ends with the decision an uninterrupted run makes.

Each interrupted run is a real `depthfinder run` process (tests/flows/interrupting.py) that signals
itself at the named moment; the reruns run in this process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from mlflow import MlflowClient

from depthfinder.cli.main import main
from depthfinder.runtime.lock import is_locked, lock_path

ROOT = Path(__file__).resolve().parents[2]
CONFIG = """
data: {dataset: topics, dataset_rows: 600}
model: {d_model: 16, n_heads: 2, d_ff: 32, vocab_size: 300, max_len: 32}
train: {max_epochs: 6, min_epochs: 6, patience: 2, batch_size: 8, learning_rate: 0.003}
sweep: {depths: [1, 2], crossfit: off}
"""
RESUME_HINT = "run the same command again to continue"


@pytest.fixture(scope="module")
def reference(prefect_server, tmp_path_factory) -> dict:
    """The summary of the same run, never interrupted."""
    folder = tmp_path_factory.mktemp("uninterrupted")
    (folder / "run.yaml").write_text(CONFIG)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        assert main(["run", "--config", "run.yaml", "--summary-json", "summary.json"]) == 0
    return json.loads((folder / "summary.json").read_text())


@pytest.fixture(scope="module")
def prefect_home(tmp_path_factory) -> Path:
    """Where the interrupted processes keep Prefect's database; their temporary servers say so in their environment."""
    return tmp_path_factory.mktemp("prefect-home")


def interrupted(
    folder: Path, moment: str, how: str, prefect_home: Path, own_server: bool
) -> subprocess.CompletedProcess:
    """`depthfinder run` in `folder`, signalled at `moment`; with a temporary Prefect server of its own, or with
    this session's. (A SIGKILLed run needs its own: this session's server takes a dead holder's leased slot for
    a live one, as it runs no lease reaper; a real `prefect server start` frees it within a minute.)"""
    (folder / "run.yaml").write_text(CONFIG)
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "PREFECT_HOME": str(prefect_home)}
    if own_server:
        environment.pop("PREFECT_API_URL", None)
    else:
        from prefect.settings import PREFECT_API_URL

        environment["PREFECT_API_URL"] = PREFECT_API_URL.value()
    command = [sys.executable, "-m", "tests.flows.interrupting", moment, how, "run", "--config", "run.yaml"]
    try:
        process = subprocess.run(command, cwd=folder, env=environment, capture_output=True, text=True, timeout=300,
                                 start_new_session=True)
    except subprocess.TimeoutExpired as hung:  # say where it hung: whether the signal fired, and its last lines
        fired = (folder / "fired").read_text() if (folder / "fired").exists() else "nothing"
        pytest.fail(f"the run did not end within 300 s; fired: {fired}; its stderr ends:\n"
                    f"{(hung.stderr or b'').decode(errors='replace')[-3000:]}")
    assert (folder / "fired").read_text().split()[0] == how, process.stderr[-2000:]
    return process


def mlflow_runs(folder: Path) -> dict[str, object]:
    """The runs of the folder's MLflow store by role: 'sweep · <its name>' for each parent run, and
    'depth-N-seed-S' for each child (named 'depth-N-seed-S · night · hash'; a rerun's child replaces its own)."""
    client = MlflowClient(tracking_uri=f"sqlite:///{folder / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("depthfinder")
    runs = client.search_runs([experiment.experiment_id], order_by=["start_time"])
    return {(run.info.run_name.split(" · ")[0] if "mlflow.parentRunId" in run.data.tags
             else f"sweep · {run.info.run_name}"): run for run in runs}


def registered_versions(folder: Path) -> list[str]:
    client = MlflowClient(tracking_uri=f"sqlite:///{folder / 'mlflow.db'}")
    return [str(version.version) for version in client.search_model_versions("name='depthfinder'")]


def rerun(folder: Path, monkeypatch) -> dict:
    monkeypatch.chdir(folder)
    assert main(["run", "--config", "run.yaml", "--summary-json", "summary.json"]) == 0
    return json.loads((folder / "summary.json").read_text())


def assert_same_decision(resumed: dict, reference: dict) -> None:
    assert resumed["selected_depth"] == reference["selected_depth"]
    for again, straight in zip(resumed["candidates"], reference["candidates"], strict=True):
        assert (again["depth"], again["epochs"]) == (straight["depth"], straight["epochs"])
        assert again["metrics"] == straight["metrics"] and again["test_metrics"] == straight["test_metrics"]


def temporary_servers(prefect_home: Path) -> list[psutil.Process]:
    """Prefect servers still running for processes that used `prefect_home`."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        try:
            if "prefect.server.api.server:create_app" in " ".join(process.info["cmdline"] or []) and (
                process.environ().get("PREFECT_HOME") == str(prefect_home)
            ):
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def test_sigterm_while_training_stops_within_the_epoch_and_a_rerun_continues_to_the_same_decision(
    reference, prefect_home, tmp_path, monkeypatch
) -> None:
    process = interrupted(tmp_path, "training", "SIGTERM", prefect_home, own_server=False)

    assert process.returncode == 143
    assert process.stderr.strip().splitlines()[-1].startswith(
        "depthfinder: stopped by SIGTERM while training depth 2 (seed 1) at epoch 3 of 6; nothing was registered"
    )
    assert "Traceback" not in process.stderr
    runs = mlflow_runs(tmp_path)
    assert {name: run.info.status for name, run in runs.items() if name.startswith("depth")} == {
        "depth-1-seed-1": "FINISHED", "depth-2-seed-1": "KILLED"}
    assert next(run for name, run in runs.items() if name.startswith("sweep")).info.status == "KILLED"
    assert registered_versions(tmp_path) == []
    assert not is_locked(lock_path(tmp_path / ".depthfinder", "depthfinder"))
    (depth_2,) = (tmp_path / ".depthfinder" / "candidates").glob("scratch-depth-2-*")
    assert not list(depth_2.glob("result-*.json"))  # it stopped in epoch 3, not at the end of the sweep
    from depthfinder.encoder.trainer import checkpoint_epochs, last_checkpoint

    assert checkpoint_epochs(last_checkpoint(depth_2 / "checkpoints", 2)) == 2

    resumed = rerun(tmp_path, monkeypatch)

    assert [c["status"] for c in resumed["candidates"]] == ["cached", "trained"]
    assert [c["resumed_from"] for c in resumed["candidates"]] == [None, 2]  # said in the decision's notes
    assert_same_decision(resumed, reference)
    assert registered_versions(tmp_path) == ["1"]


@pytest.mark.slow  # `make test-slow`, which .ci/run runs
def test_ctrl_c_in_the_terminal_stops_the_run_cleanly_and_its_temporary_server_with_it(
    prefect_home, tmp_path
) -> None:
    """SIGINT reaches the whole process group; the temporary server, in a session of its own, stays up
    until the run has recorded that it stopped, then goes."""
    process = interrupted(tmp_path, "training", "SIGINT-GROUP", prefect_home, own_server=True)

    assert process.returncode == 130
    assert process.stderr.strip().splitlines()[-1].startswith("depthfinder: stopped by SIGINT while training depth 2")
    assert RESUME_HINT in process.stderr
    assert "ConnectError" not in process.stderr and "Traceback" not in process.stderr
    statuses = {name: run.info.status for name, run in mlflow_runs(tmp_path).items()}
    assert sorted(statuses.values()) == ["FINISHED", "KILLED", "KILLED"]  # depth 1; depth 2 and the sweep
    assert registered_versions(tmp_path) == []
    assert temporary_servers(prefect_home) == []


@pytest.mark.slow  # `make test-slow`, which .ci/run runs
def test_sigkill_while_training_leaves_nothing_stuck_and_a_rerun_closes_its_runs_and_continues(
    reference, prefect_home, tmp_path, monkeypatch
) -> None:
    process = interrupted(tmp_path, "training", "SIGKILL", prefect_home, own_server=True)

    assert process.returncode == -9
    assert not is_locked(lock_path(tmp_path / ".depthfinder", "depthfinder"))
    deadline = time.monotonic() + 15  # the kernel sends the orphaned server SIGTERM; it takes a moment to exit
    while temporary_servers(prefect_home) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert temporary_servers(prefect_home) == []
    runs = mlflow_runs(tmp_path)
    left_running = {name: run.info.run_id for name, run in runs.items() if run.info.status == "RUNNING"}
    assert sorted(name[:5] for name in left_running) == ["depth", "sweep"]  # depth 2 and its sweep

    resumed = rerun(tmp_path, monkeypatch)

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    for run_id in left_running.values():
        run = client.get_run(run_id)
        assert run.info.status == "KILLED" and "died" in run.data.tags["depthfinder.abandoned"]
    assert [c["status"] for c in resumed["candidates"]] == ["cached", "trained"]
    assert_same_decision(resumed, reference)


@pytest.mark.slow  # `make test-slow`, which .ci/run runs
def test_sigkill_between_a_durable_result_and_its_finished_run_loses_no_candidate(
    reference, prefect_home, tmp_path, monkeypatch
) -> None:
    process = interrupted(tmp_path, "result", "SIGKILL", prefect_home, own_server=True)
    assert process.returncode == -9
    first_depth_1 = mlflow_runs(tmp_path)["depth-1-seed-1"]
    assert first_depth_1.info.status == "RUNNING"

    resumed = rerun(tmp_path, monkeypatch)

    assert [c["status"] for c in resumed["candidates"]] == ["cached", "trained"]
    assert resumed["candidates"][0]["source_run_id"] == first_depth_1.info.run_id  # reused, not trained again
    assert_same_decision(resumed, reference)


@pytest.mark.slow  # `make test-slow`, which .ci/run runs
def test_sigterm_while_judging_the_new_version_lets_the_judgement_finish_and_a_rerun_has_nothing_to_do(
    reference, prefect_home, tmp_path, monkeypatch
) -> None:
    """The judgement (champion, challenger, the version's `judged` tag) is one step a signal waits for."""
    process = interrupted(tmp_path, "registering", "SIGTERM", prefect_home, own_server=False)

    assert process.returncode == 143
    assert process.stderr.strip().splitlines()[-1].startswith("depthfinder: stopped by SIGTERM; nothing was registered")
    assert registered_versions(tmp_path) == ["1"]
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert client.get_model_version("depthfinder", "1").tags["judged"] == "promoted"
    assert {alias: str(v) for alias, v in client.get_registered_model("depthfinder").aliases.items()} == {
        "champion": "1", "challenger": "1"}
    assert next(run for name, run in mlflow_runs(tmp_path).items() if name.startswith("sweep")).info.status == "KILLED"

    resumed = rerun(tmp_path, monkeypatch)

    assert resumed["skipped"] is True and resumed["model"]["version"] == "1"
    assert registered_versions(tmp_path) == ["1"]
