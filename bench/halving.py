"""Successive halving against the full grid: the same choice for less training.

For each built-in dataset, `depthfinder run` twice in separate folders (no shared cache),
depths 1,2,4,6 and otherwise default settings: `--halving off` (every depth trains to the
end) and `--halving on`. Prints per depth the validation macro-F1 and epochs of each, the
chosen depth, the summed training seconds and the wall time, and ends with
`RESULT same_choice=<agreeing>/<datasets> train_seconds_ratio=<halving/full> wall_ratio=<halving/full>`.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from bench.common import run_depthfinder


def _train_seconds(summary: dict) -> float:
    return sum(c["cost"]["train_seconds"] for c in summary["candidates"] if c["cost"])


def _cell(candidate: dict) -> str:
    mark = " (pruned)" if candidate["status"] == "pruned" else ""
    return f"{candidate['metrics']['macro_f1']:.3f} @{candidate['epochs']}{mark}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="reviews-negation,topics")
    parser.add_argument("--depths", default="1,2,4,6")
    args = parser.parse_args()
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    rows, agree, totals = [], 0, {"off": [0.0, 0.0], "on": [0.0, 0.0]}
    datasets = args.datasets.split(",")
    for dataset in datasets:
        runs = {}
        for halving in ("off", "on"):
            with tempfile.TemporaryDirectory() as tmp:
                runs[halving] = run_depthfinder(["--dataset", dataset], args.depths, Path(tmp), "--halving", halving)
            totals[halving][0] += _train_seconds(runs[halving]["summary"])
            totals[halving][1] += runs[halving]["seconds"]
        agree += runs["off"]["depth"] == runs["on"]["depth"]
        for halving, run in runs.items():
            cells = [_cell(c) for c in run["summary"]["candidates"]]
            rows.append([dataset, f"halving {halving}", *cells, str(run["depth"]),
                         f"{_train_seconds(run['summary']):.0f}", f"{run['seconds']:.0f}"])
    depths = args.depths.split(",")
    header = ["dataset", "sweep", *(f"depth {d}: val F1 @epochs" for d in depths), "chosen", "train s", "wall s"]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print()
    for row in [header, *rows]:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
    train_ratio = totals["on"][0] / totals["off"][0]
    wall_ratio = totals["on"][1] / totals["off"][1]
    print(
        f"RESULT same_choice={agree}/{len(datasets)} train_seconds_ratio={train_ratio:.3f} wall_ratio={wall_ratio:.3f}"
    )


if __name__ == "__main__":
    main()
