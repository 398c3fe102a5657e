"""The layers stay layers: imports only go down the floors, and the model, the data, the audit, the evidence and the
decision import without Prefect or MLflow."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "depthfinder"  # the one import root: every floor is a package of it
# Every module of the floors below the MLflow record: the decision, the model, the data and the evidence.
DOMAIN = sorted(
    ".".join(path.relative_to(ROOT).with_suffix("").parts)
    for package in ("selection", "encoder", "expectations", "evidence")
    for path in (PACKAGE / package).rglob("*.py")
    if path.name != "__init__.py"
)
BLOCK = """
import importlib, sys
for name in ("prefect", "mlflow"):
    sys.modules[name] = None  # importing it now raises ImportError
for module in sys.argv[1:]:
    importlib.import_module(module)
print("imported", len(sys.argv) - 1)
"""


def test_domain_code_imports_with_prefect_and_mlflow_blocked() -> None:
    assert {f"depthfinder.{module}" for module in (
        "encoder.model", "encoder.training", "selection.rule", "expectations.table.load", "evidence.bootstrap",
        "expectations.audit.run", "expectations.audit.checks.suspected_label_noise")} <= set(DOMAIN)

    result = subprocess.run([sys.executable, "-c", BLOCK, *DOMAIN], cwd=ROOT, capture_output=True, text=True,
                            timeout=300)

    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == f"imported {len(DOMAIN)}"


def test_the_blocking_itself_works() -> None:
    result = subprocess.run([sys.executable, "-c", BLOCK, "depthfinder.tracking.runs"], cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode != 0 and "mlflow" in result.stderr


# The floors, top down: a module imports only from its own floor or one below (cli -> flows -> tasks -> tracking (the
# MLflow record) -> selection (the decision) -> encoder (the model) -> expectations (the data) -> evidence (metrics,
# the paired bootstrap, the margin predicate) -> runtime), so runtime, the ground floor, imports nothing else of
# depthfinder. One package per floor: no two floors import each other.
FLOORS = (("cli",), ("flows",), ("tasks",), ("tracking",), ("selection",), ("encoder",), ("expectations",),
          ("evidence",), ("runtime",))
FLOOR = {package: number for number, packages in enumerate(FLOORS) for package in packages}


def _imported(path: Path) -> set[str]:
    """The floors of depthfinder a module imports anywhere in it (inside functions too): `depthfinder.<floor>...`."""
    modules: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules |= {node.module} | ({f"{node.module}.{alias.name}" for alias in node.names}
                                        if node.module == "depthfinder" else set())
    return {module.split(".")[1] for module in modules if module.startswith("depthfinder.")} & FLOOR.keys()


def test_imports_only_go_down_the_floors() -> None:
    upward = [
        f"{path.relative_to(PACKAGE)} imports {package}"
        for package in FLOOR for path in sorted((PACKAGE / package).rglob("*.py"))
        for imported in _imported(path) if FLOOR[imported] < FLOOR[package]
    ]
    assert not upward, upward


def test_the_ground_floor_imports_nothing_of_depthfinder_and_the_rest_finds_its_machinery_there() -> None:
    modules = sorted((PACKAGE / "runtime").rglob("*.py"))
    assert {path.stem for path in modules} >= {"signals", "lock", "server", "services", "stack", "faults", "guard",
                                                "files", "credentials", "liveness", "retries", "interrupt",
                                                "environment"}
    assert not {f"{path.name}: {imported}" for path in modules for imported in _imported(path) - {"runtime"}}
    machinery = {"signals.py", "lock.py", "server.py", "services.py", "stack.py", "faults.py", "cli.py",
                 "reference.py"}
    assert not machinery & {path.name for path in (PACKAGE / "flows").glob("*.py")}, "flows/ holds the pipeline only"
    assert not {"credentials.py", "liveness.py"} & {path.name for path in (PACKAGE / "tracking").glob("*.py")}
    assert not (PACKAGE / "encoder" / "interrupt.py").exists()


def test_the_floors_check_finds_an_upward_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from depthfinder.flows.config import RunConfig\n"
                      "    import depthfinder.cli.main, os\n    from depthfinder import tasks\n    import encoder\n")
    assert _imported(module) == {"flows", "cli", "tasks"}
