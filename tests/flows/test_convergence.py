"""Candidates still improving when their budget ends: flagged, and extended from their last state when asked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mlflow import MlflowClient

from depthfinder.cli.main import main
from depthfinder.selection.candidate import still_rising
from tests.flows.test_retrain import TINY

EXTENDED = TINY.replace("crossfit: off}", "crossfit: off, extend: {unconverged: true, epochs: 2}, check_lr: true}")


def test_rising_candidates_get_more_epochs_from_where_they_stopped(prefect_server, tmp_path, monkeypatch) -> None:
    (tmp_path / "tiny.yaml").write_text(EXTENDED)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--config", "tiny.yaml", "--summary-json", "summary.json"]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")

    extended = []
    for candidate in summary["candidates"]:
        folder = Path(candidate["bundle"]).parent
        at_budget = json.loads((folder / "result-epochs-3.json").read_text())
        if at_budget["not_converged"] or still_rising(at_budget["history"], window=2, gain=0.01):
            extended.append(candidate["depth"])
            assert candidate["epochs"] == 5 and len(candidate["history"]) == 5
            assert candidate["history"][:3] == at_budget["history"]  # continued, not retrained
            assert candidate["bundle"].endswith("bundle-epochs-5")
        else:
            assert candidate["epochs"] == 3
        assert candidate["not_converged"] == still_rising(candidate["history"], window=2, gain=0.01)
        tags = client.get_run(candidate["mlflow_run_id"]).data.tags
        assert tags["depthfinder.converged"] == ("false" if candidate["not_converged"] else "true")
    assert extended, "three epochs on the tiny task should leave a depth still improving"

    (check,) = summary["lr_check"]  # the shallowest and deepest depth at 1/3, 1 and 3 times the rate
    assert (check["family"], check["epochs"]) == ("scratch", 3)
    assert sorted((t["depth"], round(t["learning_rate"], 6)) for t in check["trials"]) == [
        (depth, rate) for depth in (1, 2) for rate in (0.001, 0.003, 0.009)]
    for depth in (1, 2):
        tried = {round(t["learning_rate"], 6): t["metric"] for t in check["trials"] if t["depth"] == depth}
        assert check["best_rates"][str(depth)] == pytest.approx(max(tried, key=tried.get))
        (candidate,) = [c for c in summary["candidates"] if c["depth"] == depth]
        at_budget = json.loads((Path(candidate["bundle"]).parent / "result-epochs-3.json").read_text())
        assert tried[0.003] == at_budget["metrics"]["macro_f1"]  # the 1x trial is the sweep's own candidate
    assert check["moved"] == (check["best_rates"]["1"] != check["best_rates"]["2"])
    assert check["sentence"].startswith("learning-rate check (scratch, 3 epochs at 0.001, 0.003, 0.009): best ")
    rising = [s for s in summary["rule"]["scores"] if s["not_converged"]]
    assert ("not converged:" in summary["rule"]["reason"]) == any(
        s["depth"] in (summary["rule"]["best_depth"], summary["selected_depth"]) for s in rising
    )
