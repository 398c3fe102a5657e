"""Successive halving against the full grid on the same built-in data, each in its own folder."""

from __future__ import annotations

import json

import pytest
from mlflow import MlflowClient

from depthfinder.cli.main import main
from tests.flows.test_retrain import TINY

FOUR_DEPTHS = (
    TINY.replace("max_epochs: 3", "max_epochs: 4")
    .replace("sweep: {depths: [1, 2], crossfit: off}",
             "sweep: {depths: [1, 2, 3, 4], crossfit: off, halving: {mode: HALVING, epochs: 2}}")
)


@pytest.fixture(scope="module")
def sweeps(prefect_server, tmp_path_factory) -> dict[str, tuple[dict, MlflowClient]]:
    runs = {}
    for halving in ("off", "auto"):
        folder = tmp_path_factory.mktemp(f"halving-{halving}")
        (folder / "sweep.yaml").write_text(FOUR_DEPTHS.replace("HALVING", halving))
        with pytest.MonkeyPatch.context() as patch:
            patch.chdir(folder)
            assert main(["run", "--config", "sweep.yaml", "--summary-json", "summary.json"]) == 0
        summary = json.loads((folder / "summary.json").read_text())
        runs[halving] = summary, MlflowClient(tracking_uri=f"sqlite:///{folder / 'mlflow.db'}")
    return runs


def test_halving_prunes_half_the_depths_after_the_first_budget(sweeps) -> None:
    summary, client = sweeps["auto"]
    pruned = [c for c in summary["candidates"] if c["status"] == "pruned"]
    finished = [c for c in summary["candidates"] if c["status"] == "trained"]

    (rung,) = summary["halving"]["rungs"]
    assert len(pruned) == len(finished) == 2  # 2 epochs are not two patience windows: no late bloomer judged
    assert all(c["epochs"] == 2 for c in pruned)  # the budget each used
    assert all(c["epochs"] > 2 for c in finished)
    assert rung == {"family": "scratch", "epochs": 2, "depths": [1, 2, 3, 4],
                    "kept": sorted(c["depth"] for c in finished), "late_bloomers": [], "outclassed": []}
    assert 0 < summary["halving"]["saved_fraction"] < 1
    assert summary["halving"]["train_seconds"] < summary["halving"]["full_grid_train_seconds"]
    for candidate in pruned:
        assert client.get_run(candidate["mlflow_run_id"]).data.tags["depthfinder.status"] == "pruned"
    assert "not considered" in summary["rule"]["reason"] and "pruned" in summary["rule"]["reason"]


def test_the_survivors_end_exactly_as_in_the_full_grid_and_the_choice_is_the_same(sweeps) -> None:
    halved, _ = sweeps["auto"]
    full, _ = sweeps["off"]
    full_by_depth = {c["depth"]: c for c in full["candidates"]}

    assert full["halving"] is None and all(c["status"] == "trained" for c in full["candidates"])
    for candidate in halved["candidates"]:
        if candidate["status"] == "trained":  # continued from its rung checkpoint, not retrained
            assert candidate["metrics"] == full_by_depth[candidate["depth"]]["metrics"]
            assert candidate["epochs"] == full_by_depth[candidate["depth"]]["epochs"]
    assert halved["selected_depth"] == full["selected_depth"]
