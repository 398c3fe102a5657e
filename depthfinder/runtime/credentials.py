"""Credentials in URIs stay in this process: no line, log record, parameter, tag or summary carries them.

A tracking URI may hold user-info (`http://alice:pw@host`, `postgresql://user:pw@db/mlflow`). Whoever
takes a run's settings (the CLI, or a flow that a worker started) calls `hide_credentials` once, before
anything is passed on: for an http(s) server the user and password
move into MLflow's own variables (MLFLOW_TRACKING_USERNAME / MLFLOW_TRACKING_PASSWORD) and the URI goes
on without them; for a database the whole URI stays in the environment (HELD_URI) and what goes on is
its redacted form (`postgresql://***@db/mlflow`). `store_uri` gives the real URI back where a client is
made, in this process or a worker it started (they inherit the environment). `redact` is for any text on
its way out: error lines and every log record (`redact_log_records`).
"""

from __future__ import annotations

import logging
import os
import re
import traceback
from urllib.parse import unquote, urlsplit, urlunsplit

HELD_URI = "DEPTHFINDER_TRACKING_URI"
REDACTED = "***"
# scheme://user-info@ : the user-info runs to the last '@' before the host (a password may hold one).
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/\s?#'\"]+)@")


def redact(text: str) -> str:
    """`text` with the user-info of every URI in it replaced by ***."""
    return _USERINFO.sub(rf"\g<scheme>{REDACTED}@", text) if "@" in text else text


def hide_credentials(uri: str) -> str:
    """Keep the user-info of a tracking URI in this process's environment; the URI to pass on, log and store."""
    parts = urlsplit(uri)
    userinfo, at, host = parts.netloc.rpartition("@")
    if not at or userinfo == REDACTED:
        return uri
    if parts.scheme in ("http", "https"):
        user, _, password = userinfo.partition(":")
        os.environ["MLFLOW_TRACKING_USERNAME"] = unquote(user)
        os.environ["MLFLOW_TRACKING_PASSWORD"] = unquote(password)
        return urlunsplit(parts._replace(netloc=host))
    os.environ[HELD_URI] = uri
    return redact(uri)


def store_uri(uri: str) -> str:
    """The URI a client connects with: `uri` itself, or the real one behind its redacted form.

    Raises:
        ValueError: the URI is redacted and this process does not hold the one behind it.
    """
    if f"://{REDACTED}@" not in uri:
        return uri
    held = os.environ.get(HELD_URI, "")
    if redact(held) == uri:
        return held
    raise ValueError(f"tracking URI {uri}: its credentials are redacted and this process does not hold them; "
                     f"set {HELD_URI} to the full URI where the run executes")


def redact_log_records() -> None:
    """Make every log record, of any library, carry its message and traceback redacted (idempotent)."""
    factory = logging.getLogRecordFactory()
    if getattr(factory, "redacts", False):
        return

    def record(*args: object, **kwargs: object) -> logging.LogRecord:
        made = factory(*args, **kwargs)
        try:
            message = made.getMessage()
        except Exception:  # a malformed record is the logging module's to report
            return made
        if "@" in message:
            made.msg, made.args = redact(message), None
        if made.exc_info and made.exc_info[1] is not None:
            made.exc_text = redact("".join(traceback.format_exception(*made.exc_info)).rstrip("\n"))
        return made

    record.redacts = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(record)
