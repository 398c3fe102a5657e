"""What unlabelled texts buy the depth rule, and how many labels settle the rest (`--unlabeled`, `--labels`).

Constructed cells, whose truth is exact: balanced binary labels; the best depth right on 90 % of the rows; a cheaper
depth (half its FLOPs) `gap` x the tolerance below it in truth (macro-F1 = accuracy here: the errors are symmetric),
built two ways:
- apart: it fixes 30 % of the best's errors and errs on as many of its right rows as the gap needs, as
  bench/tolerance_risk.py builds them (disagreement about 6 % + the gap): two models trained apart;
- close: it differs from the best on the gap's rows and 0.4 % more (a student that learnt from the best, or two
  depths of one checkpoint that agree on nearly everything).
Each decision draws `size` validation rows and a pool of `--pool` unlabelled texts from the same population and is
made by the product itself (selection.rule.choose_depth on saved predictions): on the validation rows alone
(`validation`); with the pool (`pool`); and after labelling every text the first run asked for (`labels`: the
oracle fills rows_to_label in, as a user would, and the rule decides again with them). Risk: the share of decisions
shipping the cheaper depth when it is truly more than the tolerance below (goal at most 0.10); thrift: the share
shipping it when it is truly within. `--metric` is the rule's (macro_f1, the product's default; accuracy, whose
bound is the disagreement itself and whose labelled texts count exactly). `labels asked`: the mean texts to label
per decision that asked any.

`--trained` runs the product on files, with a small scratch encoder (bench/crossfit_runs.py's CONFIG, depths 1 and 2):
`nested-ops-1` (3,000 labelled rows; a pool of 6,000 more of the generator's) and `sms_spam.csv` (3,000 rows
labelled, the other 2,574 the pool, labels hidden): a run with `--unlabeled`, then, when it wrote rows_to_label.csv,
the file labelled from the truth and a run with `--labels` (every candidate reused). Per file: the depth the
validation rows alone ship (choose_depth replayed), with the pool, with the labels; each depth's test macro-F1 (the
run's own test rows); the labels asked; the seconds. Last line: `RESULT ...`.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.common import print_table

TOLERANCE = 0.01
GAPS = (0.0, 0.5, 1.1, 2.0)
SIZES = (100, 300, 1000)
REGIMES = ("apart", "close")
PATHS = ("validation", "pool", "labels")
POPULATION = 400_000


def population(regime: str, gap: float, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(true, best, cheaper) over POPULATION rows, the cheaper depth exactly `gap` x the tolerance below in accuracy."""
    rng = np.random.default_rng(seed)
    true = rng.integers(0, 2, POPULATION)
    best = np.where(rng.random(POPULATION) < 0.9, true, 1 - true)
    right, wrong = rng.permutation(np.flatnonzero(best == true)), rng.permutation(np.flatnonzero(best != true))
    fixed = round((0.3 * len(wrong)) if regime == "apart" else 0.002 * POPULATION)
    broken = fixed + round(gap * TOLERANCE * POPULATION)
    cheaper = best.copy()
    cheaper[np.concatenate([right[:broken], wrong[:fixed]])] ^= 1
    return true, best, cheaper


def decide(true: np.ndarray, best: np.ndarray, cheaper: np.ndarray, rows: np.ndarray, pool_rows: np.ndarray,
           folder: Path, metric: str) -> tuple[dict[str, int], int]:
    """The depth each path ships on these validation rows and this pool, and the texts the first run asked to label."""
    from depthfinder.evidence.bootstrap import metric_of, save_predictions
    from depthfinder.evidence.disagreement import UNLABELLED
    from depthfinder.selection.candidate import Candidate, Cost
    from depthfinder.selection.pool import Pool, rows_to_label
    from depthfinder.selection.rule import choose_depth
    from depthfinder.selection.settings import SelectionRule

    rule = SelectionRule(tolerance=TOLERANCE, confidence=0.9, metric=metric)
    candidates = [Candidate(depth=d, status="trained", metrics={metric: metric_of(true[rows], p[rows], metric)},
                            cost=Cost(flops_per_example=float(d)),
                            predictions=str(save_predictions(folder / f"{d}.npz", true[rows], p[rows])))
                  for d, p in ((1, cheaper), (2, best))]
    shares = np.array([0.5, 0.5])
    predicted = {("scratch", 1, 1): cheaper[pool_rows], ("scratch", 2, 1): best[pool_rows]}
    unlabelled = Pool(predicted, np.full(len(pool_rows), UNLABELLED), shares)
    alone = choose_depth(candidates, rule)
    pooled = choose_depth(candidates, rule, pool=unlabelled)
    asked = rows_to_label(pooled.scores, (pooled.best_family, pooled.best_depth),
                          (pooled.selected_family, pooled.selected_depth), unlabelled, rule.metric)
    labelled = pooled
    if asked:
        labels = unlabelled.true.copy()
        labels[asked] = true[pool_rows][asked]
        labelled = choose_depth(candidates, rule, pool=Pool(predicted, labels, shares))
    return ({"validation": alone.selected_depth, "pool": pooled.selected_depth, "labels": labelled.selected_depth},
            len(asked))


def constructed(draws: int, pool: int, seed: int, metric: str) -> list[list[str]]:
    """Every cell's risk or thrift per path, and the labels asked; printed as a table, returned for the RESULT."""
    rows, summary = [], {path: {"risk": [], "thrift_300": []} for path in PATHS}
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory() as work:
        for regime in REGIMES:
            for gap in GAPS:
                true, best, cheaper = population(regime, gap, seed)
                disagreement = float((best != cheaper).mean())
                beyond = gap > 1
                for size in SIZES:
                    shipped = {path: [] for path in PATHS}
                    asked = []
                    for _ in range(draws):
                        drawn = rng.choice(POPULATION, size + pool, replace=False)
                        depths, labels = decide(true, best, cheaper, drawn[:size], drawn[size:], Path(work), metric)
                        for path in PATHS:
                            shipped[path].append(depths[path] == 1)
                        if labels:
                            asked.append(labels)
                    shares = {path: float(np.mean(shipped[path])) for path in PATHS}
                    for path in PATHS:
                        if beyond:
                            summary[path]["risk"].append(shares[path])
                        elif size == 300:
                            summary[path]["thrift_300"].append(shares[path])
                    rows.append([regime, f"{gap:g}", f"{disagreement:.3f}", str(size), "risk" if beyond else "thrift",
                                 *(f"{shares[path]:.2f}" for path in PATHS),
                                 f"{np.mean(asked):.0f} ({len(asked)})" if asked else "-"])
                    print(" ".join(rows[-1]), flush=True)
    print(f"\nconstructed cells, by {metric}: tolerance {TOLERANCE}, a pool of {pool:,} unlabelled texts, {draws} "
          "decisions per cell; the share shipping the cheaper depth (risk when it is truly beyond the tolerance, "
          "gap > 1; thrift when truly within); labels asked: mean texts to label (decisions that asked)")
    print_table(["regime", "gap (x tol)", "disagreement", "validation rows", "share is", *PATHS, "labels asked"],
                 rows)
    return [[path, f"{max(summary[path]['risk']):.3f}", f"{np.mean(summary[path]['thrift_300']):.3f}"]
            for path in PATHS]


def trained(work: Path, data: Path) -> list[dict]:
    """The product on nested-ops-1 and sms_spam.csv with a pool, then with the labels it asked for."""
    import pandas as pd

    from bench.common import run_depthfinder
    from bench.crossfit_runs import CONFIG
    from depthfinder.expectations.table.datasets import get_dataset

    work.mkdir(parents=True, exist_ok=True)
    config = work / "pool.yaml"
    config.write_text(CONFIG)
    generated = get_dataset("nested-ops-1").generate(9000, 11)
    files = {"nested-ops-1": generated}
    if (data / "sms_spam.csv").is_file():
        files["sms_spam.csv"] = pd.read_csv(data / "sms_spam.csv").sample(frac=1.0, random_state=11)
    results = []
    for name, table in files.items():
        folder = work / name
        folder.mkdir(exist_ok=True)
        table[["text", "label"]].iloc[:3000].to_csv(folder / "labelled.csv", index=False)
        table[["text"]].iloc[3000:].to_csv(folder / "pool.csv", index=False)
        truth = table.drop_duplicates("text").set_index("text")["label"].astype(str)
        (folder / "run").mkdir(exist_ok=True)  # both runs in one folder: the second reuses the first's candidates
        source = ["--data", str(folder / "labelled.csv")]
        options = ["--config", str(config), "--seeds", "1", "--halving", "off", "--crossfit", "off",
                   "--distill", "off"]  # the pool as evidence alone, as docs/benchmarks.md measured it
        first = run_depthfinder(source, "1,2", folder / "run", *options, "--unlabeled", str(folder / "pool.csv"))
        result = {"name": name, "first": first}
        asked = first["summary"]["rows_to_label"]
        if asked:
            labelled = pd.read_csv(asked, keep_default_na=False)
            labelled.assign(label=labelled["text"].map(truth)).to_csv(folder / "labels.csv", index=False)
            result["second"] = run_depthfinder(source, "1,2", folder / "run", *options, "--unlabeled",
                                               str(folder / "pool.csv"), "--labels", str(folder / "labels.csv"))
            result["asked"] = len(labelled)
        results.append(result)
    return results


def report_trained(results: list[dict]) -> str:
    from depthfinder.flows.summary import RunSummary
    from depthfinder.selection.rule import choose_depth

    rows, fields = [], []
    for result in results:
        first = RunSummary.from_dict(result["first"]["summary"])
        alone = choose_depth(first.candidates, first.rule.settings).selected_depth
        second = RunSummary.from_dict(result["second"]["summary"]) if "second" in result else None
        test = {c.depth: c.test_metrics["macro_f1"] for c in first.candidates if c.usable}
        bounds = ", ".join(f"{s.depth}: {s.pool.text()}, {s.pool.bound_text()}" for s in first.rule.scores if s.pool)
        rows.append([result["name"], f"{first.rows.val:,}", f"{first.rule.unlabeled_rows or 0:,}",
                     ", ".join(f"{d}: {v:.3f}" for d, v in sorted(test.items())),
                     f"{alone} -> {first.selected_depth} -> {second.selected_depth if second else '-'}",
                     str(result.get("asked", "-")), bounds or "-",
                     f"{result['first']['seconds']:.0f} + {result['second']['seconds']:.0f}" if second else
                     f"{result['first']['seconds']:.0f}"])
        fields.append(f"{result['name']}:{alone}->{first.selected_depth}->{second.selected_depth if second else '-'}")
    print("\ntrained runs (depthfinder run --unlabeled, then --labels with the texts it asked for, labelled from the "
          "truth): ships on validation alone -> with the pool -> with the labels")
    print_table(["file", "validation rows", "pool texts", "test macro-F1 by depth", "ships", "labels asked",
                  "cheaper depth on the pool (first run)", "wall s"], rows)
    return " trained=" + ",".join(fields)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=40)
    parser.add_argument("--pool", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--metric", default="macro_f1", choices=["macro_f1", "accuracy", "balanced_accuracy"],
                        help="the rule's metric in the constructed cells (the trained runs: macro_f1, the default)")
    parser.add_argument("--trained", type=Path, default=None, help="work folder of the trained runs (kept)")
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[1] / "data")
    args = parser.parse_args()
    started = time.perf_counter()
    found = constructed(args.draws, args.pool, args.seed, args.metric)
    result = ("RESULT " + " ".join(f"{path}_worst_risk={risk}" for path, risk, _ in found) + " "
              + " ".join(f"{path}_thrift_300={thrift}" for path, _, thrift in found))
    if args.trained is not None:
        result += report_trained(trained(args.trained, args.data))
    print(f"\n{time.perf_counter() - started:.0f} s")
    print(json.dumps({"draws": args.draws, "pool": args.pool, "metric": args.metric}))
    print(result)


if __name__ == "__main__":
    main()
