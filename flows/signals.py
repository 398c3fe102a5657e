"""SIGINT and SIGTERM stop a run within seconds, and every `with` block on the way out still runs.

A signal reaches only the main thread; candidates train in worker threads or processes. The
handler asks them to stop (`encoder.interrupt.STOP`, checked after every batch; worker
processes get the signal passed on), then lets the handler it replaced raise in the main
thread: KeyboardInterrupt for SIGINT, Prefect's TerminationSignal for SIGTERM inside a
flow run. The flow's context managers then mark MLflow runs KILLED and release the lock.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
from collections.abc import Iterator
from types import FrameType

from encoder.interrupt import STOP

SIGNALS = (signal.SIGINT, signal.SIGTERM)
# Exit status of a process stopped by a signal, as shells report it.
EXIT_CODES = {"SIGINT": 130, "SIGTERM": 143}


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM request a stop and then raise in the main thread.

    A no-op outside the main thread (signal handlers can only be set there). Signals the
    process was told to ignore stay ignored.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    replaced: dict[int, object] = {}

    def handler(signum: int, frame: FrameType | None) -> None:
        STOP.request(signal.Signals(signum).name)
        for child in multiprocessing.active_children():  # process-pool and Dask workers
            with contextlib.suppress(ProcessLookupError):
                os.kill(child.pid, signum)
        previous = replaced[signum]
        if callable(previous):
            previous(signum, frame)
        raise KeyboardInterrupt  # the default action would end the process before any cleanup

    for signum in SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            replaced[signum] = signal.signal(signum, handler)
    try:
        yield
    finally:
        for signum, previous in replaced.items():
            signal.signal(signum, previous)
