"""The team stack for the integration suite: the one running (`make stack-up`), else one of its own."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from pathlib import Path

import pytest

from runtime.stack import Ports, Stack, down, status, up

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="session")
def stack() -> Stack:
    """The stack in $DEPTHFINDER_STACK (default .stack) when all of it runs; else a fresh one, brought down after.
    Either way this process gets its address and credentials, as a team member's shell would."""
    running = Stack.load(Path(os.environ.get("DEPTHFINDER_STACK", ROOT / ".stack")))
    if running.pids and all(alive for _, _, alive in status(running)):
        with pytest.MonkeyPatch.context() as patch:
            for key, value in running.environment().items():
                patch.setenv(key, value)
            yield running
        return
    # Under /tmp, readable by the postgres user the database runs as when the suite runs as root.
    home = Path(tempfile.mkdtemp(prefix="depthfinder-stack-"))
    home.chmod(0o755)
    own = Stack(home, Ports(mlflow=free_port(), prefect=free_port(), dask=free_port()))
    try:
        with pytest.MonkeyPatch.context() as patch:
            for key, value in own.environment().items():
                patch.setenv(key, value)
            yield up(own)
    finally:
        down(own)
        shutil.rmtree(home, ignore_errors=True)
