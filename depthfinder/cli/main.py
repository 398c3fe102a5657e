"""The `depthfinder` command line: run, audit, predict, export, deploy, datasets, unlock, history, rollback.

Exit codes: 0 success; 1 the audit blocked training, what changed stopped the night, or a run failed;
2 bad input or usage; 130 / 143 stopped by SIGINT / SIGTERM. Errors are one line on stderr; a fault's line names
the log that holds its traces (runtime/faults.py); heavy libraries are imported only by the command that needs
them, after the process guard set the environment they read when they load (runtime/guard.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from depthfinder.cli.commands import commands
from depthfinder.cli.flags import Parser, add_flags
from depthfinder.flows.config import WORKDIR, first_error
from depthfinder.runtime.credentials import hide_credentials, redact
from depthfinder.runtime.faults import FAULTS, cause_of, one_line
from depthfinder.runtime.guard import process_guard
from depthfinder.runtime.interrupt import STOP
from depthfinder.runtime.signals import EXIT_CODES


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command, each flag made from the config field that declares it (cli/flags.py)."""
    parser = Parser(prog="depthfinder", description="How deep should your Transformer encoder be?")
    subparsers = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for command in commands():
        add_flags(subparsers.add_parser(command.name, help=command.help), command.flags)
        subparsers.choices[command.name].set_defaults(handler=command.handler)
    return parser


def main(argv: list[str] | None = None) -> int:
    with process_guard():
        try:
            args = build_parser().parse_args(argv)
            FAULTS.folder = _workdir(args)  # where a fault's log goes
            if getattr(args, "tracking_uri", None):
                args.tracking_uri = hide_credentials(args.tracking_uri)
            code = args.handler(args)
            if STOP.requested:  # a stop that the flow took as its own end (a failed or cancelled state)
                raise KeyboardInterrupt
            return code
        except BaseException as exc:
            return _ended(exc)


def _workdir(args: argparse.Namespace) -> Path:
    """The work folder given (run and audit: their settings'), else the default."""
    given = vars(args)
    return Path(given.get("workdir") or given.get("registry.workdir") or WORKDIR)


def _ended(exc: BaseException) -> int:
    """The exit code of a command that raised `exc`, and the one line that says why; SystemExit (--help) goes on."""
    if STOP.requested or isinstance(exc, KeyboardInterrupt):  # a stop, whatever it surfaced as
        print(_interrupted(STOP.signal_name or "SIGINT", STOP.interrupted), file=sys.stderr)
        code = EXIT_CODES.get(STOP.signal_name, 130)
        STOP.clear()
        return code
    if isinstance(exc, SystemExit):  # --help
        raise exc
    if isinstance(exc, ValueError):  # UsageError, or raised at the boundary: config, input, preflight
        message = redact(_usage_line(exc))
        print(message if message.startswith("depthfinder") else f"depthfinder: {message}", file=sys.stderr)
        return 2
    # A fault (a disk, a server, a bug): its cause in one line, its trace in the log.
    print(f"depthfinder: {cause_of(None, exc)}; {FAULTS.write(exc)}", file=sys.stderr)
    return 1


def _usage_line(error: ValueError) -> str:
    """Bad input in one line: a pydantic error's first problem, or the message's first line."""
    from pydantic import ValidationError

    if isinstance(error, ValidationError):
        return first_error(error, None)
    return one_line(str(error))


def _interrupted(signal_name: str, what: str | None) -> str:
    """The one line that says what a signal stopped and how to go on."""
    return (
        f"depthfinder: stopped by {signal_name}" + (f" while {what}" if what else "")
        + "; nothing was registered after it; finished candidates and the last finished epoch of the others are "
        "kept: run the same command again to continue"
    )


if __name__ == "__main__":
    sys.exit(main())
