"""The MLflow store on SQLite, made whole or not at all: a relative path pinned to the directory it was named in, a
new store migrated on a file beside it (or copied from a kept template of this MLflow version) and published under
its name only once whole and only if no other process published one first, and a half-migrated store refused with
how to recover."""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
import sqlite3
import uuid
from pathlib import Path

import mlflow
from mlflow import MlflowClient

SQLITE = "sqlite:///"


def resolve_tracking_uri(uri: str) -> str:
    """Pin a relative SQLite path to the working directory of now.

    MLflow caches one store per URI string, so a relative `sqlite:///mlflow.db` would keep
    writing to the first directory it was opened in after the process changes directory.
    """
    if uri.startswith(SQLITE) and not uri.startswith(SQLITE + "/"):
        return SQLITE + str(Path(uri.removeprefix(SQLITE)).resolve())
    return uri


def ensure_sqlite_store(database: Path) -> None:
    """Make sure `database` is a whole MLflow store: create a missing one atomically; refuse a half-migrated one.

    MLflow migrates a new database in place, so a first run that ran out of disk space (or was
    killed) left a store that every later run failed on. Here the migrations run on a temporary
    file beside it, which takes the real name only once they have all succeeded, and only if no
    other process gave that name a store first: two runs starting together on a new store once
    both published theirs, and the one whose store was replaced under it found it "a readonly
    database".

    Raises:
        ValueError: naming the database and how to recover.
    """
    database = Path(database)
    if database.exists() and database.stat().st_size > 0:
        _refuse_half_migrated(database)
        return
    partial = database.with_name(f".{database.name}.{uuid.uuid4().hex[:8]}.partial")
    try:
        if not _from_template(partial):
            _migrate(partial)
            _keep_as_template(partial)
        _publish(partial, database)
    except Exception as exc:
        raise ValueError(f"cannot create the MLflow database {database}: {str(exc).splitlines()[0]}") from None
    finally:
        partial.unlink(missing_ok=True)


def _migrate(database: Path) -> None:
    """Create a store at `database` the way MLflow does: its tables, then every migration (about 50, over a second
    of a CPU's time)."""
    logging.getLogger("mlflow.store.db.utils").setLevel(logging.WARNING)  # "Creating initial MLflow database..."
    client = MlflowClient(tracking_uri=SQLITE + str(database))
    client.search_experiments(max_results=1)
    client.search_registered_models(max_results=1)


def store_template() -> Path:
    """Where a new, migrated store of this MLflow version is kept (`DEPTHFINDER_CACHE`, default
    ~/.cache/depthfinder): a store made for a new folder is a copy of it, not its migrations run again."""
    cache = os.environ.get("DEPTHFINDER_CACHE") or Path.home() / ".cache" / "depthfinder"
    return Path(cache) / f"mlflow-{mlflow.__version__}-store.db"


def _from_template(database: Path) -> bool:
    """Copy the kept template to `database`, its default experiment's artifacts beside the working directory as
    MLflow puts a new store's (they name the folder the template was made in); False when there is no whole
    template to copy."""
    template = store_template()
    if not template.is_file():
        return False
    try:
        _refuse_half_migrated(template)
        shutil.copyfile(template, database)
        with contextlib.closing(sqlite3.connect(database)) as connection, connection:
            connection.execute("UPDATE experiments SET artifact_location = ? WHERE experiment_id = 0",
                               (str(Path.cwd() / "mlruns" / "0"),))
    except (ValueError, sqlite3.Error):  # not a whole store: make one and keep it instead
        database.unlink(missing_ok=True)
        return False
    return True


def _keep_as_template(database: Path) -> None:
    """Keep a copy of a store just made as the template of the next (written whole, then renamed); a cache that
    cannot be written (a read-only home, a full disk) only means the next store is migrated too."""
    template = store_template()
    kept = template.with_name(f".{template.name}.{uuid.uuid4().hex[:8]}.partial")
    try:
        template.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(database, kept)
        os.replace(kept, template)
    except OSError:
        kept.unlink(missing_ok=True)


def _publish(partial: Path, database: Path) -> None:
    """Give `partial` the name `database` unless another process has given it a store first."""
    if database.exists() and database.stat().st_size == 0:  # an empty file (touched, or SQLite's): no store yet
        os.replace(partial, database)
        return
    try:
        os.link(partial, database)  # fails if the name is taken, where a rename would replace it
    except FileExistsError:
        _refuse_half_migrated(database)  # the winner's, published only once whole
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV):
            raise
        os.replace(partial, database)  # a file system without hard links: the rename, as before


def _refuse_half_migrated(database: Path) -> None:
    with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as connection:
        try:
            tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        except sqlite3.DatabaseError as exc:
            raise ValueError(f"{database} is not a readable SQLite database ({exc}); move it away") from None
    leftovers = [table for table in tables if table.startswith("_alembic_tmp_")]
    if leftovers:
        raise ValueError(
            f"{database} is half-migrated (table {leftovers[0]} is left from a migration that ran out of disk space or "
            f"was killed); if it holds runs you need, run `mlflow db upgrade {SQLITE}{database}`, otherwise move it "
            f"away (mv {database} {database}.broken) and a new one is made"
        )
