"""Cross-fitting in the real product, measured: bench/tolerance_risk.py's `--crossfit-trained`.

`depthfinder run --crossfit on` on the scratch known-depth problem `nested-ops-1` and on `sms_spam.csv`, with a small
scratch encoder (`CONFIG`: 32 wide, depths 1 and 2, one seed, early stopping), each in its own folder (a folder
that holds the run's summary is read, not run again). From each summary: the depth the validation rows alone ship
(choose_depth replayed on the summary's candidates and settings), the depth shipped with the out-of-fold rows, each
depth's test macro-F1 (mean over seeds; the truth here is the run's own test rows, a few hundred, not a truth known
exactly), each cheaper depth's interval half-width against the best on the validation rows and out of fold, and
cross-fitting's training seconds against the sweep's. `--crossfit-budget` is set high enough that every depth to
settle is cross-fitted: with two depths, cross-fitting both costs about (K-1) = 4 times the sweep's training, over
the default budget of 3 (docs/selection.md, *Its cost, bounded*), which would not run it at all.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path

from bench.common import print_table, run_depthfinder

METRIC = "macro_f1"
CONFIG = """
data: {dataset_rows: 3000}
audit: {max_label_noise_fraction: 1.0, max_near_duplicate_fraction: 1.0}
model: {d_model: 32, n_heads: 2, d_ff: 64, vocab_size: 1000, max_len: 64}
train: {max_epochs: 15, patience: 3, batch_size: 32, learning_rate: 0.003}
"""
QUICK_CONFIG = """
data: {dataset_rows: 600}
audit: {strict: false, max_label_noise_fraction: 1.0, max_near_duplicate_fraction: 1.0}
model: {d_model: 16, n_heads: 2, d_ff: 32, vocab_size: 300, max_len: 32}
train: {max_epochs: 4, patience: 2, batch_size: 32, learning_rate: 0.003}
"""
DEPTHS = "1,2"
SEEDS = "1"
BUDGET = "20"  # times the sweep's training: every depth to settle fits


@dataclass(frozen=True)
class CrossFitRun:
    """One trained run with `--crossfit on`: what shipped on the validation rows alone and with out-of-fold rows."""

    name: str
    validation_rows: int
    out_of_fold_rows: int  # 0: cross-fitting did not judge
    validation_depth: int
    shipped_depth: int
    test_f1: dict[int, float]  # each depth's test macro-F1, mean over seeds
    half_widths: dict[int, tuple[float, float | None]]  # cheaper depth -> (validation, out of fold or None)
    crossfit: str  # the summary's Cross-fitting sentence
    crossfit_seconds: float
    sweep_seconds: float
    wall_seconds: float


def crossfit_trained(work: Path, quick: bool, data: Path, mode: str = "on", budget: str = BUDGET) -> list[CrossFitRun]:
    """`depthfinder run --crossfit MODE` (auto, on or all) with `--crossfit-budget BUDGET` on nested-ops-1 and
    sms_spam.csv (with --quick: nested-ops-1 alone, tiny, one seed), each in its own folder under `work`."""
    work.mkdir(parents=True, exist_ok=True)
    config = work / "crossfit.yaml"
    config.write_text(QUICK_CONFIG if quick else CONFIG)
    plans = {"nested-ops-1": ["--dataset", "nested-ops-1"]}
    if not quick:
        if not (data / "sms_spam.csv").is_file():
            raise SystemExit(f"no {data / 'sms_spam.csv'}: set DEPTHFINDER_DATA (docs/benchmarks.md)")
        plans["sms_spam.csv"] = ["--data", str(data / "sms_spam.csv")]
    runs = []
    for name, source in plans.items():
        folder = work / name
        saved = folder / "run.json"
        if not saved.is_file():
            folder.mkdir(parents=True, exist_ok=True)
            run = run_depthfinder(source, DEPTHS, folder, "--config", str(config), "--seeds", "1" if quick else SEEDS,
                                  "--halving", "off", "--crossfit", mode, "--crossfit-budget", budget)
            saved.write_text(json.dumps({"seconds": run["seconds"], "summary": run["summary"]}))
        run = json.loads(saved.read_text())
        runs.append(replayed(name, run["summary"], run["seconds"]))
    return runs


def replayed(name: str, summary: dict, seconds: float) -> CrossFitRun:
    """A run's figures, its validation-only decision replayed with choose_depth."""
    from depthfinder.flows.summary import RunSummary
    from depthfinder.selection.rule import choose_depth

    typed = RunSummary.from_dict(summary)
    alone = choose_depth(typed.candidates, typed.rule.settings)
    usable = [c for c in typed.candidates if c.usable]
    test = {d: statistics.fmean(c.test_metrics[METRIC] for c in usable if c.depth == d)
            for d in sorted({c.depth for c in usable})}
    before = {s.depth: s.vs_best.half_width for s in alone.scores if s.vs_best is not None}
    after = {s.depth: s.vs_best.half_width for s in typed.rule.scores
             if s.vs_best is not None and s.compared_on == "out-of-fold"}
    fit = typed.crossfit
    return CrossFitRun(
        name=name, validation_rows=typed.rows.val, out_of_fold_rows=typed.rule.out_of_fold_rows or 0,
        validation_depth=alone.selected_depth, shipped_depth=typed.selected_depth, test_f1=test,
        half_widths={d: (before[d], after.get(d)) for d in before if d != alone.best_depth},
        crossfit=fit.sentence() if fit is not None else "Cross-fitting: not needed (the validation rows settled it).",
        crossfit_seconds=fit.seconds if fit is not None and fit.ran else 0.0,
        sweep_seconds=sum(c.cost.train_seconds for c in usable if c.cost and c.cost.train_seconds),
        wall_seconds=seconds)


def report_runs(runs: list[CrossFitRun], tolerance: float) -> str:
    """The trained runs' table; the RESULT line's fields."""

    if not runs:
        return ""
    rows = []
    for run in runs:
        widths = ", ".join(f"{d}: ±{before:.3f} -> " + (f"±{after:.3f}" if after is not None else "-")
                           for d, (before, after) in run.half_widths.items())
        rows.append([run.name, f"{run.validation_rows:,}", f"{run.out_of_fold_rows:,}" if run.out_of_fold_rows else "-",
                     ", ".join(f"{d}: {v:.3f}" for d, v in run.test_f1.items()),
                     " -> ".join(_shipped(run, d, tolerance) for d in (run.validation_depth, run.shipped_depth)),
                     widths, f"{run.sweep_seconds:.0f} + {run.crossfit_seconds:.0f}", f"{run.wall_seconds:.0f}"])
    print("\ntrained runs (depthfinder run --crossfit on, or all): ships on the validation rows alone -> with "
          "out-of-fold rows (test macro-F1; beyond: more than the tolerance below the best depth's on test); each "
          "cheaper depth's interval half-width against the best, validation -> out of fold; training seconds, sweep "
          "+ cross-fitting")
    print_table(["run", "validation rows", "out-of-fold rows", "test macro-F1 by depth", "ships", "half-width",
                  "training s", "wall s"], rows)
    for run in runs:
        print(f"{run.name}: {run.crossfit}")
    return (" crossfit_trained=" + ",".join(f"{r.name}:{r.validation_depth}->{r.shipped_depth}" for r in runs)
            + " crossfit_seconds=" + ",".join(f"{r.name}:{r.crossfit_seconds:.0f}/{r.sweep_seconds:.0f}" for r in runs))


def _shipped(run: CrossFitRun, depth: int, tolerance: float) -> str:
    """`1 (0.994)`, or `1 (0.962, beyond)` when its test macro-F1 is more than the tolerance below the best depth's."""
    from depthfinder.evidence.margin import within

    beyond = not within(run.test_f1[depth] - max(run.test_f1.values()), tolerance)
    return f"{depth} ({run.test_f1[depth]:.3f}{', beyond' if beyond else ''})"


def main() -> None:
    """`python -m bench.crossfit_runs --mode all --work DIR`: the trained runs alone (tolerance_risk.py's
    `--crossfit-trained` runs them with `on`, beside its tables)."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--mode", choices=["auto", "on", "all"], default="on")
    parser.add_argument("--budget", default=BUDGET, help="--crossfit-budget (the product's default: 3)")
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[1] / "data")
    parser.add_argument("--tolerance", type=float, default=0.01)
    args = parser.parse_args()
    runs = crossfit_trained(args.work, args.quick, args.data, args.mode, args.budget)
    print("RESULT" + report_runs(runs, args.tolerance))


if __name__ == "__main__":
    main()
