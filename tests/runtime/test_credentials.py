"""A password in a URI never leaves the process: redacted in every line and log record, moved into the
environment before the URI is passed on, and given back only where a client connects."""

from __future__ import annotations

import logging

import pytest

from depthfinder.cli.main import main
from depthfinder.runtime.credentials import HELD_URI, hide_credentials, redact, redact_log_records, store_uri

SECRET = "s3cr3t-Pa55"


@pytest.mark.parametrize(("text", "shown"), [
    (f"http://alice:{SECRET}@host:5000/", "http://***@host:5000/"),
    (f"postgresql://mlflow:{SECRET}@db.internal/mlflow", "postgresql://***@db.internal/mlflow"),
    (f"postgresql://u:p@ss{SECRET}@db/x", "postgresql://***@db/x"),  # an '@' in the password
    (f"runs at http://a:{SECRET}@h/ and https://b:{SECRET}@k/api.", "runs at http://***@h/ and https://***@k/api."),
    ("sqlite:////tmp/mlflow.db", "sqlite:////tmp/mlflow.db"),
    ("mail alice@example.com about http://host/x", "mail alice@example.com about http://host/x"),
])
def test_redact_hides_every_user_info_and_nothing_else(text: str, shown: str) -> None:
    assert redact(text) == shown


def test_an_http_uri_hands_its_credentials_to_mlflows_own_variables(monkeypatch) -> None:
    for name in ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD"):
        monkeypatch.delenv(name, raising=False)

    uri = hide_credentials(f"http://alice:{SECRET}%40x@127.0.0.1:5000/")

    assert uri == "http://127.0.0.1:5000/" and store_uri(uri) == uri
    import os

    assert (os.environ["MLFLOW_TRACKING_USERNAME"], os.environ["MLFLOW_TRACKING_PASSWORD"]) == ("alice", f"{SECRET}@x")


def test_a_database_uri_is_passed_on_redacted_and_connects_with_the_one_held(monkeypatch) -> None:
    real = f"postgresql://mlflow:{SECRET}@db/mlflow"
    monkeypatch.delenv(HELD_URI, raising=False)

    shown = hide_credentials(real)

    assert shown == "postgresql://***@db/mlflow"
    assert store_uri(shown) == real
    monkeypatch.delenv(HELD_URI)
    with pytest.raises(ValueError, match=f"set {HELD_URI}"):
        store_uri(shown)


def test_log_records_of_any_library_carry_no_password(caplog) -> None:
    redact_log_records()
    logger = logging.getLogger("some.library")
    with caplog.at_level(logging.INFO):
        logger.info("View run at %s", f"http://alice:{SECRET}@host/#/runs/1")
        try:
            raise ConnectionError(f"cannot reach postgresql://u:{SECRET}@db/x")
        except ConnectionError:
            logger.exception("failed")

    assert "http://***@host/#/runs/1" in caplog.text
    assert "postgresql://***@db/x" in caplog.text and SECRET not in caplog.text


@pytest.mark.parametrize(("argv", "environment", "named"), [
    (["run", "--dataset", "topics", "--tracking-uri", f"http://alice:{SECRET}@127.0.0.1:9/"], {},
     "no MLflow tracking server answers at http://127.0.0.1:9/"),
    (["history", "--model", "m", "--tracking-uri", f"http://alice:{SECRET}@127.0.0.1:9"], {}, "127.0.0.1:9"),
    (["run", "--dataset", "topics"], {"PREFECT_API_URL": f"http://bob:{SECRET}@127.0.0.1:9/api"},
     "no Prefect server answers at http://***@127.0.0.1:9/api"),
])
def test_an_unreachable_server_is_named_without_its_password(
    argv: list[str], environment: dict[str, str], named: str, tmp_path, monkeypatch, capsys
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: environment.get("PREFECT_API_URL")}):
        code = main(argv)

    captured = capsys.readouterr()
    assert code == 2 and captured.err.count("\n") == 1 and named in captured.err
    assert SECRET not in captured.out + captured.err
