"""SIGINT, SIGTERM and SIGKILL at every phase of a night's retrain, then the same command again.

Night 1 registered version 1 on 600 rows; tonight's table has 200 more, so tonight compares, audits,
trains and registers. Each cell is a real `depthfinder run` process (tests/flows/interrupting.py) that
signals itself at one moment. Every cell must end within seconds with 130 / 143 (SIGKILL: killed),
one line and no traceback, no false "bad input"; whatever it ends with, nothing stays locked, and the
rerun completes with no run left RUNNING and no version without its judgement.

The cells in FAST run in `make test`, those in SLOW in `make test-slow` (both in `.ci/run`); the rest
are `exhaustive` (`make test-exhaustive`, about 25 minutes on a 2-core machine): the same code at other
moments, which tests/flows/test_interrupts.py covers where it matters most (training, judging).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mlflow import MlflowClient

from depthfinder.cli.main import main
from depthfinder.expectations.table.datasets import DATASETS
from depthfinder.runtime.lock import is_locked, lock_path
from depthfinder.tracking.registry import JUDGED, PENDING

ROOT = Path(__file__).resolve().parents[2]
CONFIG = """
data: {path: data.csv}
model: {d_model: 16, n_heads: 2, d_ff: 32, vocab_size: 300, max_len: 32}
train: {max_epochs: 3, min_epochs: 3, patience: 2, batch_size: 16, learning_rate: 0.003}
sweep: {depths: [1, 2], crossfit: off}
"""
# Night 1 trains briefly, so that tonight's challenger surely beats it and the aliases move.
NIGHT_1 = CONFIG.replace("max_epochs: 3, min_epochs: 3", "max_epochs: 1, min_epochs: 1")
COMMAND = ["run", "--config", "run.yaml", "--summary-json", "summary.json"]
ROWS_THEN, ROWS_NOW = 600, 800
MOMENTS = ["server", "prepare", "what-changed", "audit", "tokenizer", "training", "version", "registering", "alias",
           "summary"]
SIGNALS = {"SIGINT": 130, "SIGTERM": 143, "SIGKILL": -9}
FAST = {("server", "SIGTERM"), ("alias", "SIGTERM")}
SLOW = {("audit", "SIGINT"), ("version", "SIGKILL")}
# "Within seconds": from the signal to the process's end, with room for a loaded 2-core machine.
STOP_SECONDS = 30


@pytest.fixture(scope="module")
def night_1(prefect_server, tmp_path_factory) -> Path:
    """A folder whose version 1 is champion, trained briefly on 600 rows; tonight.csv holds those and 200 more,
    and run.yaml tonight's settings."""
    folder = tmp_path_factory.mktemp("night-1")
    table = DATASETS["topics"].generate(ROWS_NOW, 1)
    table.iloc[:ROWS_THEN].to_csv(folder / "data.csv", index=False)
    table.to_csv(folder / "tonight.csv", index=False)
    (folder / "run.yaml").write_text(NIGHT_1)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        assert main(COMMAND) == 0
    (folder / "run.yaml").write_text(CONFIG)
    return folder


def interrupted(night_1: Path, folder: Path, moment: str, how: str) -> tuple[subprocess.CompletedProcess, float]:
    """Tonight's run in a copy of night 1's folder, signalled at `moment`; the process and the seconds it lived
    after the signal."""
    shutil.copytree(night_1, folder)
    shutil.copy(folder / "tonight.csv", folder / "data.csv")
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "PREFECT_HOME": str(folder / "prefect-home")}
    if how == "SIGKILL" or moment == "server":  # its own temporary server (see test_interrupts.interrupted)
        environment.pop("PREFECT_API_URL", None)
    else:
        from prefect.settings import PREFECT_API_URL

        environment["PREFECT_API_URL"] = PREFECT_API_URL.value()
    command = [sys.executable, "-m", "tests.flows.interrupting", moment, how, *COMMAND]
    process = subprocess.run(command, cwd=folder, env=environment, capture_output=True, text=True, timeout=300,
                             start_new_session=True)
    ended = time.time()
    fired, at = (folder / "fired").read_text().split()
    assert fired == how, process.stderr[-3000:]
    return process, ended - float(at)


def unfinished(folder: Path) -> tuple[list[str], list[str]]:
    """Runs still RUNNING, and versions without their judgement, in the folder's store."""
    client = MlflowClient(tracking_uri=f"sqlite:///{folder / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("depthfinder")
    running = [run.info.run_name for run in client.search_runs([experiment.experiment_id])
               if run.info.status == "RUNNING"]
    pending = [str(v.version) for v in client.search_model_versions("name = 'depthfinder'")
               if v.tags.get(JUDGED) == PENDING]
    return running, pending


def cells() -> list:
    def marks(cell: tuple[str, str]) -> tuple:
        if cell in FAST:
            return ()
        return (pytest.mark.slow,) if cell in SLOW else (pytest.mark.slow, pytest.mark.exhaustive)

    return [pytest.param(moment, how, id=f"{moment}-{how}", marks=marks((moment, how)))
            for moment in MOMENTS for how in SIGNALS]


@pytest.mark.parametrize(("moment", "how"), cells())
def test_a_signal_at_any_moment_ends_the_run_cleanly_and_the_rerun_completes(
    night_1: Path, tmp_path: Path, moment: str, how: str, monkeypatch
) -> None:
    folder = tmp_path / "night-2"

    process, lived = interrupted(night_1, folder, moment, how)

    assert process.returncode == SIGNALS[how], process.stderr[-3000:]
    assert lived < STOP_SECONDS
    assert not is_locked(lock_path(folder / ".depthfinder", "depthfinder"))
    if how != "SIGKILL":
        lines = process.stderr.strip().splitlines()
        assert lines[-1].startswith(f"depthfinder: stopped by {how}"), process.stderr[-3000:]
        assert "Traceback" not in process.stderr
        assert [line for line in lines if line.startswith("depthfinder:")] == lines[-1:]  # no false "bad input"
        assert unfinished(folder)[1] == []  # a version it registered was judged, or deleted on the way out

    monkeypatch.chdir(folder)
    assert main(COMMAND) == 0

    assert unfinished(folder) == ([], [])
    summary = json.loads((folder / "summary.json").read_text())
    client = MlflowClient(tracking_uri=f"sqlite:///{folder / 'mlflow.db'}")
    champion = str(client.get_registered_model("depthfinder").aliases["champion"])
    assert champion != "1"  # tonight's model beat night 1's, in the interrupted run or in the rerun
    assert champion == summary["model"]["version"] or summary["promoted"] is False
