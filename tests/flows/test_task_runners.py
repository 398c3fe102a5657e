"""Where candidates train is a setting: threads, worker processes or a Dask cluster."""

from __future__ import annotations

import json

import pytest
from prefect.task_runners import ProcessPoolTaskRunner, ThreadPoolTaskRunner

from depthfinder.cli.main import main
from depthfinder.flows.config import SweepConfig
from depthfinder.flows.sweep import task_runner
from tests.flows.test_retrain import TINY


def test_the_configured_runner_is_built() -> None:
    assert isinstance(task_runner(SweepConfig()), ThreadPoolTaskRunner)
    assert isinstance(task_runner(SweepConfig(runner={"kind": "processes", "workers": 2})), ProcessPoolTaskRunner)
    dask = task_runner(SweepConfig(runner={"kind": "dask", "dask_address": "tcp://127.0.0.1:8786"}))
    assert type(dask).__name__ == "DaskTaskRunner" and dask.address == "tcp://127.0.0.1:8786"


# A local Dask cluster starts worker processes that import torch and Lightning (about 30 s), so in `make test-slow`
# (in .ci/run); the stack suite sweeps on the stack's own Dask cluster, and the runner's construction is above.
@pytest.mark.slow
@pytest.mark.parametrize("runner", ["dask"])
def test_a_two_depth_sweep_on_a_local_cluster(runner: str, prefect_server, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = TINY.replace("sweep: {depths: [1, 2], crossfit: off}",
                          f"sweep: {{depths: [1, 2], crossfit: off, runner: {{kind: {runner}, workers: 2}}}}")
    (tmp_path / "tiny.yaml").write_text(config)

    code = main(["run", "--config", "tiny.yaml", "--summary-json", "summary.json"])

    summary = json.loads((tmp_path / "summary.json").read_text())
    assert code == 0
    assert [(c["depth"], c["status"]) for c in summary["candidates"]] == [(1, "trained"), (2, "trained")]
    assert summary["selected_depth"] in (1, 2) and summary["model"]["version"] == "1"


@pytest.mark.parametrize(("workers", "started"), [(1, [1, 2, 4]), (2, [4, 2, 1])])
def test_several_workers_start_the_deepest_first_and_the_results_keep_the_steps_order(workers, started) -> None:
    """Shallowest first on two workers, depths 1, 2, 4 train depth 1 and then depth 4 on one worker while the other
    idles after depth 2; deepest first, depth 4 runs beside depths 2 and 1 in a row."""
    from types import SimpleNamespace

    from depthfinder.flows.sweep import _take
    from depthfinder.selection.candidate import Candidate
    from depthfinder.selection.strategies import Step

    class Runner:  # records what is submitted, in order; each future holds its candidate
        def __init__(self) -> None:
            self.submitted: list[int] = []

        def submit(self, task, parameters):
            self.submitted.append(parameters["depth"])
            candidate = Candidate(depth=parameters["depth"], seed=parameters["seed"], status="trained")
            return SimpleNamespace(result=lambda: candidate)

    runner = Runner()
    training = SimpleNamespace(family=SimpleNamespace(name="scratch"), parent_run=None)
    results = _take(Step(grids=[(1, 1), (2, 1), (4, 1)], epochs=10), training, runner, workers)

    assert runner.submitted == started
    assert list(results) == [(1, 1), (2, 1), (4, 1)] and [c.depth for c in results.values()] == [1, 2, 4]
