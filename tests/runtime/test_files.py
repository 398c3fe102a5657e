"""Files written whole: two writers of one file at once both finish, a failed write leaves nothing, and what a killed
writer left is removed by the next one."""

from __future__ import annotations

import hashlib
import socket
import stat
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from depthfinder.runtime.files import write_text_whole, written_whole
from depthfinder.runtime.liveness import ProcessIdentity


def test_two_writers_of_one_file_at_once_both_finish(tmp_path: Path) -> None:
    # Two runs preparing the same table: each opens its write before the other renames. A temporary name shared by
    # both let the first rename take the file from under the second (FileNotFoundError in CI's stack suite).
    path = tmp_path / "data" / "b1de86399e6fff1c.parquet"
    with written_whole(path) as first:
        first.write_text("first", encoding="utf-8")
        with written_whole(path) as second:
            assert second != first
            second.write_text("second", encoding="utf-8")
        assert path.read_text(encoding="utf-8") == "second"
    assert path.read_text(encoding="utf-8") == "first"
    assert [entry.name for entry in path.parent.iterdir()] == [path.name]


def test_a_write_that_fails_leaves_the_old_file_and_no_partial_one(tmp_path: Path) -> None:
    path = write_text_whole(tmp_path / "result.json", "old")
    with pytest.raises(RuntimeError), written_whole(path) as partial:
        partial.write_text("half", encoding="utf-8")
        raise RuntimeError("killed mid-write")
    assert path.read_text(encoding="utf-8") == "old"
    assert [entry.name for entry in tmp_path.iterdir()] == ["result.json"]


def test_a_secret_is_never_readable_by_others_even_while_written(tmp_path: Path) -> None:
    path = tmp_path / "credentials"
    with written_whole(path, mode=0o600) as partial:
        assert stat.S_IMODE(partial.stat().st_mode) == 0o600  # before a byte of the secret is in it
        partial.write_text("export PASSWORD=x\n", encoding="utf-8")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_what_a_killed_writer_left_is_removed_by_the_next_writer_and_a_live_ones_is_not(tmp_path: Path) -> None:
    path = tmp_path / "last.ckpt"
    writer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        identity = ProcessIdentity(socket.gethostname(), writer.pid, psutil.Process(writer.pid).create_time())
    finally:
        writer.kill()  # killed mid-write: nothing of its own cleans up
        writer.wait()
    host = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]
    dead = tmp_path / f".last.ckpt.{identity.pid}-{round(identity.started * 1000)}-{host}-0123abcd.partial"
    dead.write_bytes(b"half a checkpoint")
    with written_whole(path) as live:  # another writer of this file, still writing
        live.write_text("mine", encoding="utf-8")
        assert not dead.exists()
        other = tmp_path / "other.ckpt"
        with written_whole(other) as meanwhile:
            meanwhile.write_text("other", encoding="utf-8")
            write_text_whole(path, "third")  # a live writer's file is never taken from it
            assert live.exists()
    abroad = tmp_path / f".last.ckpt.{identity.pid}-{round(identity.started * 1000)}-deadbeef-0123abcd.partial"
    abroad.write_bytes(b"a writer on another host sharing the folder")
    write_text_whole(path, "fourth")
    assert abroad.exists()  # another host's process cannot be judged from here
    assert sorted(entry.name for entry in tmp_path.iterdir()) == sorted([abroad.name, "last.ckpt", "other.ckpt"])
