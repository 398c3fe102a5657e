"""Reading what a reviewer sees back through the Prefect API (the session's temporary server, tests/conftest.py)."""

from __future__ import annotations

import json
from typing import Any


def flow_runs_named(name: str) -> list[Any]:
    """The flow runs called `name`."""
    from prefect import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName

    with get_client(sync_client=True) as client:
        return client.read_flow_runs(flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=[name])))


def artifact(flow_run_id: Any, key: str) -> Any:
    """The artifact `key` of a flow run."""
    from prefect import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterKey

    with get_client(sync_client=True) as client:
        (found,) = client.read_artifacts(artifact_filter=ArtifactFilter(
            key=ArtifactFilterKey(any_=[key]), flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id])))
    return found


def table_rows(found: Any) -> list[dict[str, Any]]:
    """A table artifact's rows."""
    return json.loads(found.data) if isinstance(found.data, str) else found.data


def flow_run_logs(flow_run_id: Any) -> list[str]:
    """The messages a flow run (and its tasks) logged, in order."""
    from prefect import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    with get_client(sync_client=True) as client:
        return [log.message for log in client.read_logs(
            log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id])))]
