"""What a reviewer sees, in a real browser: the stack's nightly run's decision artifact in the Prefect UI and its
model card in the MLflow UI name the form `@champion` serves; a night the comparison with the champion stopped and
a night forced past that stop say so above the fold in both UIs' pages and lists; and no table cell on any of them
is cut, whether by an ellipsis or by passing the edge of the page.

Headless Chromium (Debian's `chromium` and `chromium-driver`) driven by Selenium, on the run the stack suite
trains anyway (the session's `nightly`) and three nights of a model of its own (`nights`: two trainings of one
depth), so this adds a few minutes.
"""

from __future__ import annotations

import os

import pandas as pd
import pytest
from mlflow import MlflowClient

from depthfinder.expectations.table.datasets import DATASETS
from depthfinder.runtime.stack import Stack
from tests.stack.browser import (
    CLOSE_ASSISTANT,
    CUT,
    TO_VERSIONS,
    chromium,
    headless,
    overflowing_cells,
    page_text,
    sign_in_to_mlflow,
    sign_in_to_prefect,
    table_cells,
    wait_for_cells,
    wait_for_text,
    wait_until_shown,
)
from tests.stack.conftest import api, form_parameters, trigger, unique, wait_final

pytestmark = [
    pytest.mark.stack, pytest.mark.slow,
    pytest.mark.skipif(chromium() is None, reason="no chromium and chromedriver on PATH (Debian: apt-get install "
                                                  "chromium chromium-driver)"),
]
SERVED = "serves the torch form"  # flows/card.py's served_sentence, as the UIs render its Markdown


@pytest.fixture(scope="module")
def browser():
    pytest.importorskip("selenium", reason="selenium is not installed (the dev extra)")
    with headless() as driver:
        yield driver


def test_the_decision_artifact_in_the_prefect_ui_names_the_served_form_and_cuts_no_cell(
    stack: Stack, nightly: tuple[str, dict], browser
) -> None:
    name, run = nightly
    assert run["state_type"] == "COMPLETED", run["state"]["message"]
    (decision,) = api(stack, "POST", "/artifacts/filter", {"artifacts": {
        "key": {"any_": ["depth-decision"]}, "flow_run_id": {"any_": [run["id"]]}}})
    ui = stack.prefect_api.removesuffix("/api")
    sign_in_to_prefect(browser, ui, os.environ["PREFECT_API_AUTH_STRING"])
    browser.get(f"{ui}/artifacts/artifact/{decision['id']}")

    wait_for_text(browser, "depth-decision", f"models:/{name}@champion", SERVED)
    cells = table_cells(browser)
    assert "val macro-F1" in cells  # the candidates' table is on the page...
    assert [cell for cell in cells if cell.endswith(CUT)] == []  # ...and no cell of it (or another) is cut
    assert overflowing_cells(browser) == []


def test_the_model_card_in_the_mlflow_ui_names_the_served_form_and_cuts_no_cell(
    stack: Stack, nightly: tuple[str, dict], browser
) -> None:
    name, run = nightly
    assert run["state_type"] == "COMPLETED", run["state"]["message"]
    sign_in_to_mlflow(browser, os.environ["MLFLOW_TRACKING_USERNAME"], os.environ["MLFLOW_TRACKING_PASSWORD"])
    browser.get(f"{stack.mlflow_uri}/#/models/{name}/versions/1")

    wait_for_text(browser, f"{name} version 1", f"models:/{name}@champion", SERVED)
    cells = table_cells(browser)
    assert "balanced_accuracy" in cells  # the card's scores table is on the page...
    assert [cell for cell in cells if cell.endswith(CUT)] == []  # ...and no cell of it (or another) is cut
    assert overflowing_cells(browser) == []


@pytest.fixture(scope="module")
def nights(stack: Stack, deployment: dict, tmp_path_factory) -> dict:
    """Three nights of a model of its own, triggered through the API: `first` (600 topics rows: version 1,
    champion), `stopped` (the same plus 150 arithmetic expressions labelled `sports`: another task, which the
    comparison with the champion stops) and `forced` (the same file with `force`: version 2, forced past the stop);
    the model's name and each night's final flow run."""
    name, folder = unique("browser"), tmp_path_factory.mktemp("nights")
    topics = DATASETS["topics"].generate(600, seed=1)
    foreign = DATASETS["nested-ops-2"].generate(150, seed=2).assign(label="sports")
    first, grown = folder / "first.csv", folder / "grown.csv"
    topics.to_csv(first, index=False)
    pd.concat([topics, foreign]).to_csv(grown, index=False)
    sweep = {"depths": [1], "runner": {"kind": "dask", "dask_address": stack.dask_address}}
    runs = {}
    for night, data, force in (("first", first, False), ("stopped", grown, False), ("forced", grown, True)):
        parameters = form_parameters(stack, folder / "work", name, data={"path": str(data)}, sweep=sweep, force=force)
        runs[night] = wait_final(stack, trigger(stack, deployment, parameters))
    return {"model": name, **runs}


def artifact_page(stack: Stack, flow_run: dict, key: str) -> str:
    """The Prefect UI's page of a flow run's artifact."""
    (found,) = api(stack, "POST", "/artifacts/filter", {"artifacts": {
        "key": {"any_": [key]}, "flow_run_id": {"any_": [flow_run["id"]]}}})
    return f"{stack.prefect_api.removesuffix('/api')}/artifacts/artifact/{found['id']}"


def test_a_stopped_night_and_a_forced_one_say_so_above_the_fold_in_the_prefect_ui(stack: Stack, nights,
                                                                                   browser) -> None:
    stopped, forced = nights["stopped"], nights["forced"]
    assert nights["first"]["state_type"] == forced["state_type"] == "COMPLETED", forced["state"]["message"]
    assert (stopped["state_type"], stopped["state_name"]) == ("FAILED", "Stopped")  # on purpose, not a crash
    assert stopped["state"]["message"].startswith("stopped: tonight's data is not what version 1 learned from")
    assert stopped["name"].startswith("stopped · ") and forced["name"].startswith("forced · ")
    ui = stack.prefect_api.removesuffix("/api")
    sign_in_to_prefect(browser, ui, os.environ["PREFECT_API_AUTH_STRING"])

    (why,) = [tag for tag in stopped["tags"] if tag.startswith("stopped: ")]
    assert "foreign_rows" in why
    browser.get(f"{ui}/runs/flow-run/{stopped['id']}")  # its name, its state, and a tag with what stopped it
    wait_until_shown(browser, stopped["name"], "Stopped", why)
    browser.get(f"{ui}/runs/flow-run/{forced['id']}")
    wait_until_shown(browser, forced["name"])
    browser.get(f"{ui}/runs")  # the runs list: each night by its name and its state
    wait_until_shown(browser, stopped["name"], forced["name"], "Stopped")
    browser.get(artifact_page(stack, forced, "what-changed"))  # its heading (the renderer splits it into pieces)
    wait_for_text(browser, "What changed since version 1: forced past stop")
    wait_until_shown(browser, "forced past stop")


@pytest.mark.parametrize(("night", "key"), [("stopped", "what-changed"), ("stopped", "foreign-rows"),
                                            ("forced", "what-changed"), ("forced", "audit-report"),
                                            ("forced", "depth-decision")])
def test_no_cell_of_a_stopped_or_forced_nights_artifact_is_cut(stack: Stack, nights, browser, night: str,
                                                                key: str) -> None:
    sign_in_to_prefect(browser, stack.prefect_api.removesuffix("/api"), os.environ["PREFECT_API_AUTH_STRING"])
    browser.get(artifact_page(stack, nights[night], key))

    wait_for_text(browser, key, "line" if key == "foreign-rows" else "verdict" if key != "depth-decision" else "depth")
    cells = wait_for_cells(browser)  # the key's own heading holds "depth": the table may render after it
    assert cells, f"{key} of the {night} night shows no table"
    assert overflowing_cells(browser) == []  # no cell passes its own edge, its table's or the page's
    assert [cell for cell in cells if cell.endswith(CUT)] == []
    if key == "foreign-rows":  # the label before the text, no empty likely_label
        assert cells[:4] == ["line", "row", "label", "text"] and "likely_label" not in cells


def test_the_mlflow_ui_tells_the_stopped_and_forced_nights_apart_in_its_lists(stack: Stack, nights, browser) -> None:
    name = nights["model"]
    sign_in_to_mlflow(browser, os.environ["MLFLOW_TRACKING_USERNAME"], os.environ["MLFLOW_TRACKING_PASSWORD"])
    experiment = MlflowClient(tracking_uri=stack.mlflow_uri).get_experiment_by_name(name).experiment_id

    browser.get(f"{stack.mlflow_uri}/#/experiments/{experiment}/runs")  # the run names' first 20 characters or so
    wait_for_text(browser, "stopped · ", "forced · ")
    browser.execute_script(CLOSE_ASSISTANT)
    wait_until_shown(browser, "stopped ·", "forced ·")
    browser.get(f"{stack.mlflow_uri}/#/models/{name}")
    wait_for_text(browser, "Versions", "Version 2")
    browser.execute_script(CLOSE_ASSISTANT + TO_VERSIONS)
    # The versions table: version 2's first tag and the first characters of its description.
    wait_until_shown(browser, "forced past stop", "Forced past a stop")
    shown = page_text(browser)
    # The registered model's tags: its alias moves read as lines (a new version is always challenger first).
    assert "challenger → version 2 (was 1), " in shown and '{"seq"' not in shown
