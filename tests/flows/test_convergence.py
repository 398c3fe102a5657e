"""Candidates still improving when their budget ends: flagged, and extended from their last state when asked."""

from __future__ import annotations

import json
from pathlib import Path

from mlflow import MlflowClient

from encoder.selection.candidate import still_rising
from flows.cli import main
from tests.flows.test_retrain import TINY

EXTENDED = TINY.replace("sweep: {depths: [1, 2]}", "sweep: {depths: [1, 2], extend_unconverged: true, extend_epochs: 2}")


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
    rising = [s for s in summary["rule"]["scores"] if s["not_converged"]]
    assert ("not converged:" in summary["rule"]["reason"]) == any(
        s["depth"] in (summary["rule"]["best_depth"], summary["selected_depth"]) for s in rising
    )
