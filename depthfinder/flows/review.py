"""How a run reads in the Prefect and MLflow UIs: a name a reviewer tells nights apart by, and tags that say the
outcome.

A run is named for what it is, `model · data file or dataset · short data hash` (`ui · n2.csv · 7f3a`), in the
Prefect runs list and as the MLflow parent run, led by what sets the night apart when something does: `forced`
(--force retrained past the comparison's stop or skip), `stopped` (the comparison stopped it), `blocked` (the
audit blocked training) — first, because the MLflow runs list shows a name's first 20 characters or so
(`forced · ui · n2.csv · 7f3a`). Its child runs carry the night (`depth-2-seed-1 · 2026-12-01 · 7f3a`). When it
ends, the Prefect flow run is tagged with the model, `forced` where it was, the chosen family and depth, the
audit's verdict and the promotion's outcome, or what stopped it (`stopped: foreign_rows`), and its state's message
says the outcome in a line; a night stopped on purpose ends in a failed state named Stopped or Blocked, never the
plain Failed of a crash.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from depthfinder.expectations.changes.report import FORCED, decisive
from depthfinder.expectations.table.config import DataConfig
from depthfinder.flows.config import RegistryConfig
from depthfinder.flows.summary import RunSummary

# The marks of a night that ended before training on purpose: the comparison with the champion stopped it, or
# the audit blocked it. Each is also its Prefect state's name (capitalised), a tag, and its message's first word.
STOPPED, BLOCKED = "stopped", "blocked"
UNMET = "unmet"  # hard limits no depth met: the night's mark
UNMET_STATE = UNMET.capitalize()  # and its flow run's state (the CLI exits 3 on it)


def run_title(model_name: str, data: DataConfig | dict, data_hash: str | None = None, marks: Sequence[str] = ()) -> str:
    """`forced · ui · n2.csv · 7f3a`: the night's marks, then the model, the data and its hash (without the hash
    before the data is read)."""
    return " · ".join([*marks, model_name, data_source(data), *([data_hash[:4]] if data_hash else [])])


def data_source(data: DataConfig | dict) -> str:
    """`n2.csv` (the data file's name) or the built-in dataset's name."""
    path, dataset = (data.path, data.dataset) if isinstance(data, DataConfig) else (data.get("path"),
                                                                                    data.get("dataset"))
    return Path(path).name if path else str(dataset)


def forced(summary: RunSummary) -> bool:
    """Whether --force retrained past what the comparison with the champion said (stop or skip)."""
    return summary.changes is not None and summary.changes.policy.overridden is not None


def night_marks(summary: RunSummary) -> list[str]:
    """What sets the night apart from a plain retrain: `forced`, then `stopped` or `blocked` where it ended before
    training, `unmet` where no form met its size limit (none for a night that registered, or skipped, as asked)."""
    marks = [FORCED] if forced(summary) else []
    if summary.skipped or summary.model is not None:
        return marks
    if summary.unmet is not None:
        return [*marks, UNMET]
    return [*marks, STOPPED if summary.audit is None else BLOCKED]


def night(data_hash: str) -> str:
    """`2026-12-01 · 7f3a`: the night a child run belongs to."""
    return f"{datetime.now(timezone.utc):%Y-%m-%d} · {data_hash[:4]}"


def flow_run_name() -> str:
    """The name a retrain flow run starts with (the Prefect flow's `flow_run_name`), from its parameters."""
    from prefect.runtime import flow_run

    parameters = flow_run.parameters
    registry, data = parameters.get("registry"), parameters.get("data", {})
    model = getattr(registry, "model_name", None) or (registry or {}).get("model_name", RegistryConfig().model_name)
    return run_title(model, data)


def outcome_tags(summary: RunSummary, model_name: str) -> list[str]:
    """`model:ui`, `forced`, `depth-1` (or `pretrained-depth-2`), `audit-passed`, `promoted` (or `stopped` and
    `stopped: foreign_rows`, `audit-blocked` and `blocked: empty_text`): what the runs list shows."""
    tags = [f"model:{model_name}", *([FORCED] if forced(summary) else [])]
    if summary.skipped:
        return [*tags, "skipped"]
    if summary.audit is None:  # and what stopped it, where the flow run's page shows its tags: beside its name
        return [*tags, STOPPED, f"{STOPPED}: {', '.join(decisive(summary.changes))}"]
    tags.append(f"audit-{summary.audit.verdict.replace(' ', '-')}")
    if summary.unmet is not None:
        tags.append(f"{UNMET}: {summary.unmet.limits.replace('=', ' ')}")
    elif summary.rule is not None:
        tags.append(summary.rule.selected_label.replace(" ", "-"))
        tags.append("promoted" if summary.promoted else "not-promoted")
    else:
        tags.append(f"{BLOCKED}: {', '.join(summary.audit.blocking_failures or summary.audit.warnings)}")
    return tags


def label_flow_run(name: str | None = None, tags: list[str] = ()) -> None:
    """Rename and tag the running flow run (outside a flow run, nothing)."""
    from prefect import get_client
    from prefect.runtime import flow_run

    if flow_run.id is None:
        return
    try:
        with get_client(sync_client=True) as client:
            current = client.read_flow_run(flow_run.id)
            client.update_flow_run(flow_run.id, name=name, tags=sorted(set(current.tags) | set(tags)))
    except Exception as exc:  # a label is not worth failing a run over
        from prefect import get_run_logger

        get_run_logger().warning("could not name or tag the flow run: %s", exc)
