"""Deployments: the nightly retrain on a cron schedule, and the audit on demand, served from this machine.

`depthfinder deploy` serves both from the current process: the Prefect server keeps the
schedule and the UI's "Run" forms; this process picks the runs up and executes them. For
a work pool instead of a long-running process, see `prefect.yaml` (`prefect deploy`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from depthfinder.flows.config import RunConfig

if TYPE_CHECKING:
    from prefect.deployments.runner import RunnerDeployment

NIGHTLY = "nightly-retrain"
AUDIT = "audit-on-demand"
NIGHTLY_CRON = "0 2 * * *"
NIGHTLY_TIMEZONE = "UTC"  # an IANA name


def server_problem() -> str | None:
    """Why the configured Prefect server cannot hold a schedule, or None when it can."""
    from prefect.settings import PREFECT_API_URL

    from depthfinder.runtime.server import START_SERVER, api_problem

    if not PREFECT_API_URL.value():
        return f"a schedule needs a running Prefect server, and none is configured: {START_SERVER}"
    return api_problem()


def absolute_paths(config: RunConfig) -> RunConfig:
    """The config with its files pinned to where they are now: scheduled runs may start elsewhere."""
    from depthfinder.tracking.store import resolve_tracking_uri

    data = config.data
    if data.path is not None:
        data = data.model_copy(update={"path": Path(data.path).resolve()})
    model = config.model
    if model.pretrained is not None:  # a folder here pinned, a hub id as it is
        pinned = [str(Path(given).resolve()) if Path(given).exists() else given for given in model.pretrained]
        model = model.model_copy(update={"pretrained": pinned})
    registry = config.registry.model_copy(update={
        "tracking_uri": resolve_tracking_uri(config.registry.tracking_uri),
        "workdir": Path(config.registry.workdir).resolve(),
    })
    return config.model_copy(update={"data": data, "model": model, "registry": registry})


def nightly_settings(config: RunConfig) -> RunConfig:
    """What a nightly run does differently unless told: extend candidates still improving (no one is waiting),
    and skip the retrain when no change since the champion reaches a retrain threshold."""
    sweep, changes = config.sweep, config.changes
    if sweep.extend.unconverged is None:
        sweep = sweep.model_copy(update={"extend": sweep.extend.model_copy(update={"unconverged": True})})
    if changes.skip_minor is None:
        changes = changes.model_copy(update={"skip_minor": True})
    return config.model_copy(update={"sweep": sweep, "changes": changes})


def nightly_deployment(
    config: RunConfig, cron: str = NIGHTLY_CRON, timezone: str = NIGHTLY_TIMEZONE
) -> RunnerDeployment:
    """The retrain flow with `config` as its default parameters, on a cron schedule in `timezone`."""
    from prefect.deployments.runner import EntrypointType
    from prefect.schedules import Cron

    from depthfinder.flows.retrain import retrain

    return retrain.to_deployment(
        name=NIGHTLY,
        schedule=Cron(cron, timezone=timezone),
        parameters=nightly_settings(absolute_paths(config)).model_dump(mode="json"),
        description="Audit the data, sweep depth, register the chosen model; skipped when nothing changed.",
        tags=["depthfinder"],
        # A module path (flows.retrain:retrain), not a file: loaded from a file, the flow's module is named
        # "retrain", and the tasks it pickles for Dask workers name a module they cannot import.
        entrypoint_type=EntrypointType.MODULE_PATH,
    )


def audit_deployment(config: RunConfig) -> RunnerDeployment:
    """The audit flow, run on demand from the UI, with the nightly run's data and audit settings."""
    from prefect.deployments.runner import EntrypointType

    from depthfinder.flows.audit import audit_data

    pinned = absolute_paths(config)
    return audit_data.to_deployment(
        name=AUDIT,
        parameters={"data": pinned.data.model_dump(mode="json"), "audit": pinned.audit.model_dump(mode="json"),
                    "workdir": str(pinned.registry.workdir)},
        description="Audit a labelled table for leakage, label noise and imbalance.",
        tags=["depthfinder"],
        entrypoint_type=EntrypointType.MODULE_PATH,
    )


def serve(config: RunConfig, cron: str = NIGHTLY_CRON, timezone: str = NIGHTLY_TIMEZONE) -> None:
    """Serve the nightly retrain and the on-demand audit until interrupted."""
    from prefect import serve as prefect_serve

    prefect_serve(nightly_deployment(config, cron, timezone), audit_deployment(config))
