"""Night by night: the retrain flow compares tonight's table with the champion's and skips, retrains or stops."""

from __future__ import annotations

import json
import shutil

import pandas as pd
from mlflow import MlflowClient

from cli.main import main
from expectations.table.datasets import DATASETS

TINY_ONE_DEPTH = """
data: {path: night.csv}
model: {d_model: 16, n_heads: 2, d_ff: 32, vocab_size: 300, max_len: 32}
train: {max_epochs: 2, patience: 2, batch_size: 32, learning_rate: 0.003}
sweep: {depths: [1]}
"""


def test_unchanged_skips_new_rows_retrain_another_domain_stops_unless_forced(
    prefect_server, tmp_path, monkeypatch, capsys
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tiny.yaml").write_text(TINY_ONE_DEPTH)
    topics = DATASETS["topics"].generate(900, seed=1)
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")

    def night(name: str, table: pd.DataFrame, *flags: str) -> tuple[int, dict]:
        table.to_csv(tmp_path / "night.csv", index=False)
        code = main(["run", "--config", "tiny.yaml", "--skip-minor", "--summary-json", f"{name}.json", *flags])
        return code, json.loads((tmp_path / f"{name}.json").read_text())

    first_code, first = night("first", topics.iloc[:600])
    versions = lambda: len(client.search_model_versions("name='depthfinder'"))  # noqa: E731
    same_code, same = night("same", topics.iloc[:600])
    few_code, few = night("few", topics.iloc[:620])
    capsys.readouterr()
    reviews = DATASETS["reviews-negation"].generate(300, seed=2)
    other_code, other = night("other", pd.concat([topics.iloc[:600], reviews]))
    printed = capsys.readouterr().out
    registered_before_new_rows = versions()
    forced_code, forced = night("forced", pd.concat([topics.iloc[:600], reviews]), "--force")
    shutil.rmtree(tmp_path / ".depthfinder" / "data")  # the champion's table comes back from its run
    new_code, new = night("new", topics)

    assert first_code == 0 and first["changes"] is None and first["model"]["version"] == "1"
    assert same_code == 0 and same["skipped"] and same["changes"]["policy"]["decision"] == "skip"
    assert "trained on the same data" in same["changes"]["policy"]["reason"]
    assert few_code == 0 and few["skipped"] and few["changes"]["rows_added"] == 20
    assert few["changes"]["policy"]["decision"] == "skip" and few["reason"] == few["changes"]["policy"]["reason"]

    assert other_code == 1 and other["changes"]["policy"]["decision"] == "stop"
    assert other["changes"]["drift_auc"] > 0.95 and other["audit"] is None and other["candidates"] == []
    assert "STOP    text_drift" in printed and "Stopped before training." in printed
    assert registered_before_new_rows == 1  # the stop registered nothing
    stopped = client.get_run(other["mlflow_run_id"])
    assert stopped.info.status == "FAILED" and stopped.data.tags["depthfinder.changes"] == "stop"
    assert stopped.data.metrics["changes.drift_auc"] == other["changes"]["drift_auc"]

    assert forced_code == 0 and forced["model"]["version"] == "2"  # --force trains whatever the policy said
    assert forced["changes"]["policy"]["decision"] == "retrain"
    assert forced["changes"]["policy"]["reason"].startswith("forced (--force); the comparison said stop: ")

    assert new_code == 0 and not new["skipped"] and new["model"]["version"] == "3"
    changes = new["changes"]
    assert changes["rows_added"] == 300 and changes["policy"]["decision"] == "retrain"
    assert changes["champion_on_new"]["rows"] == 300 and changes["champion_on_new"]["metric"] == "macro_f1"
    assert 0 <= changes["champion_on_new"]["on_new"] <= 1
    artifacts = [a.path for a in client.list_artifacts(new["mlflow_run_id"], "changes")]
    assert "changes/what_changed.json" in artifacts and "changes/data_docs" in artifacts
    kept = [a.path for a in client.list_artifacts(new["mlflow_run_id"], "data")]
    assert kept == [f"data/{client.get_model_version('depthfinder', '3').tags['table_hash']}.parquet"]
