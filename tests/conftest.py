from __future__ import annotations

import os
from pathlib import Path

import pytest

from flows.cli import OFFLINE_DEFAULTS

for key, value in OFFLINE_DEFAULTS.items():
    os.environ.setdefault(key, value)

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(scope="session")
def prefect_server():
    """One temporary Prefect server with a fresh database for the whole session."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=60):
        yield


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data folder {SHARED_DATA} is absent (clone next to shared/ to run this test)")
    return SHARED_DATA
