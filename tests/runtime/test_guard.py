"""The process guard sets a process up once, however many guards nest: the CLI's and the flow's never twice."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from depthfinder.runtime.environment import OPENMP_ENVIRONMENT
from depthfinder.runtime.faults import FAULTS
from depthfinder.runtime.guard import process_guard
from depthfinder.runtime.interrupt import STOP

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def sigint_live() -> Iterator[None]:
    """SIGINT at Python's default for the test: a background job (`make test &`, nohup, some CI runners) starts with
    it ignored, which the guard rightly leaves ignored, so its stop handler would not be there to see."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("sigint_live")
def test_a_guard_inside_another_sets_nothing_up_again(tmp_path: Path) -> None:
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    with process_guard() as outer:
        handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
        factory = logging.getLogRecordFactory()
        FAULTS.withhold(tmp_path)
        with process_guard() as inner:
            assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers
            assert logging.getLogRecordFactory() is factory
        assert (outer.outermost, inner.outermost) == (True, False)
        assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers
        assert FAULTS.folder == tmp_path  # the inner guard's end leaves the fault log to the outer one
    assert all(getattr(handler, "stops", False) for handler in handlers)
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
    assert FAULTS.folder is None
    record = logging.getLogRecordFactory()("x", logging.INFO, "", 0, "to http://alice:pw@host", None, None)
    assert record.getMessage() == "to http://***@host"  # the first guard made every record redacted


class Terminated(Exception):
    pass


def test_a_guard_inside_a_flow_run_takes_sigterm_back_from_prefect_and_hands_it_on() -> None:
    """Prefect takes SIGTERM for a flow run (TerminationSignal); the flow's guard stops training first."""

    def prefects(signum, frame) -> None:
        raise Terminated

    with process_guard():
        outers = signal.getsignal(signal.SIGTERM)
        signal.signal(signal.SIGTERM, prefects)
        try:
            with process_guard() as inner, pytest.raises(Terminated):
                assert not inner.outermost and getattr(signal.getsignal(signal.SIGTERM), "stops", False)
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)
            assert STOP.requested and STOP.signal_name == "SIGTERM"
            assert signal.getsignal(signal.SIGTERM) is prefects
        finally:
            STOP.clear()
            signal.signal(signal.SIGTERM, outers)


OPENMP_AT_TORCH = """
import os, sys
seen = {}

class Watch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" and "omp" not in seen:
            seen["omp"] = os.environ.get("GOMP_SPINCOUNT")
        return None

sys.meta_path.insert(0, Watch())
from depthfinder.cli.main import main
imported = "torch" in sys.modules
code = main(["predict", "--model", "models:/m@champion", "--text", "hi"])
print(imported, code, seen.get("omp"), os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"])
"""


@pytest.mark.parametrize(("given", "expected"), [(None, OPENMP_ENVIRONMENT["GOMP_SPINCOUNT"]), ("300000", "300000")])
def test_the_cli_sets_openmps_spin_before_torch_loads_and_a_users_value_wins(
    tmp_path: Path, given: str | None, expected: str
) -> None:
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("GOMP_SPINCOUNT", "PREFECT_SERVER_ANALYTICS_ENABLED")}
    environment["PYTHONPATH"] = str(ROOT)
    if given is not None:
        environment["GOMP_SPINCOUNT"] = given
    done = subprocess.run([sys.executable, "-c", OPENMP_AT_TORCH], cwd=tmp_path, env=environment,
                          capture_output=True, text=True, timeout=300)

    assert done.stdout.split() == ["False", "2", expected, "false"], done.stderr[-2000:]  # 2: no MLflow database


def test_the_flow_checks_a_run_and_takes_its_credentials_only_when_nothing_above_it_did(monkeypatch) -> None:
    import depthfinder.flows.retrain
    from depthfinder.expectations.table.config import DataConfig
    from depthfinder.flows.config import RegistryConfig

    checked = []

    def prepared(*args, **kwargs):
        raise LookupError("stop before any work")

    monkeypatch.setattr(depthfinder.flows.retrain, "check_run",
                        lambda config: checked.append(config.registry.tracking_uri))
    monkeypatch.setattr(depthfinder.flows.retrain, "prepare_dataset", prepared)
    for variable in ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD"):
        monkeypatch.setenv(variable, "")  # and back as it was after the test
    registry = RegistryConfig(tracking_uri="http://alice:pw@mlflow.example:5000")

    with pytest.raises(LookupError):  # started by a worker: nothing checked it before
        depthfinder.flows.retrain.retrain.fn(DataConfig(dataset="topics"), registry=registry)
    assert checked == ["http://mlflow.example:5000"] and os.environ["MLFLOW_TRACKING_PASSWORD"] == "pw"

    with process_guard(), pytest.raises(LookupError):  # started by the CLI, which checked it
        depthfinder.flows.retrain.retrain.fn(DataConfig(dataset="topics"), registry=registry)
    assert len(checked) == 1


def test_a_cli_run_is_checked_once(prefect_server, tmp_path: Path, monkeypatch, capsys) -> None:
    import depthfinder.flows.preflight
    import depthfinder.flows.retrain
    from depthfinder.cli.main import main

    calls = []

    def prepared(*args, **kwargs):
        raise LookupError("stop before any work")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(depthfinder.flows.preflight, "check_run", lambda config, outputs=(): calls.append("cli"))
    monkeypatch.setattr(depthfinder.flows.retrain, "check_run", lambda config: calls.append("flow"))
    monkeypatch.setattr(depthfinder.flows.retrain, "prepare_dataset", prepared)

    assert main(["run", "--dataset", "topics"]) == 1

    assert calls == ["cli"]
    assert "stop before any work" in capsys.readouterr().err
