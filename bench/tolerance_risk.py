"""Which tie policy keeps the tolerance's promise? Every depth fine-tuned apart, several seeds, judged on test.

Ground truth: for each dataset, one `depthfinder run` that trains every depth on its own (`--halving off`) with
every seed (`--seeds`): the scratch known-depth problems (`nested-ops-1..3`, 8,000 rows, bench/depth_curves.py's
settings, depths 1-4) and the two real files with all-MiniLM-L6-v2 (depths 1-6; bench/pretrained_depth.py says
where it comes from). Each (depth, seed)'s validation and test predictions go to a cache file
(`<work>/<dataset>.npz`), so the table is recomputed for new policies without retraining: a dataset whose cache
file exists is not trained again. `--merge-from FOLDER ...` merges the cache files of other work folders, e.g. of
runs of other seeds trained side by side (`--seeds 1,2,3` in one, `--seeds 4,5` in another). A depth's true
quality is its test macro-F1 averaged over the seeds; a depth is within the tolerance in truth when that is no
more than the tolerance below the best depth's.

Decisions: for each validation size (`--sizes`, e.g. 100, 300 and all), `--draws` sweeps of one seed per depth
(drawn at random) on a random subset of the validation rows of that size (all: every row), each decided by
every policy on the same paired bootstrap (2,000 resamples, as the rule):

- lenient: the old rule, "not shown worse" (the upper end of the interval at the confidence at
  least −tolerance); it breaks the promise by construction and is shown for reference only;
- means: the mean within the tolerance (evidence.margin.within, no interval);
- one_se: the mean minus one bootstrap standard error (the 15.9th percentile) within it too;
- one_sided: the lower end of a one-sided interval at the confidence (the 10th percentile at 0.9);
- non_inferior: the lower end of the two-sided interval at the confidence (the 5th percentile at 0.9), what
  the rule ships (checked: choose_depth makes the same choice on a sample of the decisions);
- best_mean: no tie at all, the best validation mean ships: the floor of the risk, the part that comes from
  the validation split choosing the best (a depth truly worse that scores best by chance) and that no tie
  policy removes.

Each policy ships the cheapest depth (FLOPs per example) it admits; the best validation mean always qualifies. Per
dataset, size and policy: risk, the share of decisions whose shipped depth is more than the tolerance below the
best in truth (goal at most 1 − confidence), and thrift, the share that ship the cheapest depth that is in truth
within the tolerance. A policy keeps the promise in a cell when its risk is at most the goal, or at most
best_mean's where even that is above the goal (its ties add nothing). The default is the strictest policy that
keeps it in every (dataset, size) cell, unless a looser one that keeps it too is more thrifty over all decisions
by more than twice the standard error of the paired difference (the decisions are the same draws for every policy)
and by at least 0.01 (two policies differ on few decisions, so their paired error is tiny: only a gain that
matters counts). lenient, means and best_mean are shown, never chosen: lenient breaks the promise by construction,
means is the fixed margin that ties on noise (the failure the bootstrap was brought in for, which the rule keeps
fixed), best_mean is the floor.

Constructed cells (`--gaps`, multiples of the tolerance: 0.5, 1.1, 1.25, 1.5, 2, 3; negative, the deepest depth the
worse one: −1.1, a trap for a rule that leans deep): the trained files hold few
depths just beyond the tolerance, where a looser tie errs most, and the product is used on tasks nobody here has.
So for each gap (or three gaps at once, `a/b/c`: the several comparisons one decision makes), cheaper depths and
a best one whose truth is known exactly: balanced binary labels, the best right on 90 % of the rows of each class,
each cheaper one fixing 30 % of its errors and erring on just enough of its right rows that its accuracy
(= macro-F1: the errors are symmetric) is the gap below; 20,000 validation rows to draw the decisions' subsets
from (`--constructed-sizes`: 100, 300, 1,000 and 3,000 rows), exact counts on the test rows. They count for the risk
(a policy must keep the promise in them too: it is a promise about every task) but not for the thrift that may
make a looser policy the default (their mix is this script's choice, not a sample of tasks). Last line:
`RESULT default=<policy> worst_risk=<policy:risk,...> constructed_worst_risk=<policy:risk,...>
thrift=<policy:share,...> decisions=<n> constructed_decisions=<n>` (thrift and decisions: the trained datasets').

Out-of-fold evidence (bench/out_of_fold.py): in the constructed cells, each sweep is also decided with
out-of-fold rows, 9 x the validation size (the train and validation rows cross-fitting predicts when validation is
10 % of the data and train 80 %), drawn from a pool of 200,000 built like the validation rows: `out_of_fold`, the
rule's decision made on those rows; `crossfit_auto` and `crossfit_on`, what the product ships with `crossfit: auto`
(its default) or `on` and no budget (the validation rows' best and verdicts, the unsettled cheaper depths judged
again out of fold). Per cell: risk and thrift of each beside the validation-only decision (`non_inferior`), and the
compute in fits (1 per depth for the sweep; K = 5 per depth cross-fitted). The first `--oof-checks` decisions of
each cell and path that cross-fit are also made by choose_depth (after arms_to_settle, with an OutOfFold).
`--crossfit-trained` (bench/crossfit_runs.py) runs the product itself, `depthfinder run --crossfit on`, on
`nested-ops-1` and `sms_spam.csv` with a small scratch encoder, and reports per run the depth shipped on the
validation rows alone (choose_depth replayed) and with the out-of-fold rows, each depth's test macro-F1, the interval
half-widths before and after, and cross-fitting's training seconds against the sweep's. The RESULT line then adds,
over the constructed cells, `<path>_worst_risk`, `<path>_thrift_300` (pooled over the cells of 300 validation rows)
and `<path>_fits` (cross-fitting's mean fits per decision) for val (non_inferior), oof, auto and on, and with
`--crossfit-trained`, `crossfit_trained=<run>:<validation depth>-><shipped depth>` and
`crossfit_seconds=<run>:<cross-fitting>/<sweep>`.

`--quick` develops the script on a tiny problem in a few minutes (one built-in dataset, a tiny model, depths 1-3,
two seeds, 20 draws); its table measures nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np

from bench.common import DATA, DATASETS, add_cache_argument, minilm, print_table, run_depthfinder
from bench.crossfit_runs import CrossFitRun, crossfit_trained, report_runs
from bench.depth_curves import SYNTHETIC_CONFIG
from bench.out_of_fold import PATHS, ROWS_PER_VALIDATION_ROW, OutOfFoldCell, candidates_of, report_out_of_fold
from depthfinder.runtime.files import written_whole

ROOT = Path(__file__).resolve().parents[1]
SYNTHETIC = ("nested-ops-1", "nested-ops-2", "nested-ops-3")
POLICIES = ("lenient", "means", "one_se", "one_sided", "non_inferior", "best_mean")
# The candidates for the default, strictest first. Shown, never the default: lenient breaks the promise by
# construction, best_mean is its floor, and means is the fixed margin that ties on noise (a depth truly 0.03 worse
# that lands within 0.01 on 300 rows by luck ties: tests/evidence/test_bootstrap.py,
# test_a_tie_is_never_declared_on_noise), which the rule keeps fixed.
STRICTEST_FIRST = ("non_inferior", "one_sided", "one_se")
# A looser policy ships a depth at least as cheap as a stricter one on every decision, so the two differ on few
# decisions and the paired error is tiny: it replaces the stricter only for a gain that matters, a decision in a
# hundred or more.
MATERIAL = 0.01
METRIC = "macro_f1"
QUICK_CONFIG = """
data: {dataset: topics, dataset_rows: 600}
model: {d_model: 16, n_heads: 2, d_ff: 32, vocab_size: 300, max_len: 32}
train: {max_epochs: 3, patience: 2, batch_size: 32, learning_rate: 0.003}
"""


@dataclass(frozen=True)
class Trained:
    """Every (depth, seed) of one dataset: validation and test predictions (class ids), cost, test truth."""

    name: str
    val_true: np.ndarray
    test_true: np.ndarray
    val: dict[tuple[int, int], np.ndarray]
    test: dict[tuple[int, int], np.ndarray]
    flops: dict[int, float]
    test_metric: dict[tuple[int, int], float]  # the run's own test macro-F1 of each (depth, seed)
    oof_true: np.ndarray | None = None  # constructed cells: a pool of out-of-fold rows (bench/out_of_fold.py)
    oof: dict[int, np.ndarray] | None = None  # depth -> its classes on them

    @property
    def depths(self) -> list[int]:
        return sorted(self.flops)

    def seeds(self, depth: int) -> list[int]:
        return sorted(seed for d, seed in self.val if d == depth)

    def truth(self) -> dict[int, float]:
        """Each depth's test macro-F1 averaged over its seeds."""
        return {d: float(np.mean([self.test_metric[d, s] for s in self.seeds(d)])) for d in self.depths}


def save_cache(path: Path, trained: Trained) -> None:
    """The predictions and the run's numbers, in one .npz (atomically)."""
    arrays = {"val_true": trained.val_true, "test_true": trained.test_true}
    for (depth, seed), values in trained.val.items():
        arrays[f"val_{depth}_{seed}"] = values
        arrays[f"test_{depth}_{seed}"] = trained.test[depth, seed]
    meta = {"name": trained.name, "flops": {str(d): f for d, f in trained.flops.items()},
            "test_metric": [[d, s, v] for (d, s), v in trained.test_metric.items()]}
    with written_whole(path) as partial, partial.open("wb") as file:
        np.savez(file, meta=np.array(json.dumps(meta)), **arrays)


def load_cache(path: Path) -> Trained:
    with np.load(path, allow_pickle=False) as saved:
        meta = json.loads(str(saved["meta"]))
        keys = [(int(d), int(s)) for d, s, _ in meta["test_metric"]]
        return Trained(name=meta["name"], val_true=saved["val_true"], test_true=saved["test_true"],
                       val={k: saved[f"val_{k[0]}_{k[1]}"] for k in keys},
                       test={k: saved[f"test_{k[0]}_{k[1]}"] for k in keys},
                       flops={int(d): float(f) for d, f in meta["flops"].items()},
                       test_metric={(int(d), int(s)): float(v) for d, s, v in meta["test_metric"]})


def train(name: str, source: list[str], depths: str, seeds: str, folder: Path, *options: str) -> Trained:
    """One `depthfinder run` of every (depth, seed) in `folder` (an interrupted one resumes there), and the
    predictions of each: validation from its saved file, test from its bundle on the run's own test rows."""
    import pandas as pd

    from depthfinder.encoder.serving import load_bundle

    folder.mkdir(parents=True, exist_ok=True)
    run = run_depthfinder(source, depths, folder, "--seeds", seeds, "--halving", "off", *options)
    candidates = [c for c in run["summary"]["candidates"] if c["status"] in ("trained", "cached")]
    (table,) = sorted((folder / "work" / "data").glob("*.parquet"), key=lambda p: p.stat().st_mtime)[-1:]
    test = pd.read_parquet(table, columns=["text", "label", "split"]).query("split == 'test'")
    val, predicted, metric = {}, {}, {}
    val_true = test_true = None
    for c in candidates:
        key = (c["depth"], c["seed"])
        with np.load(c["predictions"], allow_pickle=False) as saved:
            val_true, val[key] = saved["true"], saved["predicted"]
        model = load_bundle(Path(c["bundle"]))
        classes = {label: index for index, label in enumerate(model.labels)}
        test_true = np.array([classes[label] for label in test["label"]], dtype=np.int32)
        predicted[key] = np.array([classes[label] for label in model.predict(test["text"].tolist())], dtype=np.int32)
        metric[key] = c["test_metrics"][METRIC]
    flops = {c["depth"]: c["cost"]["flops_per_example"] for c in candidates}
    return Trained(name, val_true, test_true, val, predicted, flops, metric)


def ground_truth(args: argparse.Namespace) -> list[Trained]:
    """Every dataset's Trained, from its cache files (in --work and every --merge-from folder, merged) or trained
    now (and cached)."""
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    plans = _plans(args)
    found = []
    for name, plan in plans.items():
        caches = [cache for folder in [work, *args.merge_from] if (cache := folder / f"{name}.npz").is_file()]
        if not caches:
            source, depths, options = plan()
            save_cache(work / f"{name}.npz", train(name, source, depths, args.seeds, work / name, *options))
            caches = [work / f"{name}.npz"]
        found.append(merged([load_cache(cache) for cache in caches]))
    return found


def constructed(gaps: list[float], tolerance: float, val_rows: int = 20_000, test_rows: int = 20_000,
                oof_rows: int = 200_000) -> Trained:
    """Cheaper depths 1..k whose test macro-F1 is exactly `gaps[i]` x `tolerance` below the best one's (k + 1),
    the errors symmetric between two balanced classes; the validation rows and a pool of out-of-fold rows drawn
    alike, the pool last (the validation and test rows are those of a bench without it). Each cheaper depth fixes
    and breaks rows of its own, so its comparison with the best is nearly independent of the others'."""
    from depthfinder.evidence.bootstrap import metric_of

    rng = np.random.default_rng([round(gap * 1000) % (1 << 32) for gap in gaps])  # a negative gap: a better one
    accuracy, fixed = 0.9, 0.3

    def split(rows: int) -> tuple[np.ndarray, list[np.ndarray]]:
        true = np.repeat([0, 1], rows // 2)
        predicted = [true.copy() for _ in range(len(gaps) + 1)]
        for label in (0, 1):
            index = np.flatnonzero(true == label)
            wrong = round(len(index) * (1 - accuracy))
            best_wrong, best_right = np.split(rng.permutation(index), [wrong])
            predicted[-1][best_wrong] = 1 - label
            fixes = round(wrong * fixed)  # a cheaper one's errors: wrong - fixes + breaks, breaks = fixes + gap's rows
            for cheaper, gap in zip(predicted[:-1], gaps, strict=True):
                breaks = fixes + round(len(index) * gap * tolerance)
                cheaper[rng.permutation(best_wrong)[fixes:]] = 1 - label
                cheaper[rng.permutation(best_right)[:breaks]] = 1 - label
        return true, predicted

    (val_true, val), (test_true, test), (oof_true, oof) = split(val_rows), split(test_rows), split(oof_rows)
    depths = range(1, len(gaps) + 2)
    return Trained(f"constructed, {'/'.join(f'{gap:g}' for gap in gaps)}x", val_true, test_true,
                   {(d, 1): v for d, v in zip(depths, val, strict=True)},
                   {(d, 1): t for d, t in zip(depths, test, strict=True)}, {d: float(d) for d in depths},
                   {(d, 1): metric_of(test_true, t, METRIC) for d, t in zip(depths, test, strict=True)},
                   oof_true, dict(zip(depths, oof, strict=True)))


def merged(parts: list[Trained]) -> Trained:
    """One dataset's Trained from runs of other seeds (the same split: the same validation and test rows)."""
    first = parts[0]
    for part in parts[1:]:
        if not (np.array_equal(part.val_true, first.val_true) and np.array_equal(part.test_true, first.test_true)):
            raise SystemExit(f"{first.name}: its cache files hold other validation or test rows; cannot merge them")
    return Trained(first.name, first.val_true, first.test_true, val={k: v for p in parts for k, v in p.val.items()},
                   test={k: v for p in parts for k, v in p.test.items()},
                   flops={d: f for p in parts for d, f in p.flops.items()},
                   test_metric={k: v for p in parts for k, v in p.test_metric.items()})


def _plans(args: argparse.Namespace) -> dict:
    """Per dataset, how to train it: (source, depths, options), built only when it must be trained."""
    if args.quick:
        config = args.work / "quick.yaml"
        config.write_text(QUICK_CONFIG)
        return {"quick-topics": lambda: (["--config", str(config)], "1,2,3", [])}
    synthetic = args.work / "synthetic.yaml"
    synthetic.write_text(SYNTHETIC_CONFIG)
    plans = {}
    for name in filter(None, args.datasets.split(",")):
        if name in SYNTHETIC:
            plans[name] = lambda name=name: (["--dataset", name, "--config", str(synthetic)], args.scratch_depths, [])
        else:
            if not (DATA / name).is_file():
                raise SystemExit(f"no {DATA / name}: set DEPTHFINDER_DATA (docs/benchmarks.md)")
            plans[name] = lambda name=name: (["--data", str(DATA / name)], args.pretrained_depths,
                                             ["--pretrained", str(minilm(args.cache))])
    return plans


def admitted(observed: float, resampled: np.ndarray, policy: str, tolerance: float, confidence: float) -> bool:
    """Whether `policy` lets a depth ship in the best's place, from its observed difference and its bootstrap."""
    from depthfinder.evidence.bootstrap import interval_of
    from depthfinder.evidence.margin import shown_worse, within

    if policy == "lenient":
        return not shown_worse(interval_of(observed, resampled, confidence).high, tolerance)
    if policy == "means":
        return within(observed, tolerance)
    percentile = {"one_se": 15.865, "one_sided": 100 * (1 - confidence)}.get(policy)
    lower = (interval_of(observed, resampled, confidence).low if policy == "non_inferior"
             else float(np.percentile(resampled, percentile)))
    return within(observed, tolerance, lower)


def compared(trained: Trained, rows: np.ndarray, seeds: dict[int, int]) -> tuple[int, dict]:
    """For one sweep (a seed per depth) on the validation `rows`: the best depth and each depth's difference from
    it with its bootstrap (the rule's, evidence.bootstrap), depth -> (observed, resampled)."""
    from depthfinder.evidence.bootstrap import Predictions, metric_of, resampled_differences

    true = trained.val_true[rows]
    predicted = {("x", d, seeds[d]): trained.val[d, seeds[d]][rows] for d in trained.depths}
    means = {d: metric_of(true, predicted["x", d, seeds[d]], METRIC) for d in trained.depths}
    best = max(trained.depths, key=lambda d: (means[d], -trained.flops[d]))
    differences = resampled_differences(Predictions(true, predicted), {("x", d): [seeds[d]] for d in trained.depths},
                                        ("x", best), METRIC)
    return best, {d: differences["x", d] for d in trained.depths}


def decide(trained: Trained, best: int, differences: dict, tolerance: float, confidence: float) -> dict[str, int]:
    """The depth each policy ships for one sweep, from its `differences` from its `best` (`compared`)."""
    by_cost = sorted(trained.depths, key=lambda d: (trained.flops[d], d))
    shipped = {policy: next(d for d in by_cost if admitted(*differences[d], policy, tolerance, confidence))
               for policy in POLICIES if policy != "best_mean"}
    return {**shipped, "best_mean": best}


def rule_candidates(trained: Trained, rows: np.ndarray, seeds: dict[int, int], folder: Path) -> list:
    """The sweep as selection.rule.choose_depth takes it: a Candidate per depth, its files written to `folder`."""
    return candidates_of(trained.val_true[rows], {d: trained.val[d, seeds[d]][rows] for d in trained.depths},
                         trained.flops, folder)


def the_rules_choice(trained: Trained, rows: np.ndarray, seeds: dict[int, int], tolerance: float,
                     confidence: float, folder: Path) -> int:
    """What selection.rule.choose_depth itself ships for the same sweep (its files written to `folder`)."""
    from depthfinder.selection.rule import choose_depth
    from depthfinder.selection.settings import SelectionRule

    candidates = rule_candidates(trained, rows, seeds, folder)
    return choose_depth(candidates, SelectionRule(tolerance=tolerance, confidence=confidence)).selected_depth


@dataclass(frozen=True)
class Outcomes:
    """One policy's decisions in one cell: whether each shipped a depth beyond the tolerance in truth (risky) and
    whether it shipped the cheapest depth within it (thrifty); the same draws for every policy, so paired."""

    risky: np.ndarray
    thrifty: np.ndarray

    @property
    def risk(self) -> float:
        return float(self.risky.mean())

    @property
    def thrift(self) -> float:
        return float(self.thrifty.mean())

    @property
    def decisions(self) -> int:
        return len(self.risky)


@dataclass(frozen=True)
class OutOfFoldOutcomes(Outcomes):
    """The same for a path with out-of-fold rows (bench/out_of_fold.py's PATHS): the rows each decision drew, the
    sweep's fits and the fits each decision's cross-fitting trained (0: it did not run), and the decisions checked
    against choose_depth (and of those, where the grouped bootstrap shipped what the rule's row bootstrap did)."""

    rows: int = 0
    sweep_fits: int = 0
    fits: np.ndarray = field(default_factory=lambda: np.zeros(0))
    checked: int = 0
    agreed: int = 0


def measure(trained: Trained, sizes: list[str], draws: int, tolerance: float, confidence: float,
            checks: int, oof_checks: int = 0) -> dict[str, dict[str, Outcomes]]:
    """Per validation size, per policy: its Outcomes; with a pool of out-of-fold rows, each of out_of_fold.PATHS
    too (the same sweeps with cross-fitting's evidence, `oof_checks` of them checked against choose_depth)."""
    from depthfinder.evidence.margin import within

    rng = np.random.default_rng(20261201)
    truth = trained.truth()
    top = max(truth.values())
    good = {d for d in trained.depths if within(truth[d] - top, tolerance)}
    thrifty = min(good, key=lambda d: (trained.flops[d], d))
    n = len(trained.val_true)
    results = {}
    for size in sizes:
        m = n if size == "all" or int(size) >= n else int(size)
        shipped = {policy: [] for policy in POLICIES}
        oof = (None if trained.oof_true is None else
               OutOfFoldCell(trained.oof_true, trained.oof, ROWS_PER_VALIDATION_ROW * m, oof_checks,
                             np.random.default_rng([20261204, m])))
        with tempfile.TemporaryDirectory() as folder:
            for draw in range(draws):
                rows = np.arange(n) if m == n else np.sort(rng.choice(n, m, replace=False))
                seeds = {d: int(rng.choice(trained.seeds(d))) for d in trained.depths}
                best, differences = compared(trained, rows, seeds)
                choice = decide(trained, best, differences, tolerance, confidence)
                if draw < checks and (rule := the_rules_choice(trained, rows, seeds, tolerance, confidence,
                                                               Path(folder))) != choice["non_inferior"]:
                    raise SystemExit(f"{trained.name}: the rule shipped depth {rule}, the bench's non_inferior "
                                     f"{choice['non_inferior']}: the bench does not measure the rule")
                for policy, depth in choice.items():
                    shipped[policy].append(depth)
                if oof is not None:
                    oof.decide(trained.flops, best, differences, tolerance, confidence,
                               partial(rule_candidates, trained, rows, seeds, Path(folder)), Path(folder))
        cell = {policy: Outcomes(np.array([d not in good for d in depths]), np.array([d == thrifty for d in depths]))
                for policy, depths in shipped.items()}
        for path in PATHS if oof is not None else ():
            depths = oof.shipped[path]
            cell[path] = OutOfFoldOutcomes(
                np.array([d not in good for d in depths]), np.array([d == thrifty for d in depths]),
                rows=min(oof.rows, len(oof.true)), sweep_fits=len(trained.depths), fits=np.array(oof.fits[path]),
                checked=oof.checked[path], agreed=oof.agreed[path])
        results[f"{m}" if m < n else f"all ({n})"] = cell
    return results


def cells_of(table: dict[str, dict[str, dict[str, Outcomes]]]) -> list[dict[str, Outcomes]]:
    """Every (dataset, size) cell of the table."""
    return [cell for sizes in table.values() for cell in sizes.values()]


def pooled_thrifty(cells: list[dict[str, Outcomes]], policy: str) -> np.ndarray:
    """Whether each decision of every cell shipped the cheapest depth within the tolerance (1.0) or not (0.0)."""
    return np.concatenate([np.zeros(0), *(cell[policy].thrifty for cell in cells)]).astype(float)


def default_policy(table: dict[str, dict[str, dict[str, Outcomes]]], stress: dict[str, dict[str, dict[str, Outcomes]]],
                   goal: float) -> tuple[str, str]:
    """The default, and why: among the policies that keep the promise in every cell of `table` and `stress` (the
    constructed cells; risk at most the goal, or at most best_mean's where that is above it), the strictest, unless
    a looser one is more thrifty over every decision of `table` by more than twice the standard error of the paired
    difference (a difference the decisions show, not one draw's luck) and by at least MATERIAL."""
    cells = cells_of(table)
    every = [(name, size, cell) for part in (table, stress) for name, sizes in part.items()
             for size, cell in sizes.items()]

    def over(policy: str, cell: dict[str, Outcomes]) -> float:
        return cell[policy].risk - max(goal, cell["best_mean"].risk)

    # Each candidate's largest risk above the goal (or best_mean's), and where: 0 or less when it keeps the promise.
    worst = {p: max(every, key=lambda where: over(p, where[2])) for p in STRICTEST_FIRST}
    excess = {p: over(p, cell) for p, (_, _, cell) in worst.items()}
    keeping = [p for p in STRICTEST_FIRST if excess[p] <= 1e-12]
    broke = "; ".join(f"{p} {cell[p].risk:.2f} on {name} at {size} rows, where shipping the best mean risks "
                      f"{cell['best_mean'].risk:.2f}" for p, (name, size, cell) in worst.items() if p not in keeping)
    if not keeping:
        chosen = min(STRICTEST_FIRST, key=lambda p: (excess[p], -pooled_thrifty(cells, p).mean()))
        return chosen, f"no policy kept the promise in every cell; the smallest excess risk ({broke})"
    chosen, why = keeping[0], "the strictest"
    for looser in keeping[1:]:
        gain = pooled_thrifty(cells, looser) - pooled_thrifty(cells, chosen)
        error = gain.std(ddof=1) / np.sqrt(len(gain)) if len(gain) > 1 else 0.0
        if len(gain) and gain.mean() > max(2 * error, MATERIAL):
            chosen, why = looser, f"more thrifty than the stricter by {gain.mean():.3f} (± {error:.3f})"
    return chosen, (f"{why} of those that keep the risk at most {goal:.2f} (or best_mean's) in every cell: "
                    f"{', '.join(keeping)}" + (f"; over it: {broke}" if broke else ""))


def report(found: list[Trained], table: dict, stress: dict, tolerance: float, confidence: float,
           runs: list[CrossFitRun]) -> None:
    """The truth per dataset, the table (the trained datasets', then the constructed cells), the default, the
    out-of-fold table (bench/out_of_fold.py) and the RESULT line."""
    from depthfinder.evidence.bootstrap import metric_of

    for trained in found:
        truth = trained.truth()
        drift = max(abs(metric_of(trained.test_true, trained.test[key], METRIC) - value)
                    for key, value in trained.test_metric.items())
        print(f"\n{trained.name}: {len(trained.val_true):,} validation, {len(trained.test_true):,} test rows; seeds "
              f"{', '.join(map(str, trained.seeds(trained.depths[0])))}; test {METRIC} by depth (mean over seeds): "
              + ", ".join(f"{d}: {v:.3f}" for d, v in truth.items())
              + f"; the stored test predictions give the run's test {METRIC} to within {drift:.4f}")
    rows = [[name, size, *(f"{cells[p].risk:.2f} / {cells[p].thrift:.2f}" for p in POLICIES),
             str(cells[POLICIES[0]].decisions)]
            for name, sizes in {**table, **stress}.items() for size, cells in sizes.items()]
    print(f"\nrisk / thrift per policy (tolerance {tolerance:g}, confidence {confidence:g}; risk goal at most "
          f"{1 - confidence:.2f})")
    print_table(["dataset", "validation rows", *POLICIES, "decisions"], rows)
    goal = 1 - confidence
    chosen, why = default_policy(table, stress, goal)
    print(f"\ndefault: {chosen}: {why}")
    cells, stress_cells = cells_of(table), cells_of(stress)
    worst = {p: max((c[p].risk for c in cells), default=0.0) for p in POLICIES}
    worst_constructed = {p: max((c[p].risk for c in stress_cells), default=0.0) for p in POLICIES}
    thrift = {p: float(pooled_thrifty(cells, p).mean()) if cells else float("nan") for p in POLICIES}
    decisions = sum(c[POLICIES[0]].decisions for c in cells)
    constructed = sum(c[POLICIES[0]].decisions for c in stress_cells)
    out_of_fold = report_out_of_fold(stress, goal) + report_runs(runs, tolerance)
    print(f"RESULT default={chosen} worst_risk={','.join(f'{p}:{worst[p]:.3f}' for p in POLICIES)} "
          f"constructed_worst_risk={','.join(f'{p}:{worst_constructed[p]:.3f}' for p in POLICIES)} "
          f"thrift={','.join(f'{p}:{thrift[p]:.3f}' for p in POLICIES)} decisions={decisions} "
          f"constructed_decisions={constructed}{out_of_fold}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_cache_argument(parser)
    parser.add_argument("--datasets", default=",".join([*SYNTHETIC, *DATASETS]),
                        help="nested-ops-k problems and files under DEPTHFINDER_DATA")
    parser.add_argument("--seeds", default="1,2,3,4,5")
    parser.add_argument("--scratch-depths", default="1,2,3,4")
    parser.add_argument("--pretrained-depths", default="1,2,3,4,5,6")
    parser.add_argument("--sizes", default="100,300,all", help="validation rows per decision (all: every row)")
    parser.add_argument("--draws", type=int, default=300, help="decisions per dataset and size")
    parser.add_argument("--checks", type=int, default=10, help="decisions per cell also made by choose_depth")
    parser.add_argument("--tolerance", type=float, default=0.01)
    parser.add_argument("--confidence", type=float, default=0.9)
    parser.add_argument("--work", type=Path, default=ROOT / ".depthfinder" / "tolerance-risk",
                        help="runs and cache files (reused: a dataset with a cache file is not trained again)")
    parser.add_argument("--merge-from", type=Path, nargs="*", default=[],
                        help="more folders of cache files (runs of other seeds, e.g. trained side by side): a "
                        "dataset's files are merged")
    parser.add_argument("--gaps", default="0.5,1.1,1.25,1.5,2,3,1.1/1.1/1.1,1.5/1.5/1.5,-1.1,1.1/-1.1",
                        help="constructed cells: a cheaper depth this many tolerances below the deepest in truth "
                        "(negative: above it, the deepest worse); a/b/c: several cheaper depths (empty: none)")
    parser.add_argument("--constructed-sizes", default="100,300,1000,3000",
                        help="validation rows per decision in the constructed cells (of 20,000; out of fold: 9x, "
                        "of 200,000)")
    parser.add_argument("--oof-checks", type=int, default=3,
                        help="decisions per constructed cell that cross-fit also made by choose_depth out of fold")
    parser.add_argument("--crossfit-trained", action="store_true",
                        help="also run `depthfinder run --crossfit on` on nested-ops-1 and sms_spam.csv with a small "
                        "scratch encoder (bench/crossfit_runs.py), in <work>/crossfit")
    parser.add_argument("--quick", action="store_true", help="a tiny problem, to develop the script")
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds, args.sizes, args.draws, args.checks, args.oof_checks = "1,2", "50,all", 20, 5, 2
        args.gaps, args.constructed_sizes = "1.5,1.1/1.1/1.1", "100,1000"
        args.work = args.work / "quick"
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    runs = crossfit_trained(args.work / "crossfit", args.quick, DATA) if args.crossfit_trained else []
    found = ground_truth(args)
    sizes = args.sizes.split(",")
    table = {t.name: measure(t, sizes, args.draws, args.tolerance, args.confidence, args.checks) for t in found}
    built = [constructed([float(gap) for gap in cell.split("/")], args.tolerance) for cell in args.gaps.split(",")
             if cell]
    stress = {t.name: measure(t, args.constructed_sizes.split(","), args.draws, args.tolerance, args.confidence,
                              args.checks, args.oof_checks) for t in built}
    report([*found, *built], table, stress, args.tolerance, args.confidence, runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
