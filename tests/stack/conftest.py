"""The team stack for the integration suite: the one running (`make stack-up`), else one of its own."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from flows.stack import Ports, Stack, down, status, up

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="session")
def stack(tmp_path_factory) -> Stack:
    """The stack in $DEPTHFINDER_STACK (default .stack) when all of it runs; else a fresh one, brought down after."""
    running = Stack.load(Path(os.environ.get("DEPTHFINDER_STACK", ROOT / ".stack")))
    if running.pids and all(alive for _, _, alive in status(running)):
        yield running
        return
    own = Stack(tmp_path_factory.mktemp("stack"), Ports(mlflow=free_port(), prefect=free_port(), dask=free_port()))
    try:
        yield up(own)
    finally:
        down(own)
