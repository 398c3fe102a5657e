from __future__ import annotations

import os
from pathlib import Path

import pytest

from runtime.environment import set_environment_defaults

set_environment_defaults()  # offline, and OpenMP's spin count before torch loads, as the CLI's process guard does

# The real datasets (docs/benchmarks.md): where DEPTHFINDER_DATA says, else the copies in the repository's data/.
REAL_DATA = Path(os.environ.get("DEPTHFINDER_DATA", Path(__file__).resolve().parents[1] / "data"))


@pytest.fixture(scope="session")
def prefect_server():
    """One temporary Prefect server with a fresh database for the whole session."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The folder of the real datasets; the test is skipped when it is absent."""
    if not REAL_DATA.is_dir():
        pytest.skip(f"real data folder {REAL_DATA} is absent (set DEPTHFINDER_DATA; see docs/benchmarks.md)")
    return REAL_DATA
