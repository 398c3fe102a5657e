"""How the audit scales: seconds and rows/s per check on 10k, 100k and 1M synthetic short texts.

The table is what a team would feed depthfinder: short texts (4-16 words from a Zipf-like
vocabulary of 20,000 words, three classes with their own favourite words), 3 % exact
duplicates and 2 % near-duplicates (one word changed) scattered over the splits, a few
empty texts, and two metadata columns (a source and an id). The split is given (random
80/10/10), so every check has work to do; `assign_splits`, which groups exact and
near-duplicates before splitting, is timed on its own.

Usage: .venv/bin/python -m bench.audit_scaling [--sizes 10000,100000,1000000]

The last line is `RESULT seconds_1m=<...> rows_per_s_1m=<...>`: the audit's seconds on
1M rows for every check except confident learning (which judges a fixed-size sample and
is reported on its own line), including the shared normalise-and-hash pass and GX's own
work, and rows per second. Building the Data Docs HTML (which the retrain flow does) and
`assign_splits` are reported on their own lines. Times are wall-clock seconds on
whatever machine runs it.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from depthfinder.expectations.audit.config import AuditConfig
from depthfinder.expectations.audit.run import run_audit
from depthfinder.expectations.table.split import assign_splits

VOCABULARY = 20_000
CLASSES = ("alpha", "beta", "gamma")
CONFIDENT_LEARNING = "suspected_label_noise"
GX_OVERHEAD = "GX context, results, report"
DATA_DOCS = "GX Data Docs (HTML)"


def synthetic_table(rows: int, seed: int = 0) -> pd.DataFrame:
    """`rows` short labelled texts with duplicates, near-duplicates, empties, a source and an id."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    lengths = rng.integers(3, 9, size=VOCABULARY)
    vocabulary = np.array(["".join(rng.choice(letters, n)) for n in lengths], dtype=object)
    weights = 1.0 / (np.arange(VOCABULARY) + 2.7)  # Zipf-Mandelbrot, like word frequencies
    weights /= weights.sum()
    labels = rng.integers(len(CLASSES), size=rows)
    counts = rng.integers(4, 17, size=rows)
    words = rng.choice(VOCABULARY, size=int(counts.sum()), p=weights)
    # Each class prefers its own slice of the rare words: a signal a baseline can learn.
    owner = np.repeat(labels, counts)
    favourite = rng.random(len(words)) < 0.15
    words[favourite] = 1000 + owner[favourite] * 5000 + rng.integers(5000, size=int(favourite.sum()))
    ends = np.cumsum(counts)
    texts = [" ".join(vocabulary[words[end - n : end]]) for end, n in zip(ends, counts, strict=True)]
    texts = np.array(texts, dtype=object)
    copies = rng.choice(rows, size=rows // 33, replace=False)  # 3 % exact duplicates
    texts[copies] = texts[rng.integers(rows, size=len(copies))]
    near = rng.choice(rows, size=rows // 50, replace=False)  # 2 % near-duplicates
    sources = texts[rng.integers(rows, size=len(near))]
    texts[near] = [f"{text} {vocabulary[rng.integers(VOCABULARY)]}" for text in sources]
    texts[rng.choice(rows, size=max(rows // 2000, 1), replace=False)] = " "
    return pd.DataFrame({
        "text": pd.Series(texts, dtype="str"),
        "label": pd.Series(np.array(CLASSES)[labels], dtype="str"),
        "split": pd.Series(rng.choice(["train", "val", "test"], size=rows, p=[0.8, 0.1, 0.1]), dtype="str"),
        "row": np.arange(rows, dtype=np.int64),
        "source": pd.Series(rng.choice(["web", "app", "mail", "api"], size=rows), dtype="str"),
        "id": rng.permutation(rows) + 10_000,
    })


def measure(rows: int) -> dict[str, float]:
    """Seconds per audit step on `rows` rows (and of assign_splits on the same texts)."""
    table = synthetic_table(rows)
    started = time.perf_counter()
    assign_splits(table.drop(columns="split"), 0.1, 0.1, seed=1)
    split_seconds = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as docs_dir:
        started = time.perf_counter()
        report = run_audit(table, AuditConfig(), docs_dir=Path(docs_dir))
        wall = time.perf_counter() - started
    seconds = {"prepare (normalise, hash)": report.prepare_seconds}
    seconds.update({check.name: check.seconds for check in report.checks})
    seconds[GX_OVERHEAD] = wall - sum(seconds.values()) - report.docs_seconds
    seconds[DATA_DOCS] = report.docs_seconds
    seconds["assign_splits (grouping)"] = split_seconds
    failed = [check.name for check in report.checks if "not_run" in check.observed]
    if failed:
        raise RuntimeError(f"checks did not run on {rows} rows: {', '.join(failed)}")
    noise = report.check(CONFIDENT_LEARNING).observed
    seconds["_judged"] = noise.get("judged_rows", 0)
    return seconds


def _size(rows: int) -> str:
    """10000 -> 10k, 1000000 -> 1M."""
    return f"{rows // 1_000_000}M" if rows % 1_000_000 == 0 else f"{rows / 1000:g}k"


def main(argv: list[str] | None = None) -> int:
    import great_expectations  # noqa: F401  a one-off import (2-3 s) that no audit size should be charged

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated row counts")
    sizes = [int(size) for size in parser.parse_args(argv).sizes.split(",")]
    results = {}
    for rows in sizes:
        results[rows] = measure(rows)
        print(f"measured {rows:,} rows", file=sys.stderr, flush=True)
    steps = [name for name in results[sizes[0]] if not name.startswith("_")]
    audit_steps = [name for name in steps if name not in (CONFIDENT_LEARNING, "assign_splits (grouping)", DATA_DOCS)]
    print(f"# audit scaling on {platform.machine()} with {os.cpu_count()} CPUs, Python {platform.python_version()}")
    header = ["step"] + [f"{label} {_size(rows)}" for rows in sizes for label in ("s", "rows/s")]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    totals = {rows: sum(results[rows][name] for name in audit_steps) for rows in sizes}
    lines = [(name, {rows: results[rows][name] for rows in sizes}) for name in audit_steps]
    lines.append(("**all checks but confident learning**", totals))
    judged = ", ".join(f"{int(results[rows]['_judged']):,}" for rows in sizes)
    lines.append((f"{CONFIDENT_LEARNING} (judges {judged} rows)", {r: results[r][CONFIDENT_LEARNING] for r in sizes}))
    for name in (DATA_DOCS, "assign_splits (grouping)"):
        lines.append((name, {rows: results[rows][name] for rows in sizes}))
    for name, by_size in lines:
        cells = [f"{by_size[rows]:.2f} | {rows / max(by_size[rows], 1e-9):,.0f}" for rows in sizes]
        print(f"| {name} | " + " | ".join(cells) + " |")
    largest = max(sizes)
    print(f"RESULT seconds_1m={totals[largest]:.1f} rows_per_s_1m={largest / totals[largest]:.0f}"
          if largest == 1_000_000 else
          f"RESULT seconds_{largest}={totals[largest]:.1f} rows_per_s_{largest}={largest / totals[largest]:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
