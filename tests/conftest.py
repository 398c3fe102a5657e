from __future__ import annotations

import os
from pathlib import Path

import pytest

from depthfinder.runtime.environment import set_environment_defaults

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


# The files that take longest (`pytest --durations=0` with the slow tests, as .ci/run runs them: the 2-core
# development machine), longest first. Two workers take whole files in turn (`--dist loadfile
# --no-loadscope-reorder`, the Makefile's): started first, the long files run side by side and the short ones fill
# in at the end, where a long file started last would leave the other worker idle for its whole length (xdist's own
# order puts the files with the most tests first, the long end-to-end files of one or two tests last). Without the
# slow tests (`make test`) the same files are still among the longest.
LONGEST_FIRST = (
    "tests/flows/test_interrupts.py", "tests/flows/test_signal_matrix.py", "tests/flows/test_encoder_types.py",
    "tests/tracking/test_self_contained.py", "tests/runtime/test_faults.py", "tests/flows/test_checkpoints.py",
    "tests/encoder/test_problem_depth.py", "tests/flows/test_skip.py", "tests/flows/test_changes.py",
    "tests/flows/test_task_runners.py", "tests/flows/test_pretrained.py", "tests/flows/test_crossfit.py",
    "tests/flows/test_tokens.py", "tests/flows/test_halving.py", "tests/flows/test_full_disk.py",
    "tests/selection/test_promotion.py", "tests/flows/test_retrain.py", "tests/flows/test_deployment.py",
    "tests/flows/test_deployable.py", "tests/flows/test_pairs.py", "tests/encoder/test_training.py",
    "tests/expectations/changes/test_changes.py", "tests/runtime/test_one_at_a_time.py", "tests/flows/test_resume.py",
    "tests/flows/test_convergence.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest files first (LONGEST_FIRST), the rest in their own order; each file's tests in theirs."""
    rank = {path: number for number, path in enumerate(LONGEST_FIRST)}
    root = Path(__file__).resolve().parents[1]
    items.sort(key=lambda item: rank.get(item.path.relative_to(root).as_posix(), len(rank)))
