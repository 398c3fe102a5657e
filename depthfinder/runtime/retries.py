"""Which faults pass, and the retries of tasks whose work can meet one (I/O against MLflow or the Prefect API).

A tracking server can fail for a moment (a restart, a locked SQLite file): such a task retries with backoff. Bad
input, a bug, a stop request, a full disk and a file at the process's file-size limit stay so between retries, and
are not retried.
"""

from __future__ import annotations

import errno
from typing import Any

from prefect.cache_policies import NONE
from prefect.tasks import exponential_backoff

from depthfinder.runtime.faults import cause_with, full_disk
from depthfinder.runtime.interrupt import Interrupted

NOT_PASSING = (ValueError, TypeError, KeyError, Interrupted)


def passing_fault(task: Any, task_run: Any, state: Any) -> bool:
    """Whether a failed attempt is worth another: not for bad input, bugs, a stop request, a full disk or a file
    at the process's file-size limit."""
    try:
        state.result()
    except NOT_PASSING:
        return False
    except Exception as exc:
        return full_disk(exc) is None and cause_with(exc, (errno.EFBIG,)) is None
    return False


# Retries of tasks whose work is I/O against MLflow or the Prefect API: 2, 4, 8 s apart.
RETRIES: dict[str, Any] = {
    "retries": 3, "retry_delay_seconds": exponential_backoff(backoff_factor=2), "retry_condition_fn": passing_fault,
    "cache_policy": NONE,
}
