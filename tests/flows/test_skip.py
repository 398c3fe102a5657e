"""The nightly run skips when nothing that decides the model changed; --force retrains anyway."""

from __future__ import annotations

import json
from types import SimpleNamespace

from mlflow import MlflowClient

import depthfinder.tasks.train
from depthfinder.cli.main import main
from tests.flows.test_retrain import TINY


def test_an_unchanged_rerun_is_skipped_whatever_the_paths_spelling_and_force_retrains(
    prefect_server, tmp_path, monkeypatch, capsys
) -> None:
    """The same file under other spellings of its path is the same data: skipped; --force retrains (every candidate
    reused); another setting is another model."""
    from depthfinder.expectations.table.datasets import DATASETS

    monkeypatch.chdir(tmp_path)
    DATASETS["topics"].generate(600, seed=1).to_csv(tmp_path / "base.csv", index=False)
    (tmp_path / "tiny.yaml").write_text(TINY.replace("data: {dataset: topics, dataset_rows: 600}\n", ""))
    (tmp_path / "sub").mkdir()
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")

    def run(name: str, data: str, *flags: str) -> dict:
        assert main(["run", "--config", "tiny.yaml", "--data", data, "--summary-json", f"{name}.json", *flags]) == 0
        return json.loads((tmp_path / f"{name}.json").read_text())

    logged: list[str] = []

    def recording_logger():
        logger = real_logger()
        return SimpleNamespace(info=lambda message, *args: (logged.append(message % args), logger.info(message, *args)))

    real_logger = depthfinder.tasks.train.get_run_logger
    monkeypatch.setattr(depthfinder.tasks.train, "get_run_logger", recording_logger)
    first = run("first", "base.csv")
    parent_runs = len(client.search_runs([first_experiment := first_experiment_id(client)]))
    capsys.readouterr()
    assert any(line.startswith("depth 2 seed 1 epoch 3/3: train/loss") for line in logged)  # one line an epoch
    skipped = run("skipped", str(tmp_path / "base.csv"))
    printed = capsys.readouterr().out
    spelled = run("spelled", "sub/../base.csv")

    assert first["skipped"] is False
    assert skipped["skipped"] is True and skipped["model"]["version"] == "1" and spelled["skipped"] is True
    assert first["data_hash"] in skipped["reason"] and "--force" in skipped["reason"]
    assert "Skipped: depthfinder version 1 (champion, depth" in printed
    assert len(client.search_runs([first_experiment])) == parent_runs  # no new MLflow runs
    assert len(client.search_model_versions("name='depthfinder'")) == 1

    forced = run("forced", "base.csv", "--force")
    assert forced["skipped"] is False and forced["model"]["version"] == "2"
    assert {c["status"] for c in forced["candidates"]} == {"cached"}

    (tmp_path / "tiny.yaml").write_text(TINY.replace("learning_rate: 0.003", "learning_rate: 0.002")
                                        .replace("data: {dataset: topics, dataset_rows: 600}\n", ""))
    assert run("changed", "base.csv")["skipped"] is False  # another setting: another model


def first_experiment_id(client: MlflowClient) -> str:
    return client.get_experiment_by_name("depthfinder").experiment_id
