"""What a reviewer sees of last night's retrain, read back through the Prefect API and the MLflow client: a flow run
named for its model and data and tagged with the outcome, its state's message the outcome; a parent run named the
same with the chosen depth's scores as metrics and the model card as its note; child runs that name their night;
short tags everywhere (no value above TAG_LIMIT characters)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mlflow import MlflowClient

from depthfinder.cli.main import main
from tests.flows.prefect_api import artifact

CONFIG = """
data: {dataset: topics, dataset_rows: 400}
model: {d_model: 16, n_heads: 2, d_ff: 32, vocab_size: 300, max_len: 32}
train: {max_epochs: 2, min_epochs: 2, batch_size: 32, learning_rate: 0.003}
sweep: {depths: [1, 2], crossfit: off}
"""
# The longest tag value the MLflow UI shows whole: its runs table's tag columns and the version page's tag table
# cut longer values at about this many characters at their default widths. Longer text goes to descriptions.
TAG_LIMIT = 60
# Tags that hold data, not words for a reader: the promotion history's records (the registered model's
# description shows them as a table) and MLflow's own.
DATA_TAGS = ("depthfinder.move.", "mlflow.")


@pytest.fixture(scope="module")
def night(prefect_server, tmp_path_factory) -> tuple[Path, dict]:
    folder = tmp_path_factory.mktemp("review")
    (folder / "run.yaml").write_text(CONFIG)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        assert main(["run", "--config", "run.yaml", "--model-name", "ui", "--summary-json", "s.json"]) == 0
    return folder, json.loads((folder / "s.json").read_text())


def test_the_flow_run_is_named_for_its_model_and_data_and_tagged_with_the_outcome(night) -> None:
    from prefect import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterTags

    _, summary = night
    with get_client(sync_client=True) as client:
        (run,) = client.read_flow_runs(flow_run_filter=FlowRunFilter(tags=FlowRunFilterTags(all_=["model:ui"])))

    assert run.name == f"ui · topics · {summary['data_hash'][:4]}"
    chosen = f"depth-{summary['selected_depth']}"
    assert {"model:ui", chosen, "promoted"} <= set(run.tags)
    assert len({"audit-passed", "audit-passed-with-warnings"} & set(run.tags)) == 1
    assert run.state.message == (f"depth {summary['selected_depth']} registered as ui/1, promoted: "
                                 f"{summary['promotion']}")
    # Artifact descriptions say the outcome first (the Prefect UI's artifact cards show about 35 characters).
    depth = summary["selected_depth"]
    assert artifact(run.id, "depth-decision").description == f"Depth {depth} registered as ui/1, promoted"
    assert artifact(run.id, "audit-report").description.startswith("Passed")


def test_the_audit_is_the_audit_flow_run_inside_the_night_on_the_table_the_night_prepared(night) -> None:
    """The retrain runs the audit as the audit flow, a subflow handed the prepared table and the MLflow parent run:
    it prepares nothing again, records the report on that run, and its artifacts are on the night's page, once."""
    from prefect import get_client
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterId,
        FlowRunFilterParentFlowRunId,
        FlowRunFilterTags,
    )

    _, summary = night
    with get_client(sync_client=True) as client:
        (run,) = client.read_flow_runs(flow_run_filter=FlowRunFilter(tags=FlowRunFilterTags(all_=["model:ui"])))
        (audit,) = client.read_flow_runs(flow_run_filter=FlowRunFilter(
            parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[run.id])))
        steps = {task.name.rsplit("-", 1)[0] for task in client.read_task_runs(
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[audit.id])))}
        flow_name = client.read_flow(audit.flow_id).name
        own_artifacts = client.read_artifacts(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[audit.id])))

    assert flow_name == "audit" and audit.state.is_completed()
    assert audit.parameters["parent_run"]["run_id"] == summary["mlflow_run_id"]
    assert audit.parameters["dataset"]["data_hash"] == summary["data_hash"]
    assert steps == {"audit_dataset", "log_audit"}  # the table is not prepared again
    assert own_artifacts == []
    assert artifact(run.id, "audit-report").description.startswith("Passed")  # exactly one, on the night's page


def test_mlflow_shows_the_night_the_scores_and_the_card_and_only_short_tags(night) -> None:
    folder, summary = night
    client = MlflowClient(tracking_uri=f"sqlite:///{folder / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("depthfinder")
    runs = client.search_runs([experiment.experiment_id])
    (parent,) = [run for run in runs if "mlflow.parentRunId" not in run.data.tags]
    children = [run for run in runs if "mlflow.parentRunId" in run.data.tags]

    assert parent.info.run_name == f"ui · topics · {summary['data_hash'][:4]}"
    assert all(run.info.run_name.endswith(f" · {summary['data_hash'][:4]}") for run in children)
    chosen = next(c for c in summary["candidates"] if c["depth"] == summary["selected_depth"])
    assert parent.data.metrics["chosen.val.macro_f1"] == pytest.approx(chosen["metrics"]["macro_f1"])
    assert parent.data.metrics["chosen.test.macro_f1"] == pytest.approx(chosen["test_metrics"]["macro_f1"])
    assert parent.data.metrics["challenger.test.macro_f1"] == pytest.approx(summary["challenger_test_metrics"][
        "macro_f1"])
    assert summary["rule"]["reason"] in parent.data.tags["mlflow.note.content"]
    # Settings left null are logged as the run applied them (`depthfinder run`: off), not as None.
    assert (parent.data.params["changes.skip_minor"], parent.data.params["sweep.extend.unconverged"]) == (
        "False", "False")
    version = client.get_model_version("ui", "1")
    served = next(line for line in version.description.splitlines() if line.startswith("**Served form.**"))
    torch_form = summary["deployment"]["variants"][0]
    assert "`models:/ui@champion` (version 1;" in served and "serves the **torch** form" in served
    assert (f"test macro_f1 {torch_form['metrics']['macro_f1']:.3f} [{torch_form['metric_low']:.3f}, "
            f"{torch_form['metric_high']:.3f}]") in served
    registered = client.get_registered_model("ui")
    tags = [*[(run.info.run_name, run.data.tags) for run in runs], ("version 1", version.tags),
            ("registered model", registered.tags)]
    long = [(where, key, value) for where, found in tags for key, value in found.items()
            if not key.startswith(DATA_TAGS) and len(value) > TAG_LIMIT]
    assert long == []
