"""The layers stay layers: the model, the data, the audit and the selection logic import without Prefect or MLflow."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Every module of encoder/ and expectations/ except the one part of encoder that talks to MLflow.
DOMAIN = sorted(
    ".".join(path.relative_to(ROOT).with_suffix("").parts)
    for package in ("encoder", "expectations")
    for path in (ROOT / package).rglob("*.py")
    if path.name != "__init__.py" and "tracking" not in path.relative_to(ROOT).parts
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
    assert {"encoder.model", "encoder.training", "encoder.selection.rule", "expectations.table.load",
            "expectations.audit.run", "expectations.audit.checks.suspected_label_noise"} <= set(DOMAIN)

    result = subprocess.run([sys.executable, "-c", BLOCK, *DOMAIN], cwd=ROOT, capture_output=True, text=True,
                            timeout=300)

    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == f"imported {len(DOMAIN)}"


def test_the_blocking_itself_works() -> None:
    result = subprocess.run([sys.executable, "-c", BLOCK, "encoder.tracking.runs"], cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode != 0 and "mlflow" in result.stderr
