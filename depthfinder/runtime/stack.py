"""The team stack on one machine: PostgreSQL, MLflow and Prefect servers on it, a worker, and a Dask cluster.

    python -m depthfinder.runtime.stack up      # or: make stack-up  (idempotent: starts what is not running)
    python -m depthfinder.runtime.stack status  # what runs, where; exit 1 when something is down
    python -m depthfinder.runtime.stack env     # the settings that point depthfinder at it, as shell exports
    python -m depthfinder.runtime.stack down    # or: make stack-down

Everything listens on 127.0.0.1 (PostgreSQL on a Unix socket only) and lives under one
folder (`--home`, default `.stack`): the database cluster, the MLflow artifact root, the
Prefect home, each service's log and `stack.json`, which records each process and where it
listens. PostgreSQL is the system's (Debian/Ubuntu: `apt-get install postgresql
postgresql-contrib`; Prefect needs contrib's pg_trgm), run as the `postgres` user when the
stack is brought up as root, so the stack's folder must be reachable by that user.

Both servers ask for credentials, as a team's would: MLflow runs its basic-auth app (an
admin account; users and permissions in the stack's PostgreSQL) and Prefect checks an API
auth string. Both are generated on the first `up` into `credentials.env` (mode 600), which
the worker and the Dask workers are started with; `env` prints the line that sources it
rather than the secrets.

depthfinder is pointed at the stack by configuration only: `PREFECT_API_URL`,
`registry.tracking_uri` (the MLflow server) and `sweep.runner.kind: dask` with
`sweep.runner.dask_address` (the scheduler); `env` prints them and `stack.yaml` in the home holds
the configuration sections.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from depthfinder.runtime.files import write_text_whole
from depthfinder.runtime.services import HOST, alive, bin_path, healthy, listening, stop_group, wait_for

ROOT = Path(__file__).resolve().parents[2]  # the checkout the worker runs flows from (prefect.yaml's pull step)
POOL = "depthfinder"
ADMIN = "depthfinder"  # the MLflow admin account and the Prefect auth string's user
DASK_WORKERS = 2
WORKER_POLL_SECONDS = 2  # how often the worker asks the server for runs to start (Prefect's default: 10)
# The long-running services besides PostgreSQL, in start order (service_commands builds each one's command).
SERVICES = ("mlflow", "prefect", "worker", "dask-scheduler", *(f"dask-worker-{n}" for n in range(1, DASK_WORKERS + 1)))


@dataclass(frozen=True)
class Ports:
    """Where the services listen on 127.0.0.1."""

    mlflow: int = 5050
    prefect: int = 4250
    dask: int = 8786


@dataclass
class Stack:
    """The stack's folder, ports and running processes (name -> pid of a process-group leader)."""

    home: Path
    ports: Ports = field(default_factory=Ports)
    pids: dict[str, int] = field(default_factory=dict)

    @property
    def state_file(self) -> Path:
        return self.home / "stack.json"

    @property
    def postgres_dir(self) -> Path:
        return self.home / "postgres"

    @property
    def mlflow_uri(self) -> str:
        return f"http://{HOST}:{self.ports.mlflow}"

    @property
    def prefect_api(self) -> str:
        return f"http://{HOST}:{self.ports.prefect}/api"

    @property
    def dask_address(self) -> str:
        return f"tcp://{HOST}:{self.ports.dask}"

    def database_uri(self, database: str, driver: str = "postgresql") -> str:
        """A URI of one of the stack's databases over its Unix socket."""
        return f"{driver}://postgres:@/{database}?host={self.postgres_dir}"

    @property
    def credentials_file(self) -> Path:
        return self.home / "credentials.env"

    def environment(self) -> dict[str, str]:
        """What points depthfinder (and the Prefect and MLflow clients) at the stack, credentials included."""
        return {"PREFECT_API_URL": self.prefect_api, "MLFLOW_TRACKING_URI": self.mlflow_uri, **self.credentials()}

    def credentials(self) -> dict[str, str]:
        """The clients' credentials (MLflow's user and password, Prefect's auth string), made on first use."""
        if not self.credentials_file.is_file():
            self.home.mkdir(parents=True, exist_ok=True)
            secret = secrets.token_urlsafe(18)
            values = {"MLFLOW_TRACKING_USERNAME": ADMIN, "MLFLOW_TRACKING_PASSWORD": secret,
                      "PREFECT_API_AUTH_STRING": f"{ADMIN}:{secret}"}
            write_text_whole(self.credentials_file, "".join(f"export {k}={v}\n" for k, v in values.items()), 0o600)
        lines = self.credentials_file.read_text(encoding="utf-8").splitlines()
        return dict(line.removeprefix("export ").split("=", 1) for line in lines if "=" in line)

    def flask_secret(self) -> str:
        """The key MLflow's basic-auth app signs its CSRF tokens with (the server's alone), made on first use."""
        path = self.home / "mlflow-flask-secret"
        if not path.is_file():
            write_text_whole(path, secrets.token_urlsafe(32), 0o600)
        return path.read_text(encoding="utf-8").strip()

    def save(self) -> None:
        state = {"home": str(self.home), "ports": asdict(self.ports), "pids": self.pids}
        write_text_whole(self.state_file, json.dumps(state, indent=2) + "\n")

    @classmethod
    def load(cls, home: Path, ports: Ports | None = None) -> Stack:
        """The stack recorded in `home`, or a new one with `ports`."""
        state_file = Path(home) / "stack.json"
        if not state_file.is_file():
            return cls(Path(home).resolve(), ports or Ports())
        state = json.loads(state_file.read_text(encoding="utf-8"))
        return cls(Path(state["home"]), Ports(**state["ports"]), {k: int(v) for k, v in state["pids"].items()})


def launch(stack: Stack, name: str, command: list[str], env: dict[str, str] | None = None) -> int:
    """Start `command` in a session of its own (so `down` can stop its whole group), logging to <home>/logs."""
    logs = stack.home / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    with open(logs / f"{name}.log", "ab") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True, env={**os.environ, **(env or {})}, cwd=stack.home)
    stack.pids[name] = process.pid
    stack.save()
    return process.pid


def postgres_bin() -> Path:
    """The folder of PostgreSQL's server programs: $DEPTHFINDER_PG_BIN, else the newest Debian/Ubuntu install
    (`apt-get install postgresql postgresql-contrib`), else wherever `pg_ctl` is on PATH."""
    if given := os.environ.get("DEPTHFINDER_PG_BIN"):
        return Path(given)
    installed = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), key=lambda p: int(p.parts[-3]))
    found = installed[-1] if installed else shutil.which("pg_ctl")
    if found is None:
        raise RuntimeError("no PostgreSQL server found: install it (Debian/Ubuntu: apt-get install postgresql "
                           "postgresql-contrib) or set DEPTHFINDER_PG_BIN to the folder holding pg_ctl")
    return Path(found).resolve().parent


def as_database_user(command: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: as root, run `command` as the `postgres` system user."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


def postgres(stack: Stack, program: str, *args: str) -> subprocess.CompletedProcess:
    """Run one of PostgreSQL's programs as the database user; RuntimeError with its output when it fails."""
    done = subprocess.run(as_database_user([str(postgres_bin() / program), *args]), capture_output=True, text=True,
                          timeout=120, cwd="/")
    if done.returncode != 0:
        raise RuntimeError(f"{program} {' '.join(args)} failed: {(done.stderr or done.stdout).strip()[-1500:]}")
    return done


def start_postgres(stack: Stack) -> None:
    """Initialise (once) and start the database cluster, listening on a Unix socket in its own folder only;
    create the mlflow and prefect databases."""
    data = stack.postgres_dir
    if not (data / "PG_VERSION").is_file():
        data.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(data, "postgres", "postgres")
        postgres(stack, "initdb", "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
    if not alive(postmaster_pid(stack)):
        log = stack.home / "logs" / "postgres.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.touch()
        if os.geteuid() == 0:
            shutil.chown(log, "postgres", "postgres")
        postgres(stack, "pg_ctl", "-D", str(data), "-l", str(log), "-w", "-o", f"-h '' -k {data}", "start")
    for database in ("mlflow", "mlflow_auth", "prefect"):
        exists = postgres(stack, "psql", "-h", str(data), "-U", "postgres", "-tAc",
                          f"SELECT 1 FROM pg_database WHERE datname = '{database}'").stdout.strip()
        if not exists:
            postgres(stack, "createdb", "-h", str(data), "-U", "postgres", database)
    stack.pids["postgres"] = postmaster_pid(stack)
    stack.save()


def postmaster_pid(stack: Stack) -> int | None:
    """The running cluster's pid, from its postmaster.pid."""
    try:
        return int((stack.postgres_dir / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def stop_postgres(stack: Stack) -> None:
    """Stop the database cluster (its data stays for the next `up`)."""
    if alive(postmaster_pid(stack)):
        postgres(stack, "pg_ctl", "-D", str(stack.postgres_dir), "-w", "-m", "fast", "stop")


def service_commands(stack: Stack) -> dict[str, tuple[list[str], dict[str, str]]]:
    """Each long-running service's command line and environment, in start order."""
    clients = stack.environment()  # every process that calls a server has the credentials
    prefect_env = clients | {"PREFECT_HOME": str(stack.home / "prefect"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                             "DO_NOT_TRACK": "true"}
    artifacts = stack.home / "mlflow-artifacts"
    commands = {
        "mlflow": ([bin_path("mlflow"), "server", "--host", HOST, "--port", str(stack.ports.mlflow),
                    "--backend-store-uri", stack.database_uri("mlflow", "postgresql+psycopg2"),
                    "--artifacts-destination", str(artifacts), "--workers", "1", "--app-name", "basic-auth"],
                   {"MLFLOW_DISABLE_TELEMETRY": "true", "MLFLOW_AUTH_CONFIG_PATH": str(mlflow_auth_config(stack)),
                    "MLFLOW_FLASK_SERVER_SECRET_KEY": stack.flask_secret()}),
        "prefect": ([bin_path("prefect"), "server", "start", "--host", HOST, "--port", str(stack.ports.prefect),
                     "--analytics-off"],
                    prefect_env | {"PREFECT_API_DATABASE_CONNECTION_URL":
                                   stack.database_uri("prefect", "postgresql+asyncpg"),
                                   "PREFECT_SERVER_API_AUTH_STRING": clients["PREFECT_API_AUTH_STRING"]}),
        # A run triggered from the UI or the API starts within WORKER_POLL_SECONDS, for one cheap query each time.
        "worker": ([bin_path("prefect"), "worker", "start", "--pool", POOL, "--type", "process"],
                   prefect_env | {"DEPTHFINDER_HOME": str(ROOT),
                                  "PREFECT_WORKER_QUERY_SECONDS": str(WORKER_POLL_SECONDS)}),
        "dask-scheduler": ([bin_path("dask"), "scheduler", "--host", HOST, "--port", str(stack.ports.dask),
                            "--dashboard-address", ":0"], {}),
    }
    for number in range(1, DASK_WORKERS + 1):
        commands[f"dask-worker-{number}"] = (
            [bin_path("dask"), "worker", stack.dask_address, "--host", HOST, "--nthreads", "1", "--nworkers", "1",
             "--name", f"worker-{number}", "--dashboard-address", ":0", "--local-directory",
             str(stack.home / "dask")], clients | {"OMP_NUM_THREADS": "1"})
    return commands


def mlflow_auth_config(stack: Stack) -> Path:
    """MLflow's basic-auth settings: read-only by default, users in the stack's database, the admin account."""
    config = stack.home / "mlflow-auth.ini"
    credentials = stack.credentials()
    write_text_whole(
        config,
        "[mlflow]\ndefault_permission = READ\n"
        f"database_uri = {stack.database_uri('mlflow_auth', 'postgresql+psycopg2')}\n"
        f"admin_username = {credentials['MLFLOW_TRACKING_USERNAME']}\n"
        f"admin_password = {credentials['MLFLOW_TRACKING_PASSWORD']}\n"
        "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n", 0o600)
    return config


def readiness(stack: Stack, name: str) -> Callable[[], bool]:
    """How to tell that service `name` is ready."""
    if name == "mlflow":
        return lambda: healthy(f"{stack.mlflow_uri}/health")
    if name == "prefect":
        return lambda: healthy(f"{stack.prefect_api}/health", stack.credentials()["PREFECT_API_AUTH_STRING"])
    if name == "dask-scheduler":
        return lambda: listening(stack.ports.dask)
    if name.startswith("dask-worker"):
        return lambda: _dask_workers(stack) >= int(name.rsplit("-", 1)[1])
    return lambda: True  # the worker: it polls the pool; `status` shows it


def _dask_workers(stack: Stack) -> int:
    """How many workers the scheduler knows."""
    from distributed import Client

    try:
        with Client(stack.dask_address, timeout=3) as client:
            return len(client.scheduler_info()["workers"])
    except OSError:
        return 0


def up(stack: Stack) -> Stack:
    """Start whatever of the stack is not running, each waited on until it answers; a no-op when all run.

    A port another process holds is refused before anything starts; when a service fails to come up,
    what this call started is stopped again and RuntimeError says which and shows its log.
    """
    stack.home.mkdir(parents=True, exist_ok=True)
    commands = service_commands(stack)
    missing = [name for name in commands if not alive(stack.pids.get(name))]
    ports = {"mlflow": stack.ports.mlflow, "prefect": stack.ports.prefect, "dask-scheduler": stack.ports.dask}
    if busy := [f"{name} port {port}" for name, port in ports.items() if name in missing and listening(port)]:
        raise RuntimeError(f"in use by another process: {', '.join(busy)}; stop it or choose other ports")
    started: list[str] = []
    try:
        if not alive(postmaster_pid(stack)):
            started.append("postgres")
        start_postgres(stack)
        for name in missing:
            command, env = commands[name]
            if name == "worker":
                _create_pool(stack)
            pid = launch(stack, name, command, env)
            started.append(name)
            wait_for(name, readiness(stack, name), pid, stack.home / "logs" / f"{name}.log")
    except BaseException:
        down(stack, only=started)
        raise
    (stack.home / "stack.yaml").write_text(stack_yaml(stack), encoding="utf-8")
    return stack


def _create_pool(stack: Stack) -> None:
    """The `process` work pool the worker serves (kept when it exists)."""
    env = {**os.environ, **stack.environment(), "PREFECT_HOME": str(stack.home / "prefect")}
    subprocess.run([bin_path("prefect"), "work-pool", "create", POOL, "--type", "process", "--overwrite"],
                   env=env, check=True, capture_output=True, timeout=120)


def stack_yaml(stack: Stack) -> str:
    """The configuration sections that point a run at the stack (merge them into your run.yaml)."""
    return (f"registry: {{tracking_uri: \"{stack.mlflow_uri}\"}}\n"
            f"sweep: {{runner: {{kind: dask, dask_address: \"{stack.dask_address}\"}}}}\n")


def down(stack: Stack, only: list[str] | None = None) -> None:
    """Stop every service of the stack (or `only` those), newest first, and the database; the data stays for the
    next `up`."""
    names = [name for name in stack.pids if only is None or name in only]
    for name in reversed([name for name in names if name != "postgres"]):
        stop_group(stack.pids.pop(name))
    if "postgres" in names or only is None:
        stop_postgres(stack)
        stack.pids.pop("postgres", None)
    stack.save()


def status(stack: Stack) -> list[tuple[str, int | None, bool]]:
    """(service, pid, running) of each part of the stack."""
    return [(name, stack.pids.get(name), alive(stack.pids.get(name))) for name in ["postgres", *SERVICES]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m depthfinder.runtime.stack", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["up", "down", "status", "env"])
    parser.add_argument("--home", type=Path, default=Path(os.environ.get("DEPTHFINDER_STACK", ".stack")),
                        help="the stack's folder (default: .stack, or $DEPTHFINDER_STACK)")
    args = parser.parse_args(argv)
    stack = Stack.load(args.home)
    if args.action == "up":
        try:
            up(stack)
        except (RuntimeError, subprocess.SubprocessError) as error:
            print(f"depthfinder.runtime.stack: {error}", file=sys.stderr)
            return 1
        print(f"stack up in {stack.home}: MLflow {stack.mlflow_uri}, Prefect {stack.prefect_api}, "
              f"Dask {stack.dask_address}; `python -m depthfinder.runtime.stack env` prints the settings")
    elif args.action == "down":
        down(stack)
        print(f"stack down (data kept in {stack.home}; delete the folder to start afresh)")
    elif args.action == "env":
        print(f"export PREFECT_API_URL={stack.prefect_api}\nexport MLFLOW_TRACKING_URI={stack.mlflow_uri}\n"
              f". {stack.credentials_file}  # the credentials (MLflow user and password, Prefect auth string)")
        print(f"# and run with --config {stack.home / 'stack.yaml'} (or merge its sections into yours)")
    else:
        states = status(stack)
        for name, pid, running in states:
            print(f"{name:<16} {'running' if running else 'down':<8} pid {pid or '-'}")
        return 0 if all(running for _, _, running in states) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
