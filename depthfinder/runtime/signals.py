"""SIGINT and SIGTERM stop a run within seconds, and every `with` block on the way out still runs.

A signal reaches only the main thread; candidates train in worker threads or processes. The
handler asks them to stop (`runtime.interrupt.STOP`, checked after every batch; worker
processes get the signal passed on), then lets the handler it replaced raise in the main
thread: KeyboardInterrupt for SIGINT, Prefect's TerminationSignal for SIGTERM inside a
flow run. The flow's context managers then mark MLflow runs KILLED and release the lock.

Raising is the one thing a handler must not do at any moment. Inside a deferred step
(`STOP.deferred()`: a registry write and its record) the stop waits for the step's end. Inside
code that holds a lock or a transaction (the logging module, SQLAlchemy, an import, Prefect's
own queues) an exception would leave it held: a lock never released hangs the process, a
transaction never ended leaves SQLite "database is locked". There the signal is sent again a
moment later, until it lands outside such code.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
from collections.abc import Iterator
from types import FrameType

from depthfinder.runtime.interrupt import STOP

SIGNALS = (signal.SIGINT, signal.SIGTERM)
# Exit status of a process stopped by a signal, as shells report it.
EXIT_CODES = {"SIGINT": 130, "SIGTERM": 143}
# Code an exception must not interrupt (it holds a lock, a transaction or a half-built module), by file path.
FRAGILE = tuple(
    fragment.replace("/", os.sep)
    for fragment in ("/logging/", "/sqlalchemy/", "/sqlite3/", "/alembic/", "/pydantic/",
                     "/prefect/_internal/concurrency/")
) + ("<frozen importlib._bootstrap",)
AGAIN_SECONDS = 0.05


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM request a stop and then raise in the main thread.

    A no-op outside the main thread (signal handlers can only be set there). Signals the
    process was told to ignore stay ignored, and so does a signal that one of these handlers
    already takes (a block inside another); one that another handler took since (Prefect's
    for SIGTERM, inside a flow run) gets one of these again, which hands it on.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    replaced: dict[int, object] = {}

    def handler(signum: int, frame: FrameType | None) -> None:
        if not STOP.requested:
            STOP.request(signal.Signals(signum).name)
            for child in multiprocessing.active_children():  # process-pool and Dask workers
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child.pid, signum)

        def stop() -> None:
            previous = replaced[signum]
            if callable(previous):
                previous(signum, frame)
            raise KeyboardInterrupt  # the default action would end the process before any cleanup

        if STOP.hold(stop):
            return
        if fragile(frame):
            _send_again_soon(signum)
            return
        stop()

    handler.stops = True  # type: ignore[attr-defined]
    for signum in SIGNALS:
        current = signal.getsignal(signum)
        if current is not signal.SIG_IGN and not getattr(current, "stops", False):
            replaced[signum] = signal.signal(signum, handler)
    try:
        yield
    finally:
        for signum, previous in replaced.items():
            signal.signal(signum, previous)


def fragile(frame: FrameType | None) -> bool:
    """Whether the main thread stands in code that an exception would leave holding a lock (see FRAGILE)."""
    while frame is not None:
        if any(fragment in frame.f_code.co_filename for fragment in FRAGILE):
            return True
        frame = frame.f_back
    return False


def _send_again_soon(signum: int) -> None:
    """Send `signum` to this process again shortly, if one of these handlers is still there to take it."""

    def again() -> None:
        if getattr(signal.getsignal(signum), "stops", False):
            os.kill(os.getpid(), signum)

    timer = threading.Timer(AGAIN_SECONDS, again)
    timer.daemon = True
    timer.start()
