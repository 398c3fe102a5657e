"""The commands that run the pipeline: run, audit, deploy, and the built-in datasets it can run on.

Each validates its settings and checks what can be checked before any work (bad input: exit 2), then runs its
flow under the Prefect API (a temporary server unless one is configured), withholding errors from the console
for the fault log (runtime.faults): a run that fails says why in one line and names the log.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from depthfinder.cli.flags import UsageError, settings_given
from depthfinder.flows.config import RunConfig, load_run_config, without_credentials
from depthfinder.runtime.faults import FAULTS, cause_of
from depthfinder.runtime.files import write_text_whole
from depthfinder.runtime.interrupt import STOP

if TYPE_CHECKING:
    from prefect.states import State

# The exit code of a run whose hard limits no depth met: nothing registered, the verdict recorded.
EXIT_UNMET = 3


def load_config(args: argparse.Namespace) -> RunConfig:
    """Validate the config, the input table and the unlabelled texts before any run starts (bad input: exit 2)."""
    from depthfinder.expectations.table.load import load_table
    from depthfinder.expectations.table.pool import check_pool
    from depthfinder.expectations.table.shape import PAIR_COLUMN

    config = without_credentials(load_run_config(args.config, settings_given(args)))
    table = load_table(config.data)
    if config.sweep.pool.unlabeled is not None:
        check_pool(config.sweep.pool.unlabeled, config.sweep.pool.labels, config.data, set(table["label"]),
                   labelled=table[[c for c in ("text", PAIR_COLUMN, "split") if c in table]],
                   threshold=config.audit.near_duplicate_threshold)
    return config


def folders_written(config: RunConfig | None, *outputs: Path | None) -> list[Path]:
    """The folders a command writes to: its output files', the work folder and a SQLite store's."""
    from depthfinder.tracking.store import SQLITE, resolve_tracking_uri

    folders = [Path(path).parent for path in outputs if path is not None]
    if config is not None:
        folders.append(Path(config.registry.workdir))
        uri = resolve_tracking_uri(config.registry.tracking_uri)
        if uri.startswith(SQLITE):
            folders.append(Path(uri.removeprefix(SQLITE)).parent)
    return folders


def _write_json(path: Path | None, payload: dict) -> None:
    """Write `payload` to `path` whole or not at all."""
    if path is not None:
        write_text_whole(path, json.dumps(payload, indent=2, default=str) + "\n")


def run(args: argparse.Namespace) -> int:
    from depthfinder.flows.preflight import check_run
    from depthfinder.flows.report import format_summary
    from depthfinder.runtime.server import prefect_api

    config = load_config(args)
    check_run(config, outputs=[args.summary_json])
    from depthfinder.flows.retrain import retrain
    from depthfinder.flows.summary import RunSummary

    FAULTS.withhold(config.registry.workdir)
    with prefect_api(FAULTS.server_output()):
        state = retrain(**dict(config), force=args.force, return_state=True)
    return _concluded(state, RunSummary, "run", config, args.summary_json, format_summary)


def _concluded(state: State, record: type[BaseModel], what: str, config: RunConfig, output: Path | None,
               shown: Callable[[Any], str]) -> int:
    """The exit code of a flow's final `state`: its record written to `output` and `shown` on the terminal, or the
    one line that says why it failed; a command that ended well but logged errors on the way says where."""
    result = state.result(raise_on_failure=False)
    if STOP.requested and not isinstance(result, record):  # a signal the flow ended on: main's one line says so
        raise KeyboardInterrupt
    if not isinstance(result, record):
        cause = cause_of(state.message, result, folders_written(config, output))
        error = result if isinstance(result, BaseException) else None
        print(f"depthfinder: the {what} failed: {cause}; {FAULTS.write(error)}", file=sys.stderr)
        return 1
    _write_json(output, result.to_dict())
    print(shown(result))
    if FAULTS.withheld:  # a retried write, a failed candidate
        print(f"depthfinder: {FAULTS.withheld} error(s) were logged on the way; {FAULTS.write()}", file=sys.stderr)
    from depthfinder.flows.review import UNMET_STATE  # the flow has run: Prefect is loaded already

    if state.name == UNMET_STATE:  # a verdict the user's limit asked for, not a fault: its line last
        print(f"depthfinder: {result.unmet.sentence()}", file=sys.stderr)
        return EXIT_UNMET
    return 0 if state.is_completed() else 1


def audit(args: argparse.Namespace) -> int:
    from depthfinder.expectations.audit.report import AuditReport, audit_lines
    from depthfinder.flows.preflight import check_prefect_api, check_writable
    from depthfinder.runtime.server import prefect_api

    config = load_config(args)
    if args.report_json is not None:
        check_writable(args.report_json, "output file")
    for folder, what in ((args.data_docs, "Data Docs folder"), (config.registry.workdir, "work folder")):
        if folder is not None:
            check_writable(folder, what, folder=True)
    check_prefect_api()
    from depthfinder.flows.audit import audit_data

    FAULTS.withhold(config.registry.workdir)
    with prefect_api(FAULTS.server_output()):
        state = audit_data(config.data, config.audit, config.registry.workdir, args.data_docs, return_state=True)
    return _concluded(state, AuditReport, "audit", config, args.report_json, lambda report: "\n".join(
        [f"Audit: {report.headline}", *audit_lines(report)]))


def deploy(args: argparse.Namespace) -> int:
    from depthfinder.flows.deploy import serve, server_problem

    config = load_config(args)
    _check_timezone(args.timezone)
    if problem := server_problem():
        raise UsageError(problem)
    serve(config, args.cron, args.timezone)
    return 0


def _check_timezone(name: str) -> None:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise UsageError(f"--timezone {name!r} is not an IANA time zone such as UTC or Europe/Berlin") from None


def datasets(args: argparse.Namespace) -> int:
    from depthfinder.expectations.table.datasets import list_datasets

    for dataset in list_datasets():
        print(f"{dataset.name:<20} {dataset.description}")
    return 0
