"""A file is written whole or not at all, and two writers of the same file never trip over each other.

Every file a run leaves for another run to read (a table keyed by its content, a candidate's result, a cache of
predictions, a checkpoint, a credential) is written to a temporary name beside it and renamed over it: a reader sees
the old file or the new one, never half of one. The temporary name is the writer's own (its process, its host and
a random part): two runs that prepare the same table at once each write their own copy and the last rename wins, where a
shared temporary name let the first rename take the file from under the second (FileNotFoundError). A writer killed
mid-write (SIGKILL skips every cleanup) leaves its temporary file behind; the next writer of the same file on the same
host removes it once its process is gone (runtime.liveness: host, pid and start time, so a reused pid is not taken for
the writer). A writer on another host sharing the folder is never judged: its file stays.
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import secrets
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from depthfinder.runtime.liveness import ProcessIdentity, this_process

# `.<name>.<pid>-<start time, ms>-<host digest>-<random>.partial`
_PARTIAL = re.compile(r"\.(?P<name>.+)\.(?P<pid>\d+)-(?P<started>\d+)-(?P<host>[0-9a-f]{8})-[0-9a-f]{8}\.partial")


@contextmanager
def written_whole(path: Path, mode: int | None = None) -> Iterator[Path]:
    """A temporary path to write `path`'s content to; it becomes `path` when the block ends without an error.

    Args:
        path: the file to write; its folder is made if missing.
        mode: permissions the temporary file is created with before anything is written to it (0o600 for a
            secret), or None to leave them to whatever writes it.

    Yields the temporary path (a hidden sibling named as _PARTIAL reads it: the writer's pid, start time and host,
    and a random part). On an error the temporary file is removed and `path` is left as it was.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_what_dead_writers_left(path)
    me = this_process()
    partial = path.with_name(f".{path.name}.{me.pid}-{round(me.started * 1000)}-{_host()}-{secrets.token_hex(4)}"
                             ".partial")
    if mode is not None:
        os.close(os.open(partial, os.O_CREAT | os.O_EXCL | os.O_WRONLY, mode))
    try:
        yield partial
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def write_text_whole(path: Path, text: str, mode: int | None = None) -> Path:
    """Write `text` (UTF-8) to `path` whole or not at all; see written_whole."""
    with written_whole(path, mode) as partial:
        partial.write_text(text, encoding="utf-8")
    return Path(path)


def _host() -> str:
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def _remove_what_dead_writers_left(path: Path) -> None:
    """Remove the temporary files of `path` that writers on this host left when they were killed mid-write."""
    for left in path.parent.glob(f".{glob.escape(path.name)}.*.partial"):
        found = _PARTIAL.fullmatch(left.name)
        if found is None or found["name"] != path.name or found["host"] != _host():
            continue
        writer = ProcessIdentity(socket.gethostname(), int(found["pid"]), int(found["started"]) / 1000)
        if writer.is_alive() is False:
            left.unlink(missing_ok=True)
