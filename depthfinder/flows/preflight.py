"""What can be checked before a run does any work: output paths, the device, the stores it writes to.

Each check raises ValueError with one line naming what is wrong, so the CLI exits with code 2
before anything is trained or registered, and a run started from the Prefect UI fails in
seconds instead of after the sweep.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from depthfinder.flows.config import TRACKING_URI, RunConfig, SweepConfig

if TYPE_CHECKING:
    from depthfinder.encoder.families import Family

# Bytes of a parameter's float32 weight, which every candidate holds in this machine's memory when it is built
# (training needs four times as much: its gradient and AdamW's two moments).
WEIGHT_BYTES = 4
# A tracking server that does not answer within this many seconds is reported as unreachable
# (MLflow's own retries take minutes).
REACHABLE_SECONDS = 5.0


def check_run(config: RunConfig, outputs: Iterable[Path | None] = ()) -> None:
    """Check the kind of MLflow store, the output files, the work folder, the accelerator,
    the checkpoint, what the parameter count rules out, the Prefect API, the Dask scheduler, the MLflow store, its
    experiment and the champion."""
    check_store_uri(config.registry.tracking_uri)
    for path in outputs:
        if path is not None:
            check_writable(path, "output file")
    check_writable(Path(config.registry.workdir), "work folder", folder=True)
    check_accelerator(config.train.accelerator)
    check_cost(config.sweep.cost)
    check_families(config)
    check_prefect_api()
    check_dask_scheduler(config.sweep)
    registry = config.registry
    check_tracking_store(registry.tracking_uri, registry.experiment)
    check_champion(registry.tracking_uri, registry.model_name)


def check_writable(path: Path, what: str, folder: bool = False) -> None:
    """`path` can be written (a file) or created and written into (a folder), leaving nothing behind.

    Tried, not inferred from permission bits (root passes those everywhere, /proc included): a
    file is created and removed in the folder that would hold `path`, or, where that folder is
    missing, a folder in its nearest existing ancestor.
    """
    path = Path(path).absolute()
    if path.exists() and folder != path.is_dir():
        raise ValueError(f"{what} {path} is {'not ' if folder else ''}a folder")
    home = path if folder and path.exists() else path.parent
    ancestor = home
    while not ancestor.exists():
        ancestor = ancestor.parent
    try:
        if ancestor == home:
            with tempfile.TemporaryFile(dir=home):
                pass
        else:
            with tempfile.TemporaryDirectory(dir=ancestor):
                pass
    except OSError as exc:
        raise ValueError(f"{what} {path} cannot be written: {exc.strerror} in {ancestor}") from None


def check_accelerator(accelerator: str) -> None:
    if accelerator == "gpu":
        import torch

        if not torch.cuda.is_available():
            raise ValueError("setting train.accelerator: gpu, but torch sees no CUDA GPU here; use auto or cpu")


def check_cost(cost: str) -> None:
    """The rule's cost can be measured here: the int8 ONNX latency needs ONNX Runtime."""
    if cost == "onnx_latency_ms_p50":
        try:
            import onnxruntime  # noqa: F401
        except ImportError:
            raise ValueError("setting sweep.cost: onnx_latency_ms_p50 needs ONNX Runtime: pip install "
                             "'depthfinder[onnx]'") from None


def check_families(config: RunConfig) -> None:
    """Each family the run sweeps opens (a pretrained checkpoint is found and checked, encoder.checkpoint) and
    can have every depth asked of it."""
    from depthfinder.encoder.families import depth_caps, open_families

    families = open_families(config.families, config.model)
    depth_caps(families, config.sweep.depths)
    check_hard_limits(config, families)


def check_hard_limits(config: RunConfig, families: list[Family]) -> None:
    """What the parameter count rules out before training, where that is certain: a hard limit no candidate can
    meet, or weights too large for this machine's memory. The fewest a family's candidates can have are those of
    its shallowest depth (Family.fewest_params). Latency is known only once a candidate is trained and measured."""
    import psutil

    from depthfinder.selection.candidate import arm_label

    shallowest = {family.name: 1 if config.sweep.strategy == "search" else min(family.depths(config.sweep.depths))
                  for family in families}  # the search screens every depth from 1
    fewest = {family.name: family.fewest_params(shallowest[family.name], config.model) for family in families}
    name = min(fewest, key=fewest.get)
    smallest = f"the smallest, {arm_label(name, shallowest[name], named=len(families) > 1 or None)}, has at least " \
               f"{fewest[name]:,}"
    limit = config.sweep.max_params
    if limit is not None and fewest[name] > limit:
        raise ValueError(f"setting sweep.max_params: no candidate can have as few as {limit:,} parameters: {smallest}")
    check_size_limit(config, families, shallowest)
    memory = psutil.virtual_memory().total + psutil.swap_memory().total
    if fewest[name] * WEIGHT_BYTES > memory:
        raise ValueError(f"no candidate fits in this machine's {memory / 1e9:.1f} GB of memory: {smallest} parameters "
                         f"({fewest[name] * WEIGHT_BYTES / 1e9:.1f} GB of float32 weights alone); make the model "
                         "smaller (model.d_model, d_ff, max_len, vocab_size, or a smaller checkpoint)")


def check_size_limit(config: RunConfig, families: list[Family], shallowest: dict[str, int]) -> None:
    """A size limit no candidate can meet, refused before training: a form weighs at least one byte per parameter
    outside the embeddings (which vocabulary pruning shrinks) as int8 ONNX, four as float32 torch without ONNX
    Runtime, whatever the data."""
    from depthfinder.selection.candidate import arm_label

    limit = config.sweep.max_size_mb
    if limit is None:
        return
    try:
        import onnxruntime  # noqa: F401 (int8 forms are weighed only with it)
    except ImportError:
        per_weight, form = 4, "float32 torch: ONNX Runtime, for int8 forms, is not installed"
    else:
        per_weight, form = 1, "int8"
    fewest = {family.name: family.fewest_params(shallowest[family.name], config.model, embeddings=False)
              for family in families}
    name = min(fewest, key=fewest.get)
    least = fewest[name] * per_weight / 2**20
    if least > limit:
        raise ValueError(f"setting sweep.max_size_mb: no candidate can ship in {limit:g} MiB: the smallest, "
                         f"{arm_label(name, shallowest[name], named=len(families) > 1 or None)}, weighs at least "
                         f"{least:.3g} MiB ({fewest[name]:,} parameters outside its embeddings, {form})")


def check_prefect_api() -> None:
    """A configured Prefect server answers (none configured: a temporary one is started)."""
    from depthfinder.runtime.server import api_problem

    if problem := api_problem():
        raise ValueError(problem)


def check_tracking_store(tracking_uri: str, experiment: str | None = None) -> None:
    """The MLflow store can be written: a SQLite file that is whole (created now, atomically, if missing), a
    tracking server that answers, or a database whose driver is installed and which answers; and the
    experiment, if it exists, is not deleted."""
    from depthfinder.tracking.store import SQLITE, ensure_sqlite_store, resolve_tracking_uri

    check_store_uri(tracking_uri)
    uri = resolve_tracking_uri(tracking_uri)
    if uri.startswith(SQLITE):
        database = Path(uri.removeprefix(SQLITE))
        check_writable(database, "MLflow database (registry.tracking_uri)")
        check_writable(database.parent, "folder of the MLflow database", folder=True)
        ensure_sqlite_store(database)
    elif uri.startswith(("http://", "https://")):
        _check_tracking_server(uri)
    elif uri.split(":", 1)[0].split("+", 1)[0] in DATABASES:
        _check_database(uri)
    if experiment is not None:
        _check_experiment(uri, experiment)


def check_store_uri(tracking_uri: str) -> None:
    """The tracking URI names a kind of store that MLflow's registry takes and that outlives the process."""
    scheme = match.group(1) if (match := re.match(r"([A-Za-z][A-Za-z0-9+.-]*):", tracking_uri)) else tracking_uri
    if scheme.split("+", 1)[0].lower() not in STORE_SCHEMES:
        raise ValueError(f"tracking URI {tracking_uri!r} is not a store depthfinder can use: give sqlite:///PATH, a "
                         "tracking server (http://HOST:PORT) or a database (postgresql://, mysql://, mssql://); "
                         "a plain path or file:// is MLflow's file store, in maintenance mode "
                         "(`mlflow migrate-filestore` moves one into a database)")
    if _in_memory_sqlite(tracking_uri):
        raise ValueError(f"tracking URI {tracking_uri} is an in-memory SQLite database, which is gone when the process "
                         "that opened it ends: a run opens its store in several processes and its registry must "
                         f"outlive it; give a file, e.g. {TRACKING_URI}")


def _in_memory_sqlite(uri: str) -> bool:
    """`sqlite://`, `sqlite:///`, `sqlite:///:memory:` or a `mode=memory` URI filename: SQLAlchemy's in-memory forms."""
    scheme, _, rest = uri.partition("://")
    path = rest.removeprefix("/").split("?", 1)[0]
    return scheme.split("+", 1)[0] == "sqlite" and (path in ("", ":memory:") or "mode=memory" in rest)


# Database stores MLflow's SQLAlchemy store takes (a dialect, optionally +driver), and the connect timeout
# argument of their default drivers.
DATABASES = {"postgresql": "connect_timeout", "mysql": "connect_timeout", "mssql": "timeout"}


# The schemes of the stores that hold MLflow's runs and registry (a database's may name a driver: postgresql+psycopg2).
STORE_SCHEMES = ("sqlite", "http", "https", *DATABASES, "databricks", "databricks-uc", "uc")


def _check_database(uri: str) -> None:
    """The driver of a database store imports, and the database answers within REACHABLE_SECONDS."""
    from sqlalchemy import create_engine
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError

    from depthfinder.runtime.credentials import redact, store_uri

    shown, real = redact(uri), store_uri(uri)
    try:
        url = make_url(real)
        url.get_dialect().import_dbapi()
    except (ArgumentError, NoSuchModuleError) as exc:
        raise ValueError(f"MLflow store {shown}: SQLAlchemy knows no such database driver ({exc})") from None
    except ImportError as exc:
        raise ValueError(f"MLflow store {shown}: its database driver {exc.name or ''} is not installed (install it, "
                         "or name one that is: postgresql+psycopg2://..., whose psycopg2-binary depthfinder's stack "
                         "extra installs)") from None
    engine = create_engine(real, connect_args={DATABASES[url.get_backend_name()]: int(REACHABLE_SECONDS)})
    try:
        with engine.connect():
            pass
    except SQLAlchemyError as exc:
        reason = redact(str(exc.orig if getattr(exc, "orig", None) else exc).strip().splitlines()[0])
        raise ValueError(f"the MLflow store {shown} does not answer ({reason}); start it or fix --tracking-uri") \
            from None
    finally:
        engine.dispose()


def _check_experiment(tracking_uri: str, experiment: str) -> None:
    from depthfinder.runtime.credentials import redact
    from depthfinder.tracking.runs import client_of

    found = client_of(tracking_uri).get_experiment_by_name(experiment)
    if found is not None and found.lifecycle_stage == "deleted":
        raise ValueError(
            f"MLflow experiment {experiment!r} is deleted (in the trash of {redact(tracking_uri)}): restore it with "
            f"`mlflow experiments restore --experiment-id {found.experiment_id}` or pick another with --experiment"
        )


def check_dask_scheduler(sweep: SweepConfig) -> None:
    """The Dask scheduler a sweep is given answers (a local cluster is started otherwise)."""
    import socket
    from urllib.parse import urlsplit

    if sweep.runner.kind != "dask" or not sweep.runner.dask_address:
        return
    address = sweep.runner.dask_address if "://" in sweep.runner.dask_address else f"tcp://{sweep.runner.dask_address}"
    parts = urlsplit(address)
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme not in ("tcp", "tls") or not parts.hostname or port is None:
        raise ValueError(f"sweep.runner.dask_address {sweep.runner.dask_address!r} is not a scheduler address such as "
                         "tcp://127.0.0.1:8786")
    try:
        socket.create_connection((parts.hostname, port), timeout=REACHABLE_SECONDS).close()
    except OSError as exc:
        raise ValueError(f"no Dask scheduler answers at {sweep.runner.dask_address} ({exc.strerror or exc}); start it "
                         "(dask scheduler) or fix --dask-address") from None


def check_champion(tracking_uri: str, model_name: str) -> None:
    """The model's champion, which a run scores on the rows added and against its challenger, is a depthfinder
    model (tracking.loading): nothing is trained before a foreign one is refused."""
    from depthfinder.tracking.loading import vouch
    from depthfinder.tracking.registry import current_champion
    from depthfinder.tracking.runs import client_of, use_store

    champion = current_champion(client_of(tracking_uri), model_name)
    if champion is not None:
        use_store(tracking_uri)
        try:
            vouch(f"models:/{model_name}/{champion.version}")
        except ValueError as exc:
            raise ValueError(f"the champion of {model_name!r}: {exc}") from None


def _check_tracking_server(uri: str) -> None:
    import httpx

    from depthfinder.runtime.credentials import redact, store_uri

    shown, uri = redact(uri), store_uri(uri)
    try:
        response = httpx.get(f"{uri.rstrip('/')}/health", timeout=REACHABLE_SECONDS)
    except httpx.HTTPError as exc:
        raise ValueError(f"no MLflow tracking server answers at {shown} ({type(exc).__name__}); start it or fix "
                         "--tracking-uri") from None
    if response.status_code >= 500:
        raise ValueError(f"the MLflow tracking server at {shown} answers {response.status_code}; check its log")
    user, password = os.environ.get("MLFLOW_TRACKING_USERNAME"), os.environ.get("MLFLOW_TRACKING_PASSWORD", "")
    probe = httpx.get(f"{uri.rstrip('/')}/api/2.0/mlflow/experiments/search", params={"max_results": 1},
                      auth=(user, password) if user else None, timeout=REACHABLE_SECONDS)
    if probe.status_code in (401, 403):
        given = f"refuses the credentials of user {user!r}" if user else "asks for credentials and none are set"
        raise ValueError(f"the MLflow tracking server at {shown} {given} (HTTP {probe.status_code}): set "
                         "MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD to an account it knows")
