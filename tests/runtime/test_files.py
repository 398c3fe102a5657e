"""Files written whole: two writers of one file at once both finish, and a failed write leaves nothing."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from runtime.files import write_text_whole, written_whole


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
