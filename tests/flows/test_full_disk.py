"""A disk that fills up during a run: one line names the folder that is full, nothing is retried in vain, and once
there is space the same command completes with no run left RUNNING.

The real case runs the CLI on a 1.4 MB tmpfs in a mount namespace of its own (`unshare`; slow, skipped where
namespaces are not allowed); the unit tests below it cover the same decisions on errors made in the test.
"""

from __future__ import annotations

import errno
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from depthfinder.cli.pipeline import folders_written
from depthfinder.flows.config import RunConfig
from depthfinder.runtime.faults import cause_of, full_disk

ROOT = Path(__file__).resolve().parents[2]
CONFIG = """
data: {dataset: topics, dataset_rows: 600}
model: {d_model: 16, n_heads: 2, d_ff: 32, vocab_size: 300, max_len: 32}
train: {max_epochs: 2, min_epochs: 2, patience: 2, batch_size: 16}
sweep: {depths: [1]}
"""
STATUSES = ("import sqlite3; "
            "print(sorted(r[0] for r in sqlite3.connect('store/mlflow.db').execute('select status from runs')))")


def namespaces_allowed() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
                           capture_output=True, timeout=30)
    return probe.returncode == 0


@pytest.mark.slow
@pytest.mark.exhaustive  # the unit tests below cover what it checks, in `make test`
@pytest.mark.skipif(not namespaces_allowed(), reason="no mount namespace here (unshare -rm, tmpfs) to fill")
def test_a_store_that_fills_up_is_named_and_the_rerun_completes_once_there_is_space(tmp_path: Path) -> None:
    (tmp_path / "run.yaml").write_text(CONFIG)
    (tmp_path / "store").mkdir()
    run = f"{sys.executable} -m depthfinder.cli run --config run.yaml --tracking-uri sqlite:///store/mlflow.db"
    script = (
        "mount -t tmpfs -o size=1400k tmpfs store\n"
        f"{run} > first.out 2> first.err; echo $? > first.code\n"
        f'{sys.executable} -c "{STATUSES}" > first.runs\n'
        "mount -o remount,size=32m store\n"
        f"{run} > second.out 2> second.err; echo $? > second.code\n"
        f'{sys.executable} -c "{STATUSES}" > second.runs\n'
    )
    subprocess.run(["unshare", "-rm", "sh", "-c", script], cwd=tmp_path, timeout=600, check=True,
                   env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})

    read = lambda name: (tmp_path / name).read_text()  # noqa: E731
    assert read("first.code").strip() == "1", read("first.err")[-3000:]
    lines = read("first.err").strip().splitlines()
    assert lines[-1].startswith(f"depthfinder: the run failed: no space left on device under {tmp_path / 'store'} (")
    assert "; the full trace is in " in lines[-1]
    assert "Traceback" not in read("first.err") and not [line for line in lines if "ERROR" in line]
    assert "RUNNING" not in read("first.runs")  # the parent run ended FAILED, or nothing was written
    assert read("second.code").strip() == "0", read("second.err")[-3000:]
    assert "RUNNING" not in read("second.runs")


@pytest.mark.parametrize(("error", "found"), [
    (OSError(errno.ENOSPC, "No space left on device"), True),
    (RuntimeError("wrapped"), False),
    (ValueError("(sqlite3.OperationalError) database or disk is full"), True),
])
def test_a_full_disk_is_found_among_the_causes_of_an_error(error: BaseException, found: bool) -> None:
    try:
        try:
            raise error
        except BaseException as inner:
            raise RuntimeError("the task failed") from inner
    except RuntimeError as outer:
        assert (full_disk(outer) is error) == found


def test_a_full_disk_names_the_fullest_folder_the_run_writes_to(tmp_path: Path, monkeypatch) -> None:
    config = RunConfig.model_validate({"data": {"dataset": "topics"}, "registry": {
        "tracking_uri": f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}", "workdir": str(tmp_path / "work")}})
    for folder in ("store", "work"):
        (tmp_path / folder).mkdir()
    free = {tmp_path / "store": 10_000, tmp_path / "work": 10**9}
    monkeypatch.setattr(shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(0, 0, free[Path(path)]))
    error = OSError(errno.ENOSPC, "No space left on device", "a.txt", None, str(tmp_path / "store" / "b.txt"))

    line = cause_of("Flow run encountered an exception", error, folders_written(config))

    assert line.startswith(f"no space left on device under {tmp_path / 'store'} (10 KiB free)")
    free[tmp_path / "store"] = 10**9  # no folder looks full: the file the error names
    line = cause_of(None, error, folders_written(config))
    assert line.startswith(f"no space left on device under {tmp_path / 'store' / 'b.txt'}")
