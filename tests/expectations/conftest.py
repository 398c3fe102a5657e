"""Shared fixtures of the expectations tests."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED_DATA = REPO_ROOT / ".." / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data from the repo root; skips the test when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data folder {SHARED_DATA} is absent (it is not part of the repository)")
    return SHARED_DATA
