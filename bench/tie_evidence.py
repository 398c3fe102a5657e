"""Ties by evidence on the real datasets: the old rule (means within 0.01) against the paired bootstrap.

For each real file (`DEPTHFINDER_DATA`, docs/benchmarks.md), one `depthfinder run` with the
full grid (`--halving off`, depths 1, 2, 4, 6 unless `--depths`); then the decision is
replayed from the run's own candidates and saved validation predictions, twice, with no
extra training: with `confidence: null` (the old rule: a mean at least best - tolerance)
and with the default 90 % paired bootstrap (the lower end of the interval of depth - best
at least -tolerance). Printed per file: each depth's validation and test macro-F1 and its
interval against the best, the two choices and the test macro-F1 of what each would ship.
Last line: `RESULT files=... old_depths=... new_depths=... old_test_f1=... new_test_f1=...`.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from bench.common import print_table, run_depthfinder
from bench.depth_curves import REAL, SHARED


def compare(path: Path, depths: str, folder: Path) -> tuple[int, int, float, float]:
    """The old and new choice on one file, and the test macro-F1 each would ship."""
    from depthfinder.flows.summary import RunSummary
    from depthfinder.selection.rule import choose_depth

    run = run_depthfinder(["--data", str(path)], depths, folder, "--halving", "off")
    summary = RunSummary.from_dict(run["summary"])
    rule = summary.rule.settings
    old = choose_depth(summary.candidates, rule.model_copy(update={"confidence": None}))
    new = choose_depth(summary.candidates, rule.model_copy(update={"confidence": 0.9}))
    test = {c.depth: c.test_metrics["macro_f1"] for c in summary.candidates}
    intervals = {s.depth: s.vs_best.text() if s.vs_best else "-" for s in new.scores}
    rows = [[str(c.depth), f"{c.metrics['macro_f1']:.3f}", f"{c.test_metrics['macro_f1']:.3f}", intervals[c.depth],
             str(c.epochs), "yes" if c.not_converged else "no"] for c in summary.candidates]
    print(f"\n{path.name}: {new.evidence}; {run['seconds']:.0f} s")
    print_table(["depth", "val macro-F1", "test macro-F1", f"vs best (depth {new.best_depth})", "epochs",
                  "rising"], rows)
    print(f"old rule: depth {old.selected_depth} (test {test[old.selected_depth]:.3f}): {old.reason}")
    print(f"new rule: depth {new.selected_depth} (test {test[new.selected_depth]:.3f}): {new.reason}")
    return old.selected_depth, new.selected_depth, test[old.selected_depth], test[new.selected_depth]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depths", default="1,2,4,6")
    args = parser.parse_args()
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in REAL:
            if not (SHARED / name).is_file():
                print(f"skipping {name}: {SHARED / name} is absent")
                continue
            sub = Path(tmp) / name
            sub.mkdir()
            results[name] = compare(SHARED / name, args.depths, sub)
    columns = list(zip(*results.values(), strict=True)) or [[], [], [], []]
    print(f"RESULT files={','.join(results)} old_depths={','.join(map(str, columns[0]))} "
          f"new_depths={','.join(map(str, columns[1]))} old_test_f1={','.join(f'{v:.3f}' for v in columns[2])} "
          f"new_test_f1={','.join(f'{v:.3f}' for v in columns[3])}")


if __name__ == "__main__":
    main()
