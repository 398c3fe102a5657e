from __future__ import annotations

import pytest
from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS, temporary_settings

from depthfinder.runtime import server


class RecordingServer:
    """Stands in for the temporary server: records how long it was asked to wait for its start."""

    waited: list[float] = []
    api_url = "http://127.0.0.1:1/api"

    def start(self, timeout: float) -> None:
        self.waited.append(timeout)

    def stop(self) -> None:
        pass


@pytest.mark.parametrize(("setting", "expected"), [(20, server.STARTUP_TIMEOUT_S), (300, 300)])
def test_the_temporary_server_gets_time_to_start_on_a_busy_machine(monkeypatch, setting, expected) -> None:
    """Prefect's own 20 s ran out on a loaded 2-core machine; a longer setting is kept."""
    monkeypatch.setattr(server, "_temporary_server_class", lambda output: RecordingServer)
    monkeypatch.setattr(server, "_drain_workers", lambda: None)
    RecordingServer.waited = []
    settings = temporary_settings(updates={PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS: setting},
                                  restore_defaults={PREFECT_API_URL})
    with settings, server.prefect_api():
        assert PREFECT_API_URL.value() == RecordingServer.api_url
    assert RecordingServer.waited == [expected]
