"""A sweep that died after its first depth trains only the depth that had not finished."""

from __future__ import annotations

import json

from mlflow import MlflowClient

import depthfinder.encoder.training
from depthfinder.cli.main import main
from tests.flows.test_retrain import TINY


def test_a_rerun_reuses_finished_depths_and_trains_the_rest(prefect_server, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tiny.yaml").write_text(TINY)
    real_train = depthfinder.encoder.training.train_candidate
    trained: list[int] = []

    def dies_at_depth_2(data, depth, *args, **kwargs):
        if depth == 2 and not trained.count(2) and crash:
            raise RuntimeError("killed while training depth 2")
        trained.append(depth)
        return real_train(data, depth, *args, **kwargs)

    monkeypatch.setattr(depthfinder.encoder.training, "train_candidate", dies_at_depth_2)
    crash = True
    first_code = main(["run", "--config", "tiny.yaml", "--summary-json", "first.json"])
    crash = False
    second_code = main(["run", "--config", "tiny.yaml", "--summary-json", "second.json"])

    first = json.loads((tmp_path / "first.json").read_text())
    second = json.loads((tmp_path / "second.json").read_text())
    assert first_code == 0 and second_code == 0
    assert [c["status"] for c in first["candidates"]] == ["trained", "failed"]
    assert trained == [1, 2]  # depth 1 once, in the first run; depth 2 once, in the second
    assert [c["status"] for c in second["candidates"]] == ["cached", "trained"]
    cached = second["candidates"][0]
    assert cached["source_run_id"] == first["candidates"][0]["mlflow_run_id"]
    assert cached["metrics"] == first["candidates"][0]["metrics"]
    child = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}").get_run(cached["mlflow_run_id"])
    assert child.data.tags["depthfinder.status"] == "cached"
    assert child.data.tags["mlflow.parentRunId"] == second["mlflow_run_id"]
