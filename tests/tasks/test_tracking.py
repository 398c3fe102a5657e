"""Tasks that talk to MLflow retry a passing fault with backoff, and never bad input."""

from __future__ import annotations

import pytest
from mlflow import MlflowClient
from prefect import flow

from depthfinder.tasks.registry import find_unchanged_model


def test_a_passing_fault_is_retried_and_bad_input_is_not(prefect_server, tmp_path, monkeypatch) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    calls: list[str] = []
    real = MlflowClient.get_registered_model
    failures = {"restart": ConnectionError("the tracking server restarted"), "bad": ValueError("no such name")}

    def flaky(self, name: str):
        calls.append(name)
        if calls.count(name) == 1 and name in failures:
            raise failures[name]
        return real(self, name)

    monkeypatch.setattr(MlflowClient, "get_registered_model", flaky)

    @flow
    def look(name: str):
        return find_unchanged_model(uri, name, {"data_hash": "x"})

    assert look("restart") is None  # nothing registered: found out on the second attempt
    assert calls.count("restart") == 2
    with pytest.raises(ValueError, match="no such name"):
        look("bad")
    assert calls.count("bad") == 1
