"""Only one retrain of a registered model name runs at a time; another name is not held up."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from prefect import flow

from depthfinder.cli.main import main
from depthfinder.runtime.lock import _file_lock, is_locked, lock_path, one_retrain_at_a_time, read_holder

ROOT = Path(__file__).resolve().parents[2]


def test_a_second_retrain_of_the_same_model_waits_for_the_first(prefect_server, tmp_path) -> None:
    events: list[tuple[str, float]] = []
    first_inside, release = threading.Event(), threading.Event()

    @flow
    def first() -> None:
        with one_retrain_at_a_time("shared-name", tmp_path):
            events.append(("first in", time.monotonic()))
            first_inside.set()
            release.wait(60)
            events.append(("first out", time.monotonic()))

    @flow
    def second(model_name: str) -> None:
        with one_retrain_at_a_time(model_name, tmp_path):
            events.append((f"{model_name} in", time.monotonic()))

    holder = threading.Thread(target=first)
    holder.start()
    assert first_inside.wait(60)
    second("other-name")  # a different model does not wait
    threading.Timer(3, release.set).start()
    second("shared-name")
    holder.join(60)

    assert [name for name, _ in events] == ["first in", "other-name in", "first out", "shared-name in"]


HOLD_THE_LOCK = """
import sys, time
from pathlib import Path
from prefect import flow
from depthfinder.runtime.lock import one_retrain_at_a_time
from depthfinder.runtime.server import prefect_api

@flow(name="holder")
def hold() -> None:
    with one_retrain_at_a_time("crashy", Path(sys.argv[1])):
        Path(sys.argv[1], "holding").write_text("yes")
        time.sleep(600)

with prefect_api():
    hold()
"""


def test_a_holder_killed_with_sigkill_frees_the_lock_at_once_and_a_waiter_names_it(
    prefect_server, tmp_path, caplog
) -> None:
    """An out-of-memory kill gives the holder no chance to release anything: the next retrain proceeds."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    environment.pop("PREFECT_API_URL", None)  # a temporary server of its own, which dies with it
    holder = subprocess.Popen([sys.executable, "-c", HOLD_THE_LOCK, str(tmp_path)], env=environment)
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "holding").exists():
            assert holder.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        path = lock_path(tmp_path, "crashy")
        assert is_locked(path)
        assert read_holder(path)["process"]["pid"] == holder.pid
        threading.Timer(2, holder.kill).start()

        @flow
        def waiter() -> float:
            with one_retrain_at_a_time("crashy", tmp_path):
                return time.monotonic()

        entered = waiter()
    finally:
        holder.kill()
        holder.wait()
    assert entered > 0
    waiting = [r.getMessage() for r in caplog.records if "another retrain of 'crashy' is running" in r.getMessage()]
    assert waiting and f"pid {holder.pid} on " in waiting[0] and "holding it since" in waiting[0]


def test_unlock_frees_slots_an_older_version_leaked_and_refuses_while_a_retrain_runs(
    prefect_server, tmp_path, capsys
) -> None:
    from prefect import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitUpdate

    with get_client(sync_client=True) as client:  # what a SIGKILLed run of depthfinder 0.1 left behind
        client.upsert_global_concurrency_limit_by_name("retrain-leaky", limit=1)
        client.update_global_concurrency_limit("retrain-leaky", GlobalConcurrencyLimitUpdate(active_slots=1))

    assert main(["unlock", "--model-name", "leaky", "--workdir", str(tmp_path)]) == 0
    assert "1 slot(s) of the Prefect limit retrain-leaky freed" in capsys.readouterr().out
    with get_client(sync_client=True) as client:
        assert client.read_global_concurrency_limit_by_name("retrain-leaky").active_slots == 0

    with _file_lock(lock_path(tmp_path, "leaky"), "test"):
        assert main(["unlock", "--model-name", "leaky", "--workdir", str(tmp_path)]) == 2
    assert f"pid {os.getpid()}" in capsys.readouterr().err
