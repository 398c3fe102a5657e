"""The environment a depthfinder process starts with: what the process guard sets unless the user set it first."""

from __future__ import annotations

import os

# Nothing phones home, and the libraries' start-up chatter stays out of the terminal
# (the Prefect temporary server's telemetry heartbeat also races its own SQLite writes).
OFFLINE_DEFAULTS = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "GX_ANALYTICS_ENABLED": "false",
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "DO_NOT_TRACK": "true",
    "MLFLOW_LOGGING_LEVEL": "WARNING",
    "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false",
    # MLflow's "View run ... at <tracking URI>" lines: the URI may carry a password, and the summary says it all.
    "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",
}
# Environment that OpenMP reads once, when torch loads (encoder.threads): a thread that waits at a barrier spins
# 1,000 times (GNU OpenMP, which torch's Linux wheels use; its default is 300,000) before it sleeps, so a peer that
# another process has descheduled costs little. Measured (2 threads, a MiniLM-sized block): beside one busy process
# 3.6x the quiet time with the default, 1.8x with this (fair: 1.5x); quiet, 12 % slower; OMP_WAIT_POLICY=PASSIVE
# was 26 % slower quiet and no better beside work. It takes effect only when set before torch is imported: the
# CLI imports torch only after the process guard set it.
OPENMP_ENVIRONMENT = {"GOMP_SPINCOUNT": "1000"}
ENVIRONMENT_DEFAULTS = OFFLINE_DEFAULTS | OPENMP_ENVIRONMENT


def set_environment_defaults() -> None:
    """Set every ENVIRONMENT_DEFAULTS variable the environment does not already hold (a value the user set wins)."""
    for key, value in ENVIRONMENT_DEFAULTS.items():
        os.environ.setdefault(key, value)
