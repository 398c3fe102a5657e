"""Where candidates train is a setting: threads, worker processes or a Dask cluster."""

from __future__ import annotations

import json

import pytest
from prefect.task_runners import ProcessPoolTaskRunner, ThreadPoolTaskRunner

from cli.main import main
from flows.config import SweepConfig
from flows.sweep import task_runner
from tests.flows.test_retrain import TINY


def test_the_configured_runner_is_built() -> None:
    assert isinstance(task_runner(SweepConfig()), ThreadPoolTaskRunner)
    assert isinstance(task_runner(SweepConfig(task_runner="processes", workers=2)), ProcessPoolTaskRunner)
    dask = task_runner(SweepConfig(task_runner="dask", dask_address="tcp://127.0.0.1:8786"))
    assert type(dask).__name__ == "DaskTaskRunner" and dask.address == "tcp://127.0.0.1:8786"


@pytest.mark.parametrize("runner", ["dask"])
def test_a_two_depth_sweep_on_a_local_cluster(runner: str, prefect_server, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = TINY.replace("sweep: {depths: [1, 2]}", f"sweep: {{depths: [1, 2], task_runner: {runner}, workers: 2}}")
    (tmp_path / "tiny.yaml").write_text(config)

    code = main(["run", "--config", "tiny.yaml", "--summary-json", "summary.json"])

    summary = json.loads((tmp_path / "summary.json").read_text())
    assert code == 0
    assert [(c["depth"], c["status"]) for c in summary["candidates"]] == [(1, "trained"), (2, "trained")]
    assert summary["selected_depth"] in (1, 2) and summary["model"]["version"] == "1"
