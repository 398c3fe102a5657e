"""Which process holds something (a lock, an MLflow run), and whether that process still lives.

A process is named by host, pid and start time: a pid alone can be reused by another
process after the first one died.
"""

from __future__ import annotations

import functools
import os
import re
import socket
from dataclasses import asdict, dataclass
from datetime import datetime, timezone

import psutil

# A start time read twice for the same process agrees to well within this many seconds.
_START_TOLERANCE = 0.5


@dataclass(frozen=True)
class ProcessIdentity:
    """A process, as another process can recognise it."""

    host: str
    pid: int
    started: float  # seconds since the epoch

    def to_dict(self) -> dict[str, str | int | float]:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> ProcessIdentity:
        return cls(host=str(values["host"]), pid=int(values["pid"]), started=float(values["started"]))

    def is_alive(self) -> bool | None:
        """True or False for a process of this host; None (cannot tell) for one of another host."""
        if self.host != this_process().host:
            return None
        try:
            return abs(psutil.Process(self.pid).create_time() - self.started) < _START_TOLERANCE
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            return False

    def describe(self) -> str:
        """`pid 1234 on host, started 2026-12-01 02:00:01.25 UTC`: for a reader, and `parse` reads it back."""
        since = datetime.fromtimestamp(self.started, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-4]
        return f"pid {self.pid} on {self.host}, started {since} UTC"

    @classmethod
    def parse(cls, text: str) -> ProcessIdentity | None:
        """The process `describe` wrote (or None for text that is not one)."""
        found = re.fullmatch(r"pid (\d+) on (.+), started (\S+ \S+) UTC", text)
        if found is None:
            return None
        started = datetime.strptime(found[3], "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=timezone.utc)
        return cls(found[2], int(found[1]), started.timestamp())


@functools.cache
def _this_process(pid: int) -> ProcessIdentity:
    return ProcessIdentity(socket.gethostname(), pid, psutil.Process(pid).create_time())


def this_process() -> ProcessIdentity:
    """The identity of the calling process (a forked child gets its own)."""
    return _this_process(os.getpid())
