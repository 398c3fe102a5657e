"""What a reviewer sees, in a real browser: the stack's nightly run's decision artifact in the Prefect UI and its
model card in the MLflow UI name the form `@champion` serves, and no table cell on either is cut off.

Headless Chromium (Debian's `chromium` and `chromium-driver`) driven by Selenium, on the run the stack suite
trains anyway (the session's `nightly`), so this adds only the browser's time.
"""

from __future__ import annotations

import os

import pytest

from runtime.stack import Stack
from tests.stack.browser import (
    CUT,
    chromium,
    headless,
    sign_in_to_mlflow,
    sign_in_to_prefect,
    table_cells,
    wait_for_text,
)
from tests.stack.conftest import api

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
