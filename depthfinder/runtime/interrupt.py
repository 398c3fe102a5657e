"""Stopping training when the process is asked to stop (SIGINT, SIGTERM).

The flow's main thread gets the signal; candidates train in worker threads, which a signal
cannot reach. The signal handler (runtime/signals.py) calls `STOP.request`, and the
`StopOnRequest` callback (encoder.trainer) ends training at the next batch by raising `Interrupted`, so a
run stops within one optimiser step instead of at the end of its sweep.

A step that must not be cut in two (a registry write and its record, the aliases of one judgement)
runs in `STOP.deferred()`: a signal inside it is only noted, and the stop is raised when it ends.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator


class Interrupted(Exception):
    """Training stopped because the process was asked to stop; nothing after it should run."""


class StoppedOnPurpose(Exception):  # noqa: N818 (an outcome, not an error)
    """The run stopped before training by its own rules (the audit blocked, the comparison with the champion said
    stop): an outcome the user set up, so its MLflow run ends FINISHED, not with a crash's mark."""


class StopRequest:
    """A process-wide flag: which signal asked the process to stop, and what it interrupted."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.signal_name: str | None = None
        self.interrupted: str | None = None  # e.g. "training depth 2 (seed 1) at epoch 3 of 20"
        self._deferring = 0  # deferred blocks the main thread is in
        self._pending: Callable[[], None] | None = None  # the stop a signal handler left for their end

    def request(self, signal_name: str) -> None:
        if not self._event.is_set():
            self.signal_name = signal_name
            self._event.set()

    @property
    def requested(self) -> bool:
        return self._event.is_set()

    def raise_if_requested(self, doing: str) -> None:
        """Raise Interrupted, remembering the first `doing` that was cut short, if a stop was requested."""
        if self._event.is_set():
            self.interrupted = self.interrupted or doing
            raise Interrupted(f"{self.signal_name} while {doing}")

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """A step a signal does not cut in two: within the block a stop is only noted (see `hold`), and raised
        when the outermost such block ends. Only the main thread, where signals land, defers."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        self._deferring += 1
        try:
            yield
        finally:
            self._deferring -= 1
        if not self._deferring and self._pending is not None:
            stop, self._pending = self._pending, None
            stop()

    def hold(self, stop: Callable[[], None]) -> bool:
        """For a signal handler: keep `stop` for the end of the deferred block the main thread is in, if any."""
        if not self._deferring:
            return False
        self._pending = stop
        return True

    def clear(self) -> None:
        """Forget a handled request (the CLI clears it after reporting, so tests can run again)."""
        self._event.clear()
        self.signal_name = self.interrupted = None
        self._pending = None


STOP = StopRequest()
