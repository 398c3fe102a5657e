"""Local services as processes: start them in sessions of their own, tell when they answer, stop their groups."""

from __future__ import annotations

import base64
import os
import signal
import socket
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

HOST = "127.0.0.1"
READY_SECONDS = 120


def alive(pid: int | None) -> bool:
    """Whether a process with this pid exists (and is not a zombie)."""
    if not pid:
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def listening(port: int) -> bool:
    """Whether something accepts TCP connections on 127.0.0.1:`port`."""
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex((HOST, port)) == 0


def healthy(url: str, basic_auth: str | None = None) -> bool:
    """Whether `url` answers 200 (to a request with HTTP basic auth `user:password`, when given)."""
    request = urllib.request.Request(url, headers=basic_auth_header(basic_auth))
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def basic_auth_header(basic_auth: str | None) -> dict[str, str]:
    """The Authorization header of HTTP basic auth `user:password` (none without one)."""
    if basic_auth is None:
        return {}
    return {"Authorization": "Basic " + base64.b64encode(basic_auth.encode()).decode()}


def wait_for(what: str, ready: Callable[[], bool], pid: int, log: Path, seconds: float = READY_SECONDS) -> None:
    """Wait until `ready()`; RuntimeError with the log's tail when the process dies or time runs out."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if ready():
            return
        if not alive(pid):
            break
        time.sleep(0.5)
    tail = log.read_text(encoding="utf-8", errors="replace")[-2000:] if log.is_file() else ""
    state = "exited" if not alive(pid) else f"not ready after {seconds:.0f} s"
    raise RuntimeError(f"{what} {state}; its log ({log}) ends:\n{tail}")


def bin_path(name: str) -> str:
    """A console script of this environment (mlflow, prefect, dask)."""
    return str(Path(sys.executable).with_name(name))


def stop_group(pid: int, grace: float = 15) -> None:
    """SIGTERM the process group `pid` leads, SIGKILL what is left after `grace` seconds."""
    for how in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, how)
        except (ProcessLookupError, PermissionError):
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and alive(pid):
            time.sleep(0.2)
        if not alive(pid):
            return
