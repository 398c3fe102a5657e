"""The MLflow SQLite store survives a disk that fills up: on the first migration and in the middle of a run."""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from mlflow import MlflowClient

from depthfinder.cli.main import main
from depthfinder.tracking import store as sqlite_store
from depthfinder.tracking.store import ensure_sqlite_store

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def no_template(tmp_path_factory, monkeypatch) -> Path:
    """An empty cache: a new store is migrated, not copied from a template (sqlite_store.store_template)."""
    cache = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("DEPTHFINDER_CACHE", str(cache))
    return cache


def with_file_size_limit(limit: int, code: str, folder: Path, cache: Path | None = None) -> subprocess.CompletedProcess:
    """Run `code` where no file may grow past `limit` bytes: writes beyond it fail as on a full disk."""
    prelude = (
        "import resource, signal\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        f"resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))\n"
    )
    cached = {"DEPTHFINDER_CACHE": str(cache)} if cache else {}
    return subprocess.run([sys.executable, "-c", prelude + code], cwd=folder, capture_output=True, text=True,
                          timeout=300, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", **cached})


def test_a_first_migration_that_runs_out_of_space_leaves_no_database_and_the_next_one_succeeds(
    tmp_path, no_template
) -> None:
    code = (
        "from pathlib import Path\n"
        "from depthfinder.tracking.store import ensure_sqlite_store\n"
        "try:\n"
        "    ensure_sqlite_store(Path('mlflow.db'))\n"
        "except ValueError as exc:\n"
        "    print(exc)\n"
    )
    full = with_file_size_limit(200_000, code, tmp_path, no_template)

    assert "cannot create the MLflow database" in full.stdout, full.stderr[-2000:]
    assert list(tmp_path.iterdir()) == []  # neither a half-migrated mlflow.db nor a leftover partial file

    ensure_sqlite_store(tmp_path / "mlflow.db")
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert client.create_experiment("works")


def test_a_disk_that_fills_up_mid_run_leaves_earlier_runs_intact(tmp_path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    ensure_sqlite_store(tmp_path / "mlflow.db")
    client = MlflowClient(tracking_uri=uri)
    experiment = client.create_experiment("nightly")
    earlier = client.create_run(experiment).info.run_id
    client.log_metric(earlier, "macro_f1", 0.9)
    client.set_terminated(earlier)
    size = (tmp_path / "mlflow.db").stat().st_size
    code = (
        "from mlflow import MlflowClient\n"
        f"client = MlflowClient(tracking_uri={uri!r})\n"
        f"run = client.create_run({experiment!r}).info.run_id\n"
        "try:\n"
        "    for step in range(100_000):\n"
        "        client.log_param(run, f'p{step}', 'x' * 400)\n"
        "except Exception as exc:\n"
        "    print('full:', type(exc).__name__)\n"
    )
    full = with_file_size_limit(size + 150_000, code, tmp_path)

    assert "full:" in full.stdout, full.stderr[-2000:]
    with sqlite3.connect(tmp_path / "mlflow.db") as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    kept = client.get_run(earlier)
    assert kept.info.status == "FINISHED" and kept.data.metrics == {"macro_f1": 0.9}
    assert client.create_run(experiment)  # the store takes new runs once there is space again


def test_a_half_migrated_store_is_refused_with_how_to_recover(tmp_path, monkeypatch, capsys) -> None:
    """What an older depthfinder left after running out of space on its first run."""
    monkeypatch.chdir(tmp_path)
    with sqlite3.connect(tmp_path / "mlflow.db") as connection:
        connection.execute("CREATE TABLE alembic_version (version_num VARCHAR(32))")
        connection.execute("CREATE TABLE _alembic_tmp_runs (run_uuid VARCHAR(32))")

    code = main(["run", "--dataset", "topics"])

    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "mlflow.db is half-migrated (table _alembic_tmp_runs" in err and "mlflow db upgrade" in err
    assert "mv " in err
    with pytest.raises(ValueError, match="half-migrated"):
        ensure_sqlite_store(tmp_path / "mlflow.db")


def test_two_runs_creating_a_new_store_at_once_share_the_one_published_first(
    tmp_path, monkeypatch, no_template
) -> None:
    """Both find no store and migrate one of their own; the second to finish must not replace the first's, which
    a run may be writing to already (it then fails with "attempt to write a readonly database")."""
    database = tmp_path / "mlflow.db"
    both_migrated, second_may_publish = threading.Barrier(2, timeout=120), threading.Event()

    class Migrating(sqlite_store.MlflowClient):
        def search_registered_models(self, *args, **kwargs):  # the last step of the migration
            found = super().search_registered_models(*args, **kwargs)
            both_migrated.wait()
            if threading.current_thread().name == "second":
                second_may_publish.wait(timeout=120)
            return found

    monkeypatch.setattr(sqlite_store, "MlflowClient", Migrating)
    errors: list[BaseException] = []

    def create() -> None:
        try:
            ensure_sqlite_store(database)
        except BaseException as exc:
            errors.append(exc)

    first, second = (threading.Thread(target=create, name=name) for name in ("first", "second"))
    first.start()
    second.start()
    first.join(timeout=120)
    with contextlib.closing(sqlite3.connect(database)) as run:  # a run that started on the first store
        run.execute("CREATE TABLE probe (step INTEGER)")
        run.commit()
        second_may_publish.set()
        second.join(timeout=120)
        run.execute("INSERT INTO probe VALUES (1)")
        run.commit()

    assert errors == []
    assert sorted(path.name for path in tmp_path.iterdir()) == ["mlflow.db"]  # no partial file left
    with contextlib.closing(sqlite3.connect(database)) as store:
        assert store.execute("SELECT step FROM probe").fetchall() == [(1,)]


def test_a_new_store_is_a_copy_of_the_template_the_first_one_left_and_works_as_a_migrated_one(
    tmp_path, monkeypatch, no_template
) -> None:
    """The first new store is migrated and kept as the template; the next is a copy of it (no migration runs):
    MLflow's own schema, its default experiment's artifacts beside the folder it was made in, and MLflow uses it."""
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    monkeypatch.chdir(tmp_path / "one")
    ensure_sqlite_store(tmp_path / "one" / "mlflow.db")
    assert sqlite_store.store_template().is_file() and sqlite_store.store_template().parent == no_template

    def no_migration(database: Path) -> None:
        raise AssertionError("migrated although a template was kept")

    monkeypatch.setattr(sqlite_store, "_migrate", no_migration)
    monkeypatch.chdir(tmp_path / "two")
    ensure_sqlite_store(tmp_path / "two" / "mlflow.db")

    def schema(database: Path) -> tuple[list, list]:
        with contextlib.closing(sqlite3.connect(database)) as store:
            return (store.execute("SELECT name, sql FROM sqlite_master ORDER BY name").fetchall(),
                    store.execute("SELECT version_num FROM alembic_version").fetchall())

    assert schema(tmp_path / "two" / "mlflow.db") == schema(tmp_path / "one" / "mlflow.db")
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'two' / 'mlflow.db'}")
    assert client.get_experiment("0").artifact_location == str(tmp_path / "two" / "mlruns" / "0")
    run = client.create_run(client.create_experiment("works")).info.run_id
    client.log_metric(run, "macro_f1", 0.9)
    assert client.get_run(run).data.metrics == {"macro_f1": 0.9}
    assert sorted(path.name for path in (tmp_path / "two").iterdir()) == ["mlflow.db"]  # no partial file left


def test_a_template_that_is_not_a_whole_store_is_not_copied_and_a_whole_one_replaces_it(
    tmp_path, monkeypatch, no_template
) -> None:
    monkeypatch.chdir(tmp_path)
    sqlite_store.store_template().write_bytes(b"not a database")

    ensure_sqlite_store(tmp_path / "mlflow.db")

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert client.create_experiment("works")
    with contextlib.closing(sqlite3.connect(sqlite_store.store_template())) as template:
        assert template.execute("SELECT count(*) FROM alembic_version").fetchone() == (1,)
