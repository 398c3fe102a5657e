"""The process guard: what a process that runs depthfinder sets up once, whoever started it.

    with process_guard() as guard:      # the CLI's main, and the flows' bodies
        if guard.outermost: ...          # nothing above set this process up: a worker or a deployment started it

The first guard in a thread sets the environment defaults (offline, OpenMP's spin count: before torch is
imported), makes every log record redacted, takes SIGINT and SIGTERM (runtime.signals) and, when it ends,
gives the console its errors back (the fault log, runtime.faults). A guard inside another does only what is
still missing: it takes back a signal that another handler took since (Prefect's own for SIGTERM, inside a
flow run) and otherwise does nothing, so the CLI and the flow it runs set the process up once between them.
What only the outermost should do besides (check a run, keep its credentials in the environment), the caller
asks `outermost`.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from depthfinder.runtime.credentials import redact_log_records
from depthfinder.runtime.environment import set_environment_defaults
from depthfinder.runtime.faults import FAULTS
from depthfinder.runtime.signals import stop_on_signals

_entered = threading.local()  # guards open in this thread


@dataclass(frozen=True)
class Guard:
    """What a guard found: whether it is the outermost, the one that set the process up."""

    outermost: bool


@contextlib.contextmanager
def process_guard() -> Iterator[Guard]:
    """Set this process up for depthfinder for the block, once however many guards nest (see the module)."""
    depth = getattr(_entered, "depth", 0)
    outermost = depth == 0
    if outermost:
        set_environment_defaults()
        redact_log_records()
    _entered.depth = depth + 1
    try:
        with stop_on_signals():
            yield Guard(outermost=outermost)
    finally:
        _entered.depth = depth
        if outermost:
            FAULTS.close()
