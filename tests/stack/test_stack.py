"""The team deployment for real: nightly-retrain deployed to the stack's work pool, triggered through the
Prefect REST API as the UI's form would, its candidates trained on the Dask workers and logged to the MLflow
server on PostgreSQL."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from mlflow import MlflowClient
from mlflow.entities import Run

from depthfinder.runtime.liveness import ProcessIdentity
from depthfinder.runtime.services import bin_path, healthy, stop_group
from depthfinder.runtime.stack import Stack, up
from depthfinder.tracking.runs import PROCESS_TAG
from tests.stack.conftest import TINY, api, form_parameters, free_port, trigger, unique, wait_final

pytestmark = pytest.mark.stack
ROOT = Path(__file__).resolve().parents[2]
def two_paced_sweep(stack: Stack, work: Path, name: str) -> dict:
    """Depths 1 and 4 on 1,500 rows for 8 epochs on the Dask workers: depth 4 trains well after depth 1 is done."""
    return form_parameters(
        stack, work, name, data={"dataset": "topics", "dataset_rows": 1500},
        sweep={"depths": [1, 4], "crossfit": {"mode": "off"},
               "runner": {"kind": "dask", "dask_address": stack.dask_address}},
        train={**TINY["train"], "max_epochs": 8, "patience": 8},
    )


def run_summary(client: MlflowClient, run_id: str, folder: Path) -> dict:
    """The summary.json a parent run logged."""
    return json.loads(Path(client.download_artifacts(run_id, "summary.json", str(folder))).read_text())


def test_a_run_triggered_through_the_api_trains_on_the_dask_workers_and_logs_to_the_mlflow_server(
    stack: Stack, nightly: tuple[str, dict]
) -> None:
    name, run = nightly

    assert run["state_type"] == "COMPLETED", run["state"]["message"]
    client = MlflowClient(tracking_uri=stack.mlflow_uri)
    parents, children = sweep_runs(client, name)
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    assert len(children) == 2 and {c.info.status for c in children} == {"FINISHED"}
    trained_by = {trainer_pid(c) for c in children}
    workers = {pid for name, pid in stack.pids.items() if name.startswith("dask-worker")}
    assert {os.getpgid(pid) for pid in trained_by} <= workers  # each trained in a Dask worker's process group
    assert client.get_model_version_by_alias(name, "champion").version == "1"
    assert [a.path for a in client.list_artifacts(parents[0].info.run_id, "data")]  # the champion's table, served


def test_two_runs_at_once_one_waits_and_then_skips(stack: Stack, deployment: dict, tmp_path: Path) -> None:
    name = unique("twice")
    parameters = form_parameters(stack, tmp_path / "work", name)
    first, second = (trigger(stack, deployment, parameters) for _ in range(2))
    runs = [wait_final(stack, flow_run) for flow_run in (first, second)]

    assert [run["state_type"] for run in runs] == ["COMPLETED", "COMPLETED"], [r["state"]["message"] for r in runs]
    trained, skipped = sorted(runs, key=lambda run: run["state_name"] == "Skipped")
    assert (trained["state_name"], skipped["state_name"]) == ("Completed", "Skipped")
    assert "was trained on the same data" in skipped["state"]["message"]
    assert skipped["end_time"] > trained["end_time"]  # it waited for the other to finish, then skipped
    client = MlflowClient(tracking_uri=stack.mlflow_uri)
    assert len(client.search_model_versions(f"name='{name}'")) == 1


def test_the_champion_serves_concurrent_requests_and_answers_bad_ones_with_a_4xx(
    stack: Stack, nightly: tuple[str, dict], tmp_path: Path
) -> None:
    name, run = nightly
    assert run["state_type"] == "COMPLETED"
    port = free_port()
    # mlflow models serve starts `uvicorn` by name: this environment's scripts must be on PATH.
    env = {**os.environ, "MLFLOW_TRACKING_URI": stack.mlflow_uri,
           "PATH": f"{Path(bin_path('mlflow')).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    with open(tmp_path / "serve.log", "wb") as log:
        server = subprocess.Popen([bin_path("mlflow"), "models", "serve", "-m", f"models:/{name}@champion", "-h",
                                   "127.0.0.1", "-p", str(port), "--env-manager", "local"], stdout=log,
                                  stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until(lambda: healthy(f"{url}/ping"), 120, server, tmp_path / "serve.log")
        latencies, errors = load(f"{url}/invocations", clients=CLIENTS, seconds=LOAD_SECONDS)
        bad = [post(f"{url}/invocations", b"not json"),
               post(f"{url}/invocations", json.dumps({"dataframe_split": {"columns": ["body"], "data": [["x"]]}}))]
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)
        server.wait(30)

    p50, p95 = np.percentile(latencies, [50, 95]) * 1000
    print(f"\nserving: {len(latencies)} requests from {CLIENTS} clients in {LOAD_SECONDS} s, 0 errors, "
          f"p50 {p50:.1f} ms, p95 {p95:.1f} ms")
    assert errors == [] and len(latencies) >= CLIENTS
    for status, body in bad:
        assert 400 <= status < 500 and body.strip(), (status, body)


CLIENTS, LOAD_SECONDS = 8, 10
TEXTS = ["The striker scored twice before half time.", "The chef roasted the vegetables slowly.",
         "The new compiler release fixed the memory leak.", "The flight to Lisbon was delayed again."]


def post(url: str, body: bytes | str) -> tuple[int, str]:
    """POST `body` as JSON; the status and the body of the answer (errors included)."""
    data = body.encode() if isinstance(body, str) else body
    request = urllib.request.Request(url, data=data, method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def load(url: str, clients: int, seconds: float) -> tuple[np.ndarray, list[str]]:
    """`clients` threads each sending one text at a time for `seconds`: every latency, and every error."""
    latencies: list[float] = []
    errors: list[str] = []
    deadline = time.monotonic() + seconds

    def client(number: int) -> None:
        sent = 0
        while time.monotonic() < deadline:
            text = TEXTS[(number + sent) % len(TEXTS)]
            body = json.dumps({"dataframe_split": {"columns": ["text"], "data": [[text]]}})
            started = time.perf_counter()
            status, answer = post(url, body)
            latencies.append(time.perf_counter() - started)
            if status != 200 or '"label"' not in answer:
                errors.append(f"{status}: {answer[:200]}")
            sent += 1

    threads = [threading.Thread(target=client, args=(number,)) for number in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return np.array(latencies), errors


def wait_until(ready, seconds: float, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if ready():
            return
        assert process.poll() is None, log.read_text()[-3000:]
        time.sleep(0.5)
    raise AssertionError(f"not ready after {seconds} s: {log.read_text()[-3000:]}")


def test_a_flow_killed_mid_sweep_holds_nothing_and_a_new_trigger_reuses_its_finished_candidate(
    stack: Stack, deployment: dict, tmp_path: Path
) -> None:
    name = unique("killed")
    parameters = two_paced_sweep(stack, tmp_path / "work", name)
    client = MlflowClient(tracking_uri=stack.mlflow_uri)
    killed = trigger(stack, deployment, parameters)
    children = child_runs_once(client, name, lambda runs: any(r.info.status == "FINISHED" for r in runs))
    finished = {int(r.data.params["depth"]) for r in children if r.info.status == "FINISHED"}
    pid = int(api(stack, "GET", f"/flow_runs/{killed}")["infrastructure_pid"].rsplit(":", 1)[-1])
    os.kill(pid, signal.SIGKILL)
    crashed = wait_final(stack, killed)
    started = time.monotonic()
    rerun = wait_final(stack, trigger(stack, deployment, parameters))
    seconds = time.monotonic() - started

    assert crashed["state_type"] in ("CRASHED", "FAILED")
    assert rerun["state_type"] == "COMPLETED", rerun["state"]["message"]
    *old_parents, new_parent = sweep_runs(client, name)[0]
    summary = run_summary(client, new_parent.info.run_id, tmp_path)
    statuses = {c["depth"]: c["status"] for c in summary["candidates"]}
    assert {statuses[depth] for depth in finished} == {"cached"}  # finished before the kill: reused
    assert {r.info.status for r in old_parents} == {"KILLED"}
    print(f"\nkilled mid-sweep after depth(s) {sorted(finished)} finished; the new trigger completed in "
          f"{seconds:.0f} s with {statuses}")


def test_a_dask_worker_killed_while_training_a_candidate_loses_nothing(
    stack: Stack, deployment: dict, tmp_path: Path
) -> None:
    name = unique("worker")
    parameters = two_paced_sweep(stack, tmp_path / "work", name)
    client = MlflowClient(tracking_uri=stack.mlflow_uri)
    flow_run = trigger(stack, deployment, parameters)
    try:
        def two_epochs_into_depth_4(run: Run) -> bool:  # so the first epoch's state is surely saved
            return (run.data.params.get("depth") == "4" and run.info.status == "RUNNING"
                    and len(client.get_metric_history(run.info.run_id, "by_epoch/val/macro_f1")) >= 2)

        children = child_runs_once(client, name, lambda runs: any(map(two_epochs_into_depth_4, runs)))
        running = next(filter(two_epochs_into_depth_4, children))
        trainer = trainer_pid(running)
        worker = next(service for service, pid in stack.pids.items() if pid == os.getpgid(trainer))
        os.killpg(stack.pids[worker], signal.SIGKILL)
        run = wait_final(stack, flow_run)
    finally:
        up(stack)  # the killed worker back, for the tests after this one

    assert run["state_type"] == "COMPLETED", run["state"]["message"]
    parent = sweep_runs(client, name)[0][0]
    summary = run_summary(client, parent.info.run_id, tmp_path)
    statuses = {c["depth"]: c["status"] for c in summary["candidates"]}
    resumed = {c["depth"]: c["resumed_from"] for c in summary["candidates"]}
    (decision,) = api(stack, "POST", "/artifacts/filter", {"artifacts": {
        "key": {"any_": ["depth-decision"]}, "flow_run_id": {"any_": [flow_run]}}})
    print(f"\n{worker} killed while training depth 4: candidates {statuses}, resumed from {resumed}")
    assert statuses == {1: "trained", 4: "trained"}  # the lost one trained again on the other worker...
    assert resumed[1] is None and resumed[4] >= 2  # ...from the last epoch it had saved
    assert f"Resumed after an earlier attempt ended (a stop, a crash or a lost Dask worker): depth 4 (seed 1) " \
           f"from epoch {resumed[4]}" in decision["data"]


def test_an_mlflow_server_restarted_mid_run_loses_no_metric_or_artifact(
    stack: Stack, deployment: dict, tmp_path: Path
) -> None:
    name = unique("restart")
    parameters = form_parameters(stack, tmp_path / "work", name, data={"dataset": "topics", "dataset_rows": 1500},
                                 train={**TINY["train"], "max_epochs": 8, "patience": 8})
    client = MlflowClient(tracking_uri=stack.mlflow_uri)
    flow_run = trigger(stack, deployment, parameters)
    child_runs_once(client, name, lambda runs: any(r.data.params.get("depth") == "2" and r.info.status == "RUNNING"
                                                    for r in runs))
    started = time.monotonic()
    stop_group(stack.pids.pop("mlflow"))
    time.sleep(RESTART_PAUSE)
    up(stack)  # the same server on the same database and artifact root
    outage = time.monotonic() - started
    run = wait_final(stack, flow_run)

    assert run["state_type"] == "COMPLETED", run["state"]["message"]
    parent = sweep_runs(client, name)[0][0]
    assert parent.info.status == "FINISHED"
    assert {"summary.json", "plots", "audit", "changes", "data"} - {a.path for a in client.list_artifacts(
        parent.info.run_id)} <= {"changes"}  # no champion before this run: nothing to compare
    summary = run_summary(client, parent.info.run_id, tmp_path)
    for candidate in summary["candidates"]:
        history = client.get_metric_history(candidate["mlflow_run_id"], "by_epoch/val/macro_f1")
        assert len(history) == candidate["epochs"], (candidate["depth"], len(history), candidate["epochs"])
    assert client.get_model_version_by_alias(name, "champion").version == "1"
    print(f"\nMLflow server down and back in {outage:.1f} s mid-run; every epoch's metrics and every artifact kept")


RESTART_PAUSE = 3.0


@pytest.mark.parametrize(("wrong", "said"), [
    ({"PREFECT_API_AUTH_STRING": "depthfinder:not-the-password"}, "refuses the credentials (HTTP 401)"),
    ({"MLFLOW_TRACKING_PASSWORD": "not-the-password"}, "refuses the credentials of user 'depthfinder' (HTTP 401)"),
])
def test_wrong_credentials_stop_a_run_with_one_clear_line(stack: Stack, tmp_path: Path, wrong: dict, said: str) -> None:
    (tmp_path / "run.yaml").write_text((stack.home / "stack.yaml").read_text() + "data: {dataset: topics}\n")
    env = {**os.environ, **stack.environment(), **wrong}
    done = subprocess.run([bin_path("depthfinder"), "run", "--config", str(tmp_path / "run.yaml")], env=env,
                          capture_output=True, text=True, timeout=180, cwd=tmp_path)

    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and said in lines[0], done.stderr[-2000:]
    assert "not-the-password" not in done.stderr + done.stdout  # a secret is never printed


def trainer_pid(run: Run) -> int:
    """The pid of the process that trained a child run, from its `depthfinder.process` tag."""
    return ProcessIdentity.parse(run.data.tags[PROCESS_TAG]).pid


def child_runs_once(client: MlflowClient, experiment: str, enough: Callable[[list[Run]], bool],
                    seconds: float = 300) -> list[Run]:
    """The experiment's child runs as soon as `enough` says so of them."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        children = sweep_runs(client, experiment)[1]
        if enough(children):
            return children
        time.sleep(1)
    raise AssertionError(f"the child runs of {experiment} did not get there in {seconds} s")


def sweep_runs(client: MlflowClient, experiment: str) -> tuple[list[Run], list[Run]]:
    """The experiment's parent runs and child runs, each oldest first (none while it does not exist)."""
    found = client.get_experiment_by_name(experiment)
    runs = client.search_runs([found.experiment_id], order_by=["attributes.start_time ASC"]) if found else []
    parents = [run for run in runs if "mlflow.parentRunId" not in run.data.tags]
    return parents, [run for run in runs if "mlflow.parentRunId" in run.data.tags]


def test_a_password_in_the_tracking_uri_is_never_printed_logged_or_stored(stack: Stack, tmp_path: Path) -> None:
    """The MLflow password only in `--tracking-uri http://user:password@host/`: the run uses it, and no line, no
    Prefect log, parameter or artifact, no MLflow parameter, tag or artifact, no summary holds it."""
    name = unique("secret")
    environment = {**os.environ, **stack.environment()}
    password = environment.pop("MLFLOW_TRACKING_PASSWORD")
    user = environment.pop("MLFLOW_TRACKING_USERNAME")
    host = stack.mlflow_uri.split("://", 1)[1]
    (tmp_path / "run.yaml").write_text(json.dumps({"data": {"dataset": "topics", "dataset_rows": 600}, **TINY,
                                                   "sweep": {"depths": [1]}}))
    done = subprocess.run(
        [bin_path("depthfinder"), "run", "--config", "run.yaml", "--tracking-uri", f"http://{user}:{password}@{host}",
         "--experiment", name, "--model-name", name, "--summary-json", "summary.json"],
        env=environment, capture_output=True, text=True, timeout=600, cwd=tmp_path)

    assert done.returncode == 0, done.stderr[-3000:]
    seen = [done.stdout, done.stderr, (tmp_path / "summary.json").read_text()]
    client = MlflowClient(tracking_uri=stack.mlflow_uri)
    for run in [*sweep_runs(client, name)[0], *sweep_runs(client, name)[1]]:
        seen += [json.dumps(run.data.params), json.dumps(run.data.tags)]
        seen.append(Path(client.download_artifacts(run.info.run_id, "", str(tmp_path / run.info.run_id))).as_posix())
        seen += [path.read_text(errors="replace") for path in (tmp_path / run.info.run_id).rglob("*.json")]
    registered = client.get_registered_model(name)
    seen += [json.dumps(registered.tags), registered.description or ""]
    flow_runs = api(stack, "POST", "/flow_runs/filter", {"limit": 200, "sort": "START_TIME_DESC"})
    ours = [run for run in flow_runs if run["parameters"].get("registry", {}).get("model_name") == name]
    assert ours, "the run is on the Prefect server"
    for run in ours:
        seen.append(json.dumps(run["parameters"]))
        seen.append(json.dumps(api(stack, "POST", "/logs/filter", {"logs": {"flow_run_id": {"any_": [run["id"]]}}})))
        seen.append(json.dumps(api(stack, "POST", "/artifacts/filter",
                                   {"artifacts": {"flow_run_id": {"any_": [run["id"]]}}})))
    assert all(password not in text for text in seen)
    assert any(f"http://{host}" in text for text in seen)  # the URI itself is there, without its password
