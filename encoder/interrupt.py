"""Stopping training when the process is asked to stop (SIGINT, SIGTERM).

The flow's main thread gets the signal; candidates train in worker threads, which a signal
cannot reach. The signal handler (flows/signals.py) calls `STOP.request`, and the
`StopOnRequest` callback (encoder.training) ends training at the next batch by raising `Interrupted`, so a
run stops within one optimiser step instead of at the end of its sweep.
"""

from __future__ import annotations

import threading


class Interrupted(Exception):
    """Training stopped because the process was asked to stop; nothing after it should run."""


class StopRequest:
    """A process-wide flag: which signal asked the process to stop, and what it interrupted."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.signal_name: str | None = None
        self.interrupted: str | None = None  # e.g. "training depth 2 (seed 1) at epoch 3 of 20"

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

    def clear(self) -> None:
        """Forget a handled request (the CLI clears it after reporting, so tests can run again)."""
        self._event.clear()
        self.signal_name = self.interrupted = None


STOP = StopRequest()
