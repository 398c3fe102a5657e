"""The nightly deployment on a real Prefect server: its UI form, its schedule, and a run from it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yaml
from prefect import get_client
from prefect.deployments import run_deployment
from prefect.runner import Runner

from depthfinder.flows.config import TRACKING_URI, RunConfig, load_run_config
from depthfinder.flows.deploy import NIGHTLY, NIGHTLY_CRON, nightly_deployment, server_problem
from tests.flows.test_retrain import TINY

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def deployment(prefect_server, tmp_path_factory):
    folder = tmp_path_factory.mktemp("nightly")
    (folder / "tiny.yaml").write_text(TINY)
    config = load_run_config(folder / "tiny.yaml", {"registry": {"workdir": folder / "work",
                                                                 "tracking_uri": f"sqlite:///{folder / 'mlflow.db'}"}})
    runner_deployment = nightly_deployment(config, cron="0 2 * * *", timezone="Europe/Berlin")
    deployment_id = runner_deployment.apply()
    with get_client(sync_client=True) as client:
        return folder, runner_deployment, client.read_deployment(deployment_id)


def _resolve(schema: dict, node: dict) -> dict:
    while "$ref" in node or "allOf" in node:
        ref = node["$ref"] if "$ref" in node else node["allOf"][0]["$ref"]
        node = schema["definitions"][ref.rsplit("/", 1)[-1]]
    return node


def test_the_parameters_render_as_a_form_with_descriptions(deployment) -> None:
    _, _, read = deployment
    schema = read.parameter_openapi_schema
    properties = schema["properties"]

    assert set(properties) == {"data", "audit", "changes", "model", "train", "sweep", "registry", "force"}
    sweep = _resolve(schema, properties["sweep"])["properties"]
    depths = next(option for option in sweep["depths"]["anyOf"] if option.get("type") == "array")
    assert depths["items"] == {"type": "integer"} and {"type": "null"} in sweep["depths"]["anyOf"]  # null: defaults
    families = next(option for option in sweep["families"]["anyOf"] if option.get("type") == "array")
    assert families["items"]["enum"] == ["scratch", "pretrained"]
    model = _resolve(schema, properties["model"])["properties"]
    checkpoints = next(option for option in model["pretrained"]["anyOf"] if option.get("type") == "array")
    assert checkpoints["items"]["type"] == "string"  # the form takes a list of checkpoints
    assert sweep["rule"]["enum"] == ["tolerance", "ratio", "pareto"]
    assert _resolve(schema, sweep["halving"])["properties"]["mode"]["enum"] == ["auto", "on", "off"]
    for section in ("sweep", "train", "model", "registry", "audit", "changes", "data"):
        fields = _resolve(schema, properties[section])["properties"]
        undescribed = [name for name, field in fields.items() if not field.get("description")]
        assert not undescribed, f"{section}: {undescribed} have no description for the UI"
    assert properties["force"]["type"] == "boolean"


def test_the_deployment_is_scheduled_nightly_in_its_time_zone_with_the_config_as_defaults(deployment) -> None:
    folder, _, read = deployment
    (schedule,) = read.schedules
    assert (schedule.schedule.cron, schedule.schedule.timezone) == ("0 2 * * *", "Europe/Berlin")
    assert read.name == NIGHTLY
    assert read.parameters["sweep"]["depths"] == [1, 2]
    assert read.parameters["sweep"]["extend"]["unconverged"] is True  # not set in the config: on at night
    assert read.parameters["changes"]["skip_minor"] is True  # likewise: minor changes do not retrain at night
    assert read.parameters["registry"]["workdir"] == str(folder / "work")  # absolute: runs may start elsewhere


def test_a_run_triggered_with_overridden_parameters_completes(deployment, monkeypatch) -> None:
    folder, runner_deployment, read = deployment
    monkeypatch.chdir(ROOT)  # where the deployment's entrypoint (flows/retrain.py) resolves
    overrides = {"sweep": read.parameters["sweep"] | {"depths": [1]}, "force": True}
    flow_run = run_deployment(read.id, parameters=overrides, timeout=0)

    runner = Runner(name="test-runner", query_seconds=1)
    runner.add_deployment(runner_deployment)
    asyncio.run(runner.start(run_once=True))

    with get_client(sync_client=True) as client:
        finished = client.read_flow_run(flow_run.id)
    assert finished.state.is_completed(), finished.state
    assert finished.parameters["sweep"]["depths"] == [1]
    summary = json.loads(next((folder / "mlruns").rglob("summary.json")).read_text())
    assert [c["depth"] for c in summary["candidates"]] == [1]


def test_no_reachable_server_is_explained(monkeypatch) -> None:
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings({PREFECT_API_URL: "http://127.0.0.1:9/api"}):
        problem = server_problem()
    assert "no Prefect server answers at http://127.0.0.1:9/api" in problem and "prefect server start" in problem


def test_prefect_yaml_declares_the_nightly_deployment() -> None:
    project = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    (nightly,) = [d for d in project["deployments"] if d["name"] == NIGHTLY]
    # A module path: Dask workers unpickle its tasks.
    assert nightly["entrypoint"] == "depthfinder.flows.retrain:retrain"
    assert nightly["schedules"][0]["cron"] == NIGHTLY_CRON and "timezone" in nightly["schedules"][0]
    assert nightly["work_pool"]["name"]
    RunConfig.model_validate({k: v for k, v in nightly["parameters"].items() if k != "force"})
    assert nightly["parameters"]["sweep"]["extend"]["unconverged"] is True  # as `depthfinder deploy` sets it
    assert nightly["parameters"]["changes"]["skip_minor"] is True
    assert nightly["parameters"]["registry"]["tracking_uri"] == TRACKING_URI  # YAML cannot import the constant


def test_scheduled_runs_get_absolute_paths_for_local_files_and_keep_hub_ids(tmp_path, monkeypatch) -> None:
    from depthfinder.flows.config import RunConfig
    from depthfinder.flows.deploy import absolute_paths

    monkeypatch.chdir(tmp_path)
    (tmp_path / "ckpt").mkdir()
    local = absolute_paths(RunConfig(data={"dataset": "topics"}, model={"pretrained": "ckpt"}))
    hub = absolute_paths(RunConfig(data={"dataset": "topics"}, model={"pretrained": "org/encoder"}))

    assert local.model.pretrained == [str(tmp_path / "ckpt")]
    assert hub.model.pretrained == ["org/encoder"]
    both = absolute_paths(RunConfig(data={"dataset": "topics"}, model={"pretrained": ["ckpt", "org/encoder"]}))
    assert both.model.pretrained == [str(tmp_path / "ckpt"), "org/encoder"]
    assert local.registry.workdir == tmp_path / ".depthfinder"


def test_the_audit_form_shows_what_a_user_sets_not_what_the_retrain_flow_hands_its_subflow() -> None:
    from prefect.utilities.callables import parameter_schema

    from depthfinder.flows.audit import audit_data

    assert set(parameter_schema(audit_data).properties) == {"data", "audit", "workdir", "data_docs"}
