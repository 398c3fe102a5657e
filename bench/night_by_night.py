"""The README's night-by-night sample, from a real run of the current code.

    nice -n 5 python -m bench.night_by_night [--work DIR] [--depths 1,2]

Version 1 is trained on 3,000 rows of the built-in reviews (`reviews-negation`, seed 1), then three nights of
`depthfinder run --data reviews.csv --skip-minor` (what the nightly deployment does) in one work folder with its
local MLflow registry: 1. the same file; 2. 1,000 new reviews appended; 3. 500 built-in news sentences (`topics`)
appended as well. Each night's standard output (the what-changed report and the lines after it)
is printed as is, with its exit code; its standard error (Prefect's and Lightning's lines) goes to
night-N.log in the work folder. About 8 minutes on a 2-core machine with `--depths 1,2`.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

from depthfinder.expectations.table.datasets import DATASETS
from depthfinder.runtime.services import bin_path

ROOT = Path(__file__).resolve().parents[1]

NIGHTS = ("night 0: version 1 on 3,000 reviews", "night 1: the same file", "night 2: 1,000 new reviews appended",
          "night 3: someone appended 500 news sentences to the reviews")


def tables() -> list[pd.DataFrame]:
    """reviews.csv as it is on each night."""
    reviews = DATASETS["reviews-negation"].generate(4000, seed=1)
    news = DATASETS["topics"].generate(500, seed=1)
    first = reviews.iloc[:3000]
    return [first, first, reviews, pd.concat([reviews, news], ignore_index=True)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, help="the work folder (default: a fresh one under /tmp)")
    parser.add_argument("--depths", default="1,2", help="the sweep's depths (the sample is about what changed)")
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="depthfinder-nights-"))
    work.mkdir(parents=True, exist_ok=True)
    for number, (title, table) in enumerate(zip(NIGHTS, tables(), strict=True)):
        table.to_csv(work / "reviews.csv", index=False)
        done = subprocess.run([bin_path("depthfinder"), "run", "--data", "reviews.csv", "--skip-minor",
                               "--depths", args.depths], cwd=work, capture_output=True, text=True, timeout=3600)
        (work / f"night-{number}.log").write_text(done.stderr)  # Prefect's and Lightning's lines
        print(f"# {title} (exit {done.returncode})\n{done.stdout}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
