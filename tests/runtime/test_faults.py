"""A command that fails for a fault says its cause in one line and names a log that holds the traces, which the
terminal never shows; progress lines still show."""

from __future__ import annotations

import contextlib
import errno
import io
import logging
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import depthfinder.cli.pipeline
from depthfinder.cli.main import main
from depthfinder.runtime import faults
from depthfinder.runtime.faults import FaultLog

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def console() -> io.StringIO:
    """A console handler of a library's logger, as Prefect's and MLflow's are."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("a_library")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield stream
    logger.removeHandler(handler)


def _fail() -> None:
    try:
        raise OSError(errno.EIO, "the store broke")
    except OSError:
        logging.getLogger("a_library").exception("writing to http://alice:secret@mlflow failed")


def test_errors_and_traces_are_kept_for_the_log_and_progress_lines_still_show(console, tmp_path: Path) -> None:
    faults = FaultLog()
    faults.withhold(tmp_path / "work")
    logger = logging.getLogger("a_library")
    logger.info("Task run 'train' - Finished in state Completed()")
    _fail()
    logger.warning("retrying", exc_info=OSError("a passing fault"))
    logger.info("Task run 'register' - Finished in state Completed()")

    try:
        raise RuntimeError("the run failed")
    except RuntimeError as ending:
        where = faults.write(ending)
    faults.close()
    logger.error("after the command: shown again")

    shown = console.getvalue().splitlines()
    assert shown == ["Task run 'train' - Finished in state Completed()",
                     "Task run 'register' - Finished in state Completed()", "after the command: shown again"]
    log = Path(where.removeprefix("the full trace is in "))
    assert log.parent == (tmp_path / "work" / "logs").absolute() and log.name.endswith(f"-{os.getpid()}.log")
    text = log.read_text()
    assert "Finished in state Completed()" in text and "OSError: [Errno 5] the store broke" in text
    assert "OSError: a passing fault" in text and "RuntimeError: the run failed" in text
    assert text.count("Traceback (most recent call last)") == 2
    assert "secret" not in text and "http://***@mlflow" in text  # redacted like every other line


def test_a_threads_traceback_goes_to_the_log_not_the_terminal(capsys, tmp_path: Path) -> None:
    faults = FaultLog()
    faults.withhold(tmp_path)
    worker = threading.Thread(target=lambda: 1 / 0, name="uploader")
    worker.start()
    worker.join()
    withheld, where = faults.withheld, faults.write()
    faults.close()

    assert "Traceback" not in capsys.readouterr().err
    assert withheld == 1
    text = Path(where.removeprefix("the full trace is in ")).read_text()
    assert "an error ended uploader" in text and "ZeroDivisionError" in text


def test_a_work_folder_that_cannot_take_the_log_leaves_it_in_the_temporary_folder(tmp_path: Path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    faults = FaultLog()
    faults.withhold(Path("/proc/nope"))

    where = faults.write(OSError(errno.ENOSPC, "No space left on device"))
    faults.close()

    assert where.startswith(f"the full trace is in {tmp_path / 'tmp' / 'depthfinder' / 'logs'}")


def test_a_fault_outside_a_run_is_one_line_naming_the_log_and_exit_1(tmp_path: Path, monkeypatch, capsys) -> None:
    """A fault that no handler expects (here: while listing the datasets) is not a traceback either."""
    monkeypatch.chdir(tmp_path)

    def broken(args) -> int:
        raise OSError(errno.EIO, "Input/output error", "big.parquet")

    monkeypatch.setattr(depthfinder.cli.pipeline, "datasets", broken)

    code = main(["datasets"])

    err = capsys.readouterr().err
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    head, _, where = err.strip().partition("; the full trace is in ")
    assert head == "depthfinder: OSError: [Errno 5] Input/output error: 'big.parquet'"
    assert "Traceback" in Path(where).read_text() and Path(where).parent == (tmp_path / ".depthfinder" / "logs")


@pytest.mark.parametrize(("limit", "said"), [
    (3000 * 2**10, "mlflow.db would grow past the largest file this process may write (3000 KiB: ulimit -f)"),
    (None, "mlflow.db would grow past the largest file its file system takes"),
])
def test_a_file_at_the_file_size_limit_is_named_with_the_limit(limit: int | None, said: str, monkeypatch) -> None:
    monkeypatch.setattr(faults, "file_size_limit", lambda: limit)
    try:
        try:
            raise OSError(errno.EFBIG, "File too large", "mlflow.db")
        except OSError as cause:
            raise RuntimeError("Task run encountered an exception") from cause
    except RuntimeError as error:
        line = faults.cause_of("Flow run encountered an exception", error)

    assert line == f"{said}; raise the limit and run the same command again: what finished is kept"


CONFIG = """
data: {dataset: topics, dataset_rows: 600}
model: {d_model: 16, n_heads: 2, d_ff: 32, vocab_size: 300, max_len: 32}
train: {max_epochs: 2, min_epochs: 2, patience: 2, batch_size: 16}
sweep: {depths: [1]}
"""
# `depthfinder run` where the disk fills up as the audit's Data Docs are logged, MLflow logging its error (with a
# trace, on its own console handler) as it does when SQLAlchemy fails.
FILLS_UP = """
import errno, logging, sys
import depthfinder.tracking.reports
from depthfinder.cli.main import main

def full(client, run_id, local_dir, artifact_path):
    try:
        raise OSError(errno.ENOSPC, "No space left on device", local_dir)
    except OSError:
        logging.getLogger("mlflow.store.db.utils").exception("SQLAlchemy database error. The following exception "
                                                               "is caught.")
        raise

depthfinder.tracking.reports.log_folder = full  # where the audit's Data Docs are logged
sys.exit(main(sys.argv[1:]))
"""


def test_a_run_that_fails_for_a_fault_says_its_cause_in_one_line_and_keeps_the_traces_in_a_log(
    prefect_server, tmp_path: Path
) -> None:
    from prefect.settings import PREFECT_API_URL

    (tmp_path / "run.yaml").write_text(CONFIG)
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "PREFECT_API_URL": PREFECT_API_URL.value()}
    done = subprocess.run([sys.executable, "-c", FILLS_UP, "run", "--config", "run.yaml"], cwd=tmp_path,
                          env=environment, capture_output=True, text=True, timeout=300)

    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1, done.stderr[-3000:]
    assert "Traceback" not in done.stderr and not [line for line in lines if "ERROR" in line], done.stderr
    assert [line for line in lines if line.startswith("depthfinder:")] == lines[-1:]
    assert any("Finished in state Completed()" in line for line in lines)  # progress still shows
    cause, _, where = lines[-1].partition("; the full trace is in ")
    assert cause.startswith("depthfinder: the run failed: no space left on device under ")
    log = Path(where)
    assert log.parent == tmp_path / ".depthfinder" / "logs"
    text = log.read_text()
    assert "SQLAlchemy database error" in text and "OSError: [Errno 28] No space left on device" in text
    assert "Traceback (most recent call last)" in text
    with contextlib.closing(sqlite3.connect(tmp_path / "mlflow.db")) as store:
        assert store.execute("SELECT COUNT(*) FROM registered_models").fetchone() == (0,)
        assert store.execute("SELECT status FROM runs").fetchall() == [("FAILED",)]


def _limited(limit: int) -> None:
    """In the child, before exec: no file may grow past `limit` bytes (writes beyond fail with EFBIG)."""
    import resource
    import signal

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


@pytest.mark.slow
def test_a_run_at_the_file_size_limit_says_so_in_one_line_and_the_rerun_completes(tmp_path: Path) -> None:
    """A fresh Prefect home and MLflow store under `ulimit -f 3000`: the temporary server's database outgrows it."""
    (tmp_path / "run.yaml").write_text(CONFIG)
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path), "PREFECT_HOME": str(tmp_path / "p")}
    environment.pop("PREFECT_API_URL", None)
    command = [sys.executable, "-m", "depthfinder", "run", "--config", "run.yaml"]

    first = subprocess.run(command, cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=600,
                           preexec_fn=lambda: _limited(3000 * 2**10))

    lines = first.stderr.strip().splitlines()
    assert first.returncode == 1, first.stderr[-3000:]
    assert "Traceback" not in first.stderr and [line for line in lines if line.startswith("depthfinder:")] == lines[-1:]
    assert "(3000 KiB: ulimit -f)" in lines[-1] or "no file over 3000 KiB: ulimit -f" in lines[-1], lines[-1]
    assert "; the full trace is in " in lines[-1]

    second = subprocess.run(command, cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr[-3000:]


@pytest.mark.slow  # the store's creation race itself: tests/tracking/test_store.py, in make test
def test_two_runs_of_different_models_started_together_on_a_new_store_both_succeed(prefect_server, tmp_path):
    from prefect.settings import PREFECT_API_URL

    (tmp_path / "run.yaml").write_text(CONFIG)
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "PREFECT_API_URL": PREFECT_API_URL.value()}
    names = ("first", "second")
    runs = [subprocess.Popen([sys.executable, "-m", "depthfinder", "run", "--config", "run.yaml", "--model-name", name],
                             cwd=tmp_path, env=environment, stdout=subprocess.DEVNULL,
                             stderr=(tmp_path / f"{name}.err").open("w")) for name in names]
    codes = [run.wait(timeout=600) for run in runs]

    assert codes == [0, 0], [(tmp_path / f"{name}.err").read_text()[-2000:] for name in names]
    with contextlib.closing(sqlite3.connect(tmp_path / "mlflow.db")) as store:
        assert sorted(store.execute("SELECT name FROM registered_models")) == [("first",), ("second",)]
