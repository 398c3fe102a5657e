"""The Prefect API a command talks to: the configured server, or a temporary one of its own.

Prefect starts its temporary server in the terminal's process group, so Ctrl-C killed it
before the run could record that it stopped, and a killed run left it listening. The one
started here runs in a session of its own (Ctrl-C in the terminal does not reach it) and,
on Linux, is sent SIGTERM by the kernel when the process that started it dies, however it
dies.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from prefect.client.orchestration import SyncPrefectClient

PR_SET_PDEATHSIG = 1
# Prefect starts its temporary server again, on another port, each time it exits while starting (exit code 3: the
# port was taken, or its database cannot be written), for as long as the start-up timeout allows: minutes.
STARTS = 3
# Prefect waits 20 s for its temporary server by default; on a busy 2-core machine (a migration of a fresh
# database, another run starting beside it) that was seen to run out. A setting above this is kept.
STARTUP_TIMEOUT_S = 120
_temporary_url: str | None = None


def _die_with_parent(parent: int) -> None:
    """In the forked child, before exec: ask for SIGTERM when the parent dies (Linux only)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def _temporary_server_class(output: IO[bytes] | None) -> type:
    from prefect.server.api.server import SubprocessASGIServer

    class TemporaryServer(SubprocessASGIServer):
        """Prefect's temporary server, started in its own session and tied to this process's life; its output
        goes to `output` (None: this process's)."""

        def _run_uvicorn_command(self) -> subprocess.Popen:
            import prefect
            from prefect.settings import get_current_settings

            from depthfinder.runtime.faults import Fault

            self.starts = getattr(self, "starts", 0) + 1
            if self.starts > STARTS:
                raise Fault(f"the Prefect temporary server exited {STARTS} times while starting")
            parent = os.getpid()
            command = [
                sys.executable, "-m", "uvicorn", "--app-dir", str(prefect.__module_path__.parent), "--factory",
                "prefect.server.api.server:create_app", "--host", "127.0.0.1", "--port", str(self.port),
                "--log-level", "error", "--lifespan", "on",
            ]
            environment = {
                **os.environ,
                "PREFECT_UI_ENABLED": "0",
                "PREFECT__SERVER_EPHEMERAL": "1",
                "PREFECT__SERVER_FINAL": "1",
                **get_current_settings().to_environment_variables(exclude_unset=True),
            }
            return subprocess.Popen(
                command, env=environment, start_new_session=True, stdout=output, stderr=output,
                preexec_fn=(lambda: _die_with_parent(parent)) if sys.platform == "linux" else None,
            )

    return TemporaryServer


@contextlib.contextmanager
def prefect_api(output: IO[bytes] | None = None) -> Iterator[None]:
    """Use the configured Prefect server (PREFECT_API_URL), or a temporary one for the duration, whose output
    (its errors and their tracebacks) goes to `output` (None: this process's)."""
    global _temporary_url
    from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS, temporary_settings

    if PREFECT_API_URL.value():
        yield
        return
    server = _temporary_server_class(output)()
    try:  # a signal while it starts stops it too
        server.start(timeout=max(STARTUP_TIMEOUT_S, PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value()))
        _temporary_url = server.api_url
        with temporary_settings(updates={PREFECT_API_URL: server.api_url}):
            try:
                yield
            finally:
                _drain_workers()
    finally:
        _temporary_url = None
        server.stop()


def _drain_workers() -> None:
    """Send the logs and events still queued to the server before it stops (else: a minute of retries at exit)."""
    import inspect

    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker
    from prefect.utilities.asyncutils import run_coro_as_sync

    async def drain() -> None:
        with contextlib.suppress(RuntimeError):  # a worker that never started
            result = APILogWorker.instance().drain()
            if inspect.isawaitable(result):
                await result
        result = EventsWorker.drain_all()
        if inspect.isawaitable(result):
            await result

    run_coro_as_sync(drain())


def server_is_persistent() -> bool:
    """Whether the Prefect API in use is a real server, which outlives a run and revokes expired leases."""
    from prefect.settings import PREFECT_API_URL

    url = PREFECT_API_URL.value()
    return bool(url) and url != _temporary_url


START_SERVER = (
    "start one with `prefect server start` (it listens on http://127.0.0.1:4200) and run "
    "`prefect config set PREFECT_API_URL=http://127.0.0.1:4200/api`"
)


def api_problem() -> str | None:
    """Why the configured Prefect server cannot be used (it does not answer or refuses the credentials), or None
    (it can, or none is set)."""
    from prefect import get_client
    from prefect.settings import PREFECT_API_URL

    from depthfinder.runtime.credentials import redact

    url = PREFECT_API_URL.value()
    if not url:
        return None
    url = redact(url)  # what is shown; the client connects with the setting itself
    with get_client(sync_client=True) as client:
        if (error := client.api_healthcheck()) is not None:
            return (f"no Prefect server answers at {url} ({type(error).__name__}): {START_SERVER}, "
                    "or unset PREFECT_API_URL")
        refused = _refused(client)  # the health check needs no credentials; reading the work pools does
    return f"the Prefect server at {url} {refused}" if refused else None


def _refused(client: SyncPrefectClient) -> str | None:
    """Why the server refuses this client's credentials (PREFECT_API_AUTH_STRING or PREFECT_API_KEY), or None."""
    import httpx

    try:
        client.read_work_pools(limit=1)
    except httpx.HTTPStatusError as error:
        if error.response.status_code in (401, 403):
            return (f"refuses the credentials (HTTP {error.response.status_code}): set PREFECT_API_AUTH_STRING to "
                    "the server's user:password (or PREFECT_API_KEY for Prefect Cloud)")
        raise
    return None
