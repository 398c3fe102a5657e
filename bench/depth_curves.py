"""Does the chosen depth follow the depth the problem needs? Synthetic tasks with a known answer, and real data.

Synthetic part: for each problem depth k of a built-in task family (`nested-ops-k`: the
value of max/min/first/last expressions nested k levels deep; expectations/synthetic.py),
`depthfinder run` twice in separate folders: the full grid (`--halving off`, every model
depth trains to the end) and depthfinder's defaults (halving on with four depths).
Printed per problem depth: the full grid's validation and test macro-F1 at every model
depth, the depth depthfinder chose, and the oracle depth: the shallowest model depth
whose *test* macro-F1 (which the rule never sees) is within the rule's tolerance of the
best. The rule is not tuned per task. Last line:
`RESULT problem_depths=1,2,3 chosen_depths=<...> oracle_depths=<...>`.

Real part (`--real`): the full grid on sms_spam.csv and
uci_sentiment_sentences.csv: metric and cost per depth, the chosen depth, the audit's
findings and the wall time.

`--quick` keeps what the problems need and drops what the verdict does not: the same
8,000 rows and default recipe (at 4,000 rows two blocks reach only 0.88 on two levels
within 20 epochs, still rising, so the problem would no longer have its depth), but only
model depths 1 and 2, where the full grid's choices and oracle lie, and no halving run. It
must reach the full bench's verdict (chosen depths that grow with the problem depth and
equal the oracle's) in about 12 minutes on the 2-core development machine.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from bench.common import print_table, run_depthfinder

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DEPTHFINDER_DATA", ROOT / "data"))  # docs/benchmarks.md
REAL = ("sms_spam.csv", "uci_sentiment_sentences.csv")  # columns text, label
# The synthetic tasks' settings: the default model and recipe for every problem depth. The
# labels are computed, so they are noise-free by construction, and the audit's noise
# baseline (bag of words) cannot evaluate nesting, which is what the task is about: at
# depth 3 it doubts 42 % of the rows, and blocks at its default threshold. The near-duplicate
# override is only a safeguard (0.03 % of rows at 8,000). Both checks still report.
SYNTHETIC_CONFIG = """
data: {dataset_rows: 8000}
audit: {max_label_noise_fraction: 1.0, max_near_duplicate_fraction: 1.0}
"""


def synthetic_rows(args: argparse.Namespace, folder: Path) -> tuple[list[list[str]], list[int], list[int]]:
    """The table rows, chosen depths and oracle depths of the synthetic part."""
    rows, chosen, oracle = [], [], []
    config = folder / "synthetic.yaml"
    config.write_text(SYNTHETIC_CONFIG)
    depths = "1,2" if args.quick else args.depths
    for k in args.problem_depths.split(","):
        dataset = f"{args.family}-{k}"
        runs = {}
        # With fewer than four depths the defaults do not halve: one full-grid run serves as both.
        for halving in ("off", "auto") if len(depths.split(",")) >= 4 else ("off",):
            sub = folder / f"{dataset}-{halving}"
            sub.mkdir()
            runs[halving] = run_depthfinder(["--dataset", dataset], depths, sub, "--config", str(config),
                                            "--halving", halving)
        runs.setdefault("auto", runs["off"])
        full = {c["depth"]: c for c in runs["off"]["summary"]["candidates"]}
        best = max(c["test_metrics"]["macro_f1"] for c in full.values())
        tolerance = runs["off"]["summary"]["rule"]["tolerance"]
        oracle.append(min(d for d, c in full.items() if c["test_metrics"]["macro_f1"] >= best - tolerance))
        chosen.append(runs["auto"]["depth"])
        cells = [f"{c['metrics']['macro_f1']:.3f}/{c['test_metrics']['macro_f1']:.3f}" for c in full.values()]
        rows.append([k, *cells, str(chosen[-1]), str(runs["off"]["depth"]), str(oracle[-1]),
                     f"{runs['auto']['seconds']:.0f}", f"{runs['off']['seconds']:.0f}"])
    header = ["problem depth", *(f"depth {d} val/test F1" for d in depths.split(",")), "chosen", "full-grid choice",
              "oracle", "wall s", "full grid wall s"]
    print_table(header, rows)
    if not args.quick:
        _plot(args, rows, depths.split(","), chosen, oracle)
    return rows, chosen, oracle


def real_rows(args: argparse.Namespace, folder: Path) -> None:
    """The full grid on the two real files: metric and cost per depth, choice, audit findings, wall time."""
    for name in REAL:
        path = SHARED / name
        if not path.is_file():
            print(f"skipping {name}: {path} is absent")
            continue
        sub = folder / name
        sub.mkdir()
        run = run_depthfinder(["--data", str(path)], args.depths, sub, "--halving", "off")
        summary = run["summary"]
        print(f"\n{name}: chose depth {run['depth']} in {run['seconds']:.0f} s; {summary['rule']['reason']}")
        audit = summary["audit"]
        findings = [c["name"] for c in audit["checks"] if not c["success"]]
        print(f"audit: {'passed' if audit['success'] else 'failed'}; findings: {', '.join(findings) or 'none'}")
        rows = [[str(c["depth"]), f"{c['metrics']['macro_f1']:.3f}", f"{c['test_metrics']['macro_f1']:.3f}",
                 f"{c['cost']['flops_per_example'] / 1e6:.1f}", f"{c['cost']['latency_ms_p50']:.2f}",
                 f"{c['cost']['train_seconds']:.0f}", str(c["epochs"])] for c in summary["candidates"]]
        print_table(["depth", "val macro-F1", "test macro-F1", "MFLOPs/ex", "p50 ms", "train s", "epochs"], rows)


def _plot(args: argparse.Namespace, rows: list[list[str]], depths: list[str], chosen: list[int],
          oracle: list[int]) -> None:
    """Validation macro-F1 against model depth per problem depth, and chosen/oracle depth against problem depth."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    problems = [int(r[0]) for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8), dpi=110)
    for row in rows:
        values = [float(cell.split("/")[0]) for cell in row[1 : 1 + len(depths)]]
        left.plot([int(d) for d in depths], values, marker="o", label=f"problem depth {row[0]}")
    left.set(xlabel="model depth (encoder blocks)", ylabel="validation macro-F1 (full grid)",
             title="Quality by model depth", xticks=[int(d) for d in depths])
    left.grid(alpha=0.3)
    left.legend(fontsize=8)
    right.plot(problems, chosen, marker="o", label="chosen by depthfinder")
    right.plot(problems, oracle, marker="s", linestyle="--", label="oracle (test, full grid)")
    right.set(xlabel="problem depth (nesting levels)", ylabel="model depth", title="Chosen depth vs problem depth",
              xticks=problems, yticks=[int(d) for d in depths])
    right.grid(alpha=0.3)
    right.legend(fontsize=8)
    fig.tight_layout()
    args.plot.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.plot)
    print(f"plot: {args.plot}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default="nested-ops")
    parser.add_argument("--problem-depths", default="1,2,3")
    parser.add_argument("--depths", default="1,2,4,6")
    parser.add_argument("--quick", action="store_true", help="model depths 1 and 2 only, no halving run")
    parser.add_argument("--real", action="store_true", help="also the full grid on the two real files")
    parser.add_argument("--real-only", action="store_true", help="only the real files (no RESULT line)")
    parser.add_argument("--plot", type=Path, default=ROOT / "docs" / "img" / "depth-curves.png")
    args = parser.parse_args()
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    with tempfile.TemporaryDirectory() as tmp:
        if args.real_only:
            real_rows(args, Path(tmp))
            return
        _, chosen, oracle = synthetic_rows(args, Path(tmp))
        if args.real:
            real_rows(args, Path(tmp))
    print(f"RESULT problem_depths={args.problem_depths} chosen_depths={','.join(map(str, chosen))} "
          f"oracle_depths={','.join(map(str, oracle))}")


if __name__ == "__main__":
    main()
