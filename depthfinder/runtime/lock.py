"""One retrain of a model name at a time; a holder that dies, however it dies, cannot keep the lock.

On one machine the lock is an exclusive `flock` on `<workdir>/locks/retrain-<model>.lock`:
the kernel releases it when the holding process ends, so a crashed or killed run frees it at
once. The file names its holder (host, pid, start time, flow run), which a waiting run
prints. Runs on several machines that share a persistent Prefect server also take that
server's global concurrency limit `retrain-<model>` with a lease the holder renews; the
server revokes a lease that stops being renewed, so a dead machine frees its slot within
LEASE_SECONDS (plus the server's 15 s sweep). A temporary server keeps leases only in its
memory and revokes none, so it is not used for locking.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import IO

from prefect import get_run_logger

from depthfinder.runtime.liveness import ProcessIdentity, this_process
from depthfinder.runtime.server import server_is_persistent

LEASE_SECONDS = 60.0
POLL_SECONDS = 0.5


def lock_path(workdir: Path, model_name: str) -> Path:
    return Path(workdir) / "locks" / f"retrain-{model_name}.lock"


def limit_name(model_name: str) -> str:
    return f"retrain-{model_name}"


@contextlib.contextmanager
def one_retrain_at_a_time(model_name: str, workdir: Path) -> Iterator[None]:
    """Hold the retrain lock of `model_name` (and, on a persistent server, its limit) meanwhile.

    A second retrain says who holds the lock and since when, and waits.
    """
    with _file_lock(lock_path(workdir, model_name), f"retrain of {model_name!r}"):
        if not server_is_persistent():
            yield
            return
        with _server_slot(limit_name(model_name), f"retrain of {model_name!r}"):
            yield


class LockBusy(Exception):
    """The lock is held by another process (the message names it)."""


@contextlib.contextmanager
def holding_now(model_name: str, workdir: Path) -> Iterator[None]:
    """Hold `model_name`'s retrain lock file meanwhile, or raise LockBusy at once (a person's command: it
    never waits behind a retrain)."""
    path = lock_path(workdir, model_name)
    with _file_lock(path, f"retrain of {model_name!r}", wait=False):
        yield


def read_holder(path: Path) -> dict | None:
    """What the lock file says about its last holder, or None when it says nothing readable."""
    try:
        holder = json.loads(path.read_text(encoding="utf-8"))
        ProcessIdentity.from_dict(holder["process"])
        return holder
    except (OSError, ValueError, KeyError, TypeError):
        return None


def describe_holder(holder: dict | None) -> str:
    if holder is None:
        return "holder unknown"
    flow_run = f"flow run {holder['flow_run']}, " if holder.get("flow_run") else ""
    return f"{flow_run}{ProcessIdentity.from_dict(holder['process']).describe()}, holding it since {holder['since']}"


def is_locked(path: Path) -> bool:
    """Whether some live process holds the lock at `path` now."""
    if not path.exists():
        return False
    with open(path, "a+", encoding="utf-8") as handle:
        if not _try_lock(handle):
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


@contextlib.contextmanager
def _file_lock(path: Path, what: str, wait: bool = True) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+", encoding="utf-8") as handle:
        if not _try_lock(handle):
            if not wait:
                raise LockBusy(f"a {what} is running ({describe_holder(read_holder(path))})")
            get_run_logger().warning(
                "another %s is running (%s); waiting for it to finish", what, describe_holder(read_holder(path))
            )
            while not _try_lock(handle):
                time.sleep(POLL_SECONDS)
        _write_holder(handle)
        try:
            yield
        finally:
            handle.truncate(0)
            fcntl.flock(handle, fcntl.LOCK_UN)


def _try_lock(handle: IO[str]) -> bool:
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _write_holder(handle: IO[str]) -> None:
    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    holder = {
        "process": this_process().to_dict(),
        "flow_run": context.flow_run.name if context and context.flow_run else None,
        "since": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
    }
    handle.truncate(0)
    handle.write(json.dumps(holder) + "\n")
    handle.flush()


@contextlib.contextmanager
def _server_slot(name: str, what: str) -> Iterator[None]:
    from prefect import get_client
    from prefect.concurrency.sync import concurrency

    with get_client(sync_client=True) as client:
        client.upsert_global_concurrency_limit_by_name(name, limit=1)
        busy = client.read_global_concurrency_limit_by_name(name).active_slots
    if busy:
        get_run_logger().warning(
            "another %s holds the Prefect server's limit %r (a run on another machine, or one that died less than "
            "%.0f s ago); waiting for it", what, name, LEASE_SECONDS,
        )
    with concurrency(name, occupy=1, lease_duration=LEASE_SECONDS):
        yield


def clear_server_slots(model_name: str) -> int:
    """Set the Prefect limit of `model_name` to no active slots; return how many there were.

    For slots that an older depthfinder, or a server that lost its leases, left taken.
    """
    from prefect import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitUpdate
    from prefect.exceptions import ObjectNotFound

    name = limit_name(model_name)
    with get_client(sync_client=True) as client:
        try:
            taken = client.read_global_concurrency_limit_by_name(name).active_slots
        except ObjectNotFound:
            return 0
        if taken:
            client.update_global_concurrency_limit(name, GlobalConcurrencyLimitUpdate(active_slots=0))
    return taken
