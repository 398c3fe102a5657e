"""Night by night: the retrain flow compares tonight's table with the champion's and skips, retrains or stops; a
stopped night and a forced one read back through the Prefect API and the MLflow client as a reviewer sees them."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest
from mlflow import MlflowClient

from depthfinder.cli.main import main
from depthfinder.expectations.audit.report import SUSPECT_COLUMNS
from depthfinder.expectations.table.datasets import DATASETS
from tests.flows.prefect_api import artifact, flow_runs_named, table_rows

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
    other_table = pd.concat([topics.iloc[:600], reviews]).reset_index(drop=True)
    other_code, other = night("other", other_table)
    printed, said = capsys.readouterr()
    registered_before_new_rows = versions()
    forced_code, forced = night("forced", pd.concat([topics.iloc[:600], reviews]), "--force")
    tables = [pd.read_parquet(tmp_path / ".depthfinder" / "data" / f"{version.tags['table_hash']}.parquet")
              for version in sorted(client.search_model_versions("name='depthfinder'"), key=lambda v: int(v.version))]
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
    assert "error(s) were logged" not in said  # a stopped night is an outcome, not a fault
    assert registered_before_new_rows == 1  # the stop registered nothing
    stopped = client.get_run(other["mlflow_run_id"])
    assert stopped.info.status == "FINISHED" and stopped.data.tags["depthfinder.changes"] == "stop"  # not a crash
    assert stopped.data.metrics["changes.drift_auc"] == other["changes"]["drift_auc"]
    assert_a_stopped_night_says_why_and_what_next(client, other, other_table, tmp_path)

    assert forced_code == 0 and forced["model"]["version"] == "2"  # --force trains whatever the policy said
    assert forced["changes"]["policy"]["decision"] == "retrain"
    assert forced["changes"]["policy"]["reason"].startswith("forced (--force); the comparison said stop: ")
    assert_a_forced_night_is_marked_where_a_reviewer_looks(client, forced)
    assert_a_forced_promotion_is_judged_on_the_champions_own_test_rows(client, forced, *tables)

    assert new_code == 0 and not new["skipped"] and new["model"]["version"] == "3"
    changes = new["changes"]
    assert changes["rows_added"] == 300 and changes["policy"]["decision"] == "retrain"
    assert changes["champion_on_new"]["rows"] == 300 and changes["champion_on_new"]["metric"] == "macro_f1"
    assert 0 <= changes["champion_on_new"]["on_new"] <= 1
    artifacts = [a.path for a in client.list_artifacts(new["mlflow_run_id"], "changes")]
    assert "changes/what_changed.json" in artifacts and "changes/data_docs" in artifacts
    assert "changes" not in client.get_model_version("depthfinder", "1").tags  # a first night compares nothing
    assert client.get_model_version("depthfinder", "3").tags["changes"] == "retrain"
    assert client.get_run(new["mlflow_run_id"]).data.params["changes.skip_minor"] == "True"  # --skip-minor
    kept = [a.path for a in client.list_artifacts(new["mlflow_run_id"], "data")]
    assert kept == [f"data/{client.get_model_version('depthfinder', '3').tags['table_hash']}.parquet"]


def assert_a_stopped_night_says_why_and_what_next(client: MlflowClient, summary: dict, table: pd.DataFrame,
                                                  folder) -> None:
    """Its MLflow description names the measure that stopped it and the next step; its changes.* metrics hold the
    foreign rows; every row flagged foreign is listed (MLflow CSV, Prefect table) with its file line, text, label."""
    run = client.get_run(summary["mlflow_run_id"])
    note = run.data.tags["mlflow.note.content"]
    changes = summary["changes"]
    assert note.startswith(f"# Stopped before training: what changed since version {changes['champion_version']}")
    assert "text_drift" in note and "`--force`" in note and "drop them from night.csv" in note
    assert run.data.metrics["changes.foreign_rows"] == changes["foreign_rows"]
    assert run.data.metrics["changes.foreign_share"] == pytest.approx(changes["foreign_share"])
    listed = pd.read_csv(client.download_artifacts(run.info.run_id, "changes/foreign_rows.csv", str(folder)))
    assert tuple(listed.columns) == SUSPECT_COLUMNS and len(listed) > 0
    assert (listed["line"] == listed["row"] + 2).all()  # a CSV: its header is line 1
    assert listed["text"].tolist() == table.loc[listed["row"], "text"].tolist()
    assert listed["label"].tolist() == table.loc[listed["row"], "label"].tolist()
    assert (listed["row"] >= 600).mean() > 0.9  # the reviews added, not the topics the champion knew
    (flow_run,) = flow_runs_named(run.info.run_name)
    shown = table_rows(found := artifact(flow_run.id, "foreign-rows"))
    # The columns a reader needs, the text last: no `check` (one check flagged them all), no `likely_label` (the
    # drift classifier knows no label: the column was empty on every row).
    assert [tuple(row) for row in shown] == [("line", "row", "label", "text")] * len(shown)
    assert [row["line"] for row in shown] == listed["line"].head(len(shown)).tolist()
    assert [row["label"] for row in shown] == listed["label"].head(len(shown)).tolist()
    assert found.description.startswith(f"{len(listed)} rows added flagged foreign (")
    assert "header line counted" in found.description and "changes/foreign_rows.csv" in found.description
    assert artifact(flow_run.id, "what-changed").description.startswith("Stop: ")
    assert "stopped" in flow_run.tags and "forced" not in flow_run.tags
    # Stopped on purpose, said above the fold: a state named Stopped (not the Failed of a crash) with the reason as
    # its message, the name led by `stopped` (in both UIs), a tag with the measures that stopped it.
    assert flow_run.state.type.value == "FAILED" and flow_run.state.name == "Stopped"
    assert flow_run.state.message == f"stopped: {changes['policy']['reason']}"
    assert run.info.run_name == flow_run.name == f"stopped · depthfinder · night.csv · {summary['data_hash'][:4]}"
    stopping = [check["name"] for check in changes["checks"] if check["severity"] == "error" and not check["success"]]
    assert f"stopped: {', '.join(stopping)}" in flow_run.tags and "foreign_rows" in stopping


def assert_a_forced_night_is_marked_where_a_reviewer_looks(client: MlflowClient, summary: dict) -> None:
    """Its Prefect name, tags and state message, its MLflow run's name and tags, and its version's card."""
    name = f"forced · depthfinder · night.csv · {summary['data_hash'][:4]}"  # first: the MLflow runs list cuts names
    (flow_run,) = flow_runs_named(name)
    assert "forced" in flow_run.tags
    assert flow_run.state.message.startswith("forced past the comparison's stop (--force): depth 1 registered")
    run = client.get_run(summary["mlflow_run_id"])
    assert run.info.run_name == name and run.data.tags["depthfinder.changes"] == "forced past stop"
    version = client.get_model_version("depthfinder", summary["model"]["version"])
    assert version.tags["changes"] == "forced past stop"  # the versions table's tags
    card = version.description  # its first characters are the versions table's Description
    assert card.startswith("# Forced past a stop · depthfinder version 2: ") and "`--force` retrained although" in card


def assert_a_forced_promotion_is_judged_on_the_champions_own_test_rows(
    client: MlflowClient, summary: dict, champions: pd.DataFrame, tonights: pd.DataFrame,
) -> None:
    """The forced night's promotion was judged on the test rows of the champion's own table, never on the reviews
    added (which the challenger learned beside): those are scored apart, and the sentence, the parent run's metrics
    and the version's card say so."""
    tested = tonights[tonights["split"] == "test"]
    own = tested["text"].isin(champions.loc[champions["split"] == "test", "text"])
    assert summary["promotion_rows"] == own.sum() > 0
    apart = {rows["standing"]: rows for rows in summary["rows_apart"]}
    assert sum(rows["rows"] for rows in apart.values()) == (~own).sum() == (tested["row"] >= 600).sum()
    assert apart["foreign"]["rows"] > 0 and set(apart) <= {"foreign", "added"}
    assert f"on the champion's own {own.sum()} test rows" in summary["promotion"]
    assert "apart, deciding nothing: " in summary["promotion"]
    metrics = client.get_run(summary["mlflow_run_id"]).data.metrics
    assert metrics["apart.foreign.rows"] == apart["foreign"]["rows"]
    assert metrics["apart.foreign.champion"] == pytest.approx(apart["foreign"]["champion"])
    card = client.get_model_version("depthfinder", summary["model"]["version"]).description
    assert "**The test rows of the promotion**" in card and "apart: added since and flagged foreign" in card
