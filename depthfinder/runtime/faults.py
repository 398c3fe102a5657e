"""What a command that fails leaves on the terminal: one line with the cause and the path of a log with the rest.

Prefect logs a failed task and flow with their tracebacks, MLflow logs every SQL error it catches, and the
Prefect temporary server prints its own: a full disk gave 2-25 tracebacks and up to 1,124 lines under the
one line that said what was wrong. While a command works (`FAULTS.withhold`), every console handler shows
progress lines as before and withholds errors and tracebacks; those, the temporary server's output and the
trace of the error that ended the command go into `<work folder>/logs/<time>-<pid>.log`, written only when
the command failed or something was withheld. The log is redacted like every other line (user-info of URIs).
`cause_of` is the one line: what failed, and for a full disk, a file-size limit or a failing temporary server
the reason behind it.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import logging
import os
import re
import sys
import tempfile
import threading
import traceback
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from depthfinder.runtime.credentials import redact

LOGS = "logs"
# Records kept for the log: the last this many (a long run's progress lines, and every withheld one near the end).
KEPT_RECORDS = 20_000
# pytest's handler that records what a test logged (a stream handler too, which a test reads, not a person).
TEST_CAPTURES = ("LogCaptureHandler",)
# A disk that is full, over quota or read-only stays so for the seconds between retries (runtime.retries).
DISK_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)
SQLITE_FULL = "database or disk is full"
_FORMAT = logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s")


class Fault(RuntimeError):
    """A fault whose message says all a person needs (shown without its type's name)."""


class FaultLog(logging.Filter):
    """The records a command's console handlers withheld (and those they showed, for context), kept for a log."""

    def __init__(self) -> None:
        super().__init__()
        self._reset()

    def _reset(self) -> None:
        self.folder: Path | None = None
        self.records: collections.deque[str] = collections.deque(maxlen=KEPT_RECORDS)
        self.withheld = 0
        self._server_output: IO[bytes] | None = None
        self._handlers: list[logging.Handler] = []
        self._hooks: tuple[Any, Any] | None = None
        self._recorder: _Recorder | None = None

    def withhold(self, folder: Path | None = None) -> None:
        """From now on (until `close`) the console shows no error or traceback; the log goes under `folder` (None:
        the one already set).

        Called once the command's libraries are imported (their handlers exist then); again, it also takes
        the handlers made since.
        """
        if folder is not None:
            self.folder = Path(folder)
        for handler in _console_handlers():
            if handler not in self._handlers:
                handler.addFilter(self)
                self._handlers.append(handler)
        if self._recorder is None:  # a record that reaches no console handler is kept for the log all the same
            self._recorder = _Recorder(self)
            logging.getLogger().addHandler(self._recorder)
        if self._hooks is None:  # a thread's or a finaliser's traceback is printed by a hook, not logged
            self._hooks = (threading.excepthook, sys.unraisablehook)
            threading.excepthook, sys.unraisablehook = _log_thread_error, _log_unraisable

    def filter(self, record: logging.LogRecord) -> bool:
        """Keep every record for the log; let through to the console only those without an error or a trace."""
        if getattr(record, "_fault_log_seen", False):  # shown by a handler nearer its logger
            return not getattr(record, "_fault_log_withheld", False)
        withheld = record.levelno >= logging.ERROR or bool(record.exc_info) or bool(record.exc_text)
        record._fault_log_seen, record._fault_log_withheld = True, withheld
        self.records.append(redact(_formatted(record)))
        self.withheld += withheld
        return not withheld

    def server_output(self) -> IO[bytes]:
        """Where the Prefect temporary server writes its output: a file that goes away when it is closed."""
        if self._server_output is None:
            self._server_output = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close)
        return self._server_output

    def server_said(self) -> str | None:
        """The last error the Prefect temporary server logged (`sqlalchemy.exc.OperationalError: ...`), or None."""
        errors = re.findall(r"^[\w.]*(?:Error|Exception): .+$", self._server_text(), flags=re.MULTILINE)
        return redact(errors[-1].strip()) if errors else None

    def _server_text(self) -> str:
        if self._server_output is None:
            return ""
        self._server_output.seek(0)
        return self._server_output.read().decode("utf-8", errors="replace").strip()

    def write(self, error: BaseException | None = None) -> str:
        """Write the log (the records, the server's output, the trace of `error`); a phrase naming where.

        The work folder first, then the temporary folder (the work folder may be the disk that is full).
        """
        text = self._text(error)
        name = f"{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}-{os.getpid()}.log"
        problem = "no folder to write it in"
        for folder in (self.folder, Path(tempfile.gettempdir()) / "depthfinder"):
            if folder is None:
                continue
            path = folder.absolute() / LOGS / name
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
                return f"the full trace is in {path}"
            except OSError as exc:
                problem = f"{exc.strerror or exc} in {path.parent}"
                with contextlib.suppress(OSError):  # what a full disk let through
                    path.unlink(missing_ok=True)
        return f"the full trace could not be written ({problem})"

    def _text(self, error: BaseException | None) -> str:
        parts = ["\n".join(self.records)]
        if output := self._server_text():
            parts.append(f"--- the Prefect temporary server's output ---\n{redact(output)}")
        if error is not None:
            trace = "".join(traceback.format_exception(type(error), error, error.__traceback__))
            parts.append(f"--- the error that ended the command ---\n{redact(trace)}")
        return "\n\n".join(part for part in parts if part) + "\n"

    def close(self) -> None:
        """Give the console back its errors, and forget what was kept."""
        for handler in self._handlers:
            handler.removeFilter(self)
        if self._recorder is not None:
            logging.getLogger().removeHandler(self._recorder)
        if self._hooks is not None:
            threading.excepthook, sys.unraisablehook = self._hooks
        if self._server_output is not None:
            self._server_output.close()
        self._reset()


class _Recorder(logging.Handler):
    """Hands every record that reaches the root logger to the fault log, as a console handler's filter would."""

    def __init__(self, log: FaultLog) -> None:
        super().__init__()
        self.log = log

    def emit(self, record: logging.LogRecord) -> None:
        self.log.filter(record)


FAULTS = FaultLog()


def cause_of(message: str | None, error: object, folders: Iterable[Path] = ()) -> str:
    """Why a command failed, in a phrase: `message` (a Prefect state's), else `error`; for a full disk the folder
    that is full (of `folders`, those the command writes to), for a file at the file-size limit the limit, for a
    Prefect temporary server that fails what it logged."""
    exc = error if isinstance(error, BaseException) else None
    if (full := full_disk(exc)) is not None:
        return _full_disk(full, folders)
    if (large := cause_with(exc, (errno.EFBIG,))) is not None:
        return _file_too_large(large)
    phrase = redact(one_line(message or _described(error)))
    if said := FAULTS.server_said():
        limit = file_size_limit()
        phrase += f"; the Prefect temporary server logged {one_line(said)}" + (
            f" (this process may write no file over {limit // 2**10} KiB: ulimit -f)"
            if limit is not None and "disk I/O error" in said else "")
    return phrase


def _full_disk(full: BaseException, folders: Iterable[Path]) -> str:
    """The folder that is full: the one with least space left of those the command writes to."""
    import shutil

    folders = [Path(folder).resolve() for folder in folders if Path(folder).exists()]
    free = {folder: shutil.disk_usage(folder).free for folder in folders}
    fullest = min(free, key=free.get) if free else None
    if fullest is not None and free[fullest] < 2**20:
        where = f"{fullest} ({free[fullest] / 2**10:.0f} KiB free)"
    else:  # a copy names its source first and its target second
        where = getattr(full, "filename2", None) or getattr(full, "filename", None) or "a folder it writes to"
    return f"no space left on device under {where}; free some space and run the same command again: what " \
           "finished is kept"


def full_disk(exc: BaseException | None) -> BaseException | None:
    """The error in `exc` or its causes that says a disk is full (an OSError, or SQLite's own words), or None."""
    return cause_with(exc, DISK_ERRNOS, SQLITE_FULL)


def cause_with(exc: BaseException | None, errnos: tuple[int, ...], words: str | None = None) -> BaseException | None:
    """The error in `exc` or its causes that is an OSError with one of `errnos` (or whose message holds `words`)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if (isinstance(exc, OSError) and exc.errno in errnos) or (words is not None and words in str(exc)):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def _file_too_large(error: BaseException) -> str:
    """A write past the file-size limit (`ulimit -f`), or past the largest file the file system takes."""
    path = getattr(error, "filename2", None) or getattr(error, "filename", None) or "a file"
    limit = file_size_limit()
    largest = f"the largest file this process may write ({limit // 2**10} KiB: ulimit -f)" if limit is not None \
        else "the largest file its file system takes"
    return f"{path} would grow past {largest}; raise the limit and run the same command again: what finished is kept"


def _described(error: object) -> str:
    """An exception as `Type: message` (a Fault, an HTTP error as what it says); anything else as itself."""
    import httpx

    if isinstance(error, Fault):
        return str(error)
    if isinstance(error, httpx.HTTPStatusError):  # Prefect's too; its message runs on with advice on HTTP
        request, response = error.request, error.response
        return f"{request.method} {request.url} was answered {response.status_code} {response.reason_phrase}"
    if isinstance(error, BaseException):
        return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    return str(error)


def file_size_limit() -> int | None:
    """The largest file this process may write, in bytes (`ulimit -f`), or None when there is no limit."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    return None if soft == resource.RLIM_INFINITY else soft


def one_line(text: str) -> str:
    """The first non-empty line of `text` (an error message that carries a traceback or SQL below it)."""
    return next((line.strip() for line in text.splitlines() if line.strip()), text.strip())


def _formatted(record: logging.LogRecord) -> str:
    try:
        return _FORMAT.format(record)
    except Exception:  # a record whose arguments do not fit its message: the logging module reports it too
        return f"{record.levelname} {record.name}: {record.msg!r} % {record.args!r}"


def _console_handlers() -> list[logging.Handler]:
    """The handlers of every logger (and logging's last resort) that write to a stream rather than a file."""
    loggers = [logging.getLogger(), *(logger for logger in logging.root.manager.loggerDict.values()
                                      if isinstance(logger, logging.Logger))]
    handlers = [handler for logger in loggers for handler in logger.handlers]
    if logging.lastResort is not None:
        handlers.append(logging.lastResort)
    return [handler for handler in dict.fromkeys(handlers)
            if isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler)
            and type(handler).__name__ not in TEST_CAPTURES]


def _log_thread_error(args: threading.ExceptHookArgs) -> None:
    if args.exc_type is not SystemExit:
        name = args.thread.name if args.thread is not None else "a thread"
        logging.getLogger("depthfinder").error("an error ended %s", name,
                                               exc_info=(args.exc_type, args.exc_value, args.exc_traceback))


def _log_unraisable(unraisable: Any) -> None:
    logging.getLogger("depthfinder").error(
        "%s: %r", unraisable.err_msg or "an exception was ignored", unraisable.object,
        exc_info=(unraisable.exc_type, unraisable.exc_value, unraisable.exc_traceback))
