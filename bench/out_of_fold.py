"""What cross-fitting's evidence buys, and what it spends: bench/tolerance_risk.py's out-of-fold paths.

In each constructed cell, beside the validation-only decision on each validation size (the rule's non-inferiority,
`non_inferior`), the same sweep decided with out-of-fold rows: 9 x the validation size (train 80 %, validation 10 %:
the train and validation rows cross-fitting predicts), drawn afresh per decision from a pool of their own, three ways:

- out_of_fold: the rule's decision made on those rows instead of the validation rows (the best by their mean, the
  cheapest depth they show within): what the rows buy when every depth is cross-fitted;
- crossfit_auto: what the product ships with `crossfit: auto` (its default) and no budget: choose_depth on the
  validation rows; every depth they do not show worse than the tolerance is judged on the out-of-fold rows
  (selection.crossfit.arms_to_settle), the best chosen among them there; a depth shown worse keeps its verdict;
- crossfit_on: `crossfit: on`: only the cheaper depths than the validation rows' choice that they leave unsettled
  or beyond the tolerance are judged again out of fold, against the validation rows' best.

The out-of-fold rows are predicted by the same constructed models as the validation rows: the ideal of cross-fitting
(each row predicted by a model that never saw it, the folds' models as good as the shipped one), so these cells
measure what the rows buy, not the folds' own noise. Compute is counted in fits: 1 per depth for the sweep (one
seed), K = 5 per depth cross-fitted, best included (each on (K-1)/K of the rows: about K-1 times the depth's own
training).

The bootstrap is the rule's paired Poisson bootstrap (evidence.bootstrap, 2,000 resamples) drawn on the rows' types
instead of the rows: rows of the same (true class, each depth's class) count alike in every metric, and a sum of n
Poisson(1) weights is Poisson(n), so one Poisson(count) draw per type and resample has the row bootstrap's
distribution at a cost that does not grow with the rows (27,000 rows: milliseconds instead of seconds). Its random
numbers are fresh per decision where the rule's are fixed: the same intervals in distribution, not the same numbers.
So on the first decisions of each cell and path that cross-fit, the bench decides again with the rule's row bootstrap
and checks that choose_depth itself (on the out-of-fold rows; or after arms_to_settle, with an OutOfFold) ships the
same, and counts how often the grouped bootstrap agreed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench.common import print_table

FOLDS = 5
ROWS_PER_VALIDATION_ROW = 9  # train 80 %, validation 10 %: the train and validation rows are 9 x the validation rows
METRIC = "macro_f1"
PATHS = ("out_of_fold", "crossfit_auto", "crossfit_on")
# Differences with the bootstrap behind them: depth -> (observed difference from the best, (resamples,) bootstrap).
Differences = dict[int, tuple[float, np.ndarray]]


def grouped_differences(true: np.ndarray, predicted: dict[int, np.ndarray], best: int, rng: np.random.Generator,
                        resamples: int = 2000) -> Differences:
    """Each depth's observed difference from `best` and its paired Poisson bootstrap, drawn per row type (module
    docstring): the rule's metric on the types' counts."""
    from depthfinder.evidence.bootstrap import _weighted_metric  # the rule's own metric, on weighted rows

    depths = list(predicted)
    columns = [true, *(predicted[d] for d in depths)]
    classes = int(max(column.max() for column in columns)) + 1
    code = np.zeros(len(true), dtype=np.int64)
    for column in columns:  # each row's type as one number: (true, each depth's class) in base `classes`
        code = code * classes + column
    found, counts = np.unique(code, return_counts=True)
    types = np.stack([found // classes ** (len(columns) - 1 - i) % classes for i in range(len(columns))], axis=1)
    drawn = rng.poisson(counts, size=(resamples, len(counts))).astype(np.float32)  # (resamples, types)
    once = counts[None, :].astype(np.float32)  # (1, types): every row once
    values = {d: (_weighted_metric(types[:, 0], types[:, 1 + i], once, METRIC)[0],
                  _weighted_metric(types[:, 0], types[:, 1 + i], drawn, METRIC)) for i, d in enumerate(depths)}
    return {d: (float(values[d][0] - values[best][0]), values[d][1] - values[best][1]) for d in depths}


def row_differences(true: np.ndarray, predicted: dict[int, np.ndarray], best: int) -> Differences:
    """The same comparison with the rule's own row bootstrap (evidence.bootstrap.resampled_differences)."""
    from depthfinder.evidence.bootstrap import Predictions, resampled_differences

    found = resampled_differences(Predictions(true, {("x", d, 1): p for d, p in predicted.items()}),
                                  {("x", d): [1] for d in predicted}, ("x", best), METRIC)
    return {d: found["x", d] for d in predicted}


def verdict(observed: float, resampled: np.ndarray, tolerance: float, confidence: float) -> str:
    """selection.decision.judge's verdict on a depth, the best included (within): within, worse, unsettled, beyond."""
    from depthfinder.evidence.bootstrap import interval_of
    from depthfinder.evidence.margin import shown_worse, within

    found = interval_of(observed, resampled, confidence)
    if within(observed, tolerance, found.low):
        return "within"
    if shown_worse(found.high, tolerance):
        return "worse"
    return "unsettled" if within(observed, tolerance) else "beyond"


def decide_on_rows(flops: dict[int, float], true: np.ndarray, predicted: dict[int, np.ndarray], tolerance: float,
                   confidence: float, rng: np.random.Generator | None) -> int:
    """The rule's decision on these rows alone: the best by their mean (ties: the cheaper), the cheapest depth they
    show within; the grouped bootstrap, or the rule's row bootstrap when `rng` is None."""
    from depthfinder.evidence.bootstrap import metric_of

    by_cost = sorted(flops, key=lambda d: (flops[d], d))
    means = {d: metric_of(true, predicted[d], METRIC) for d in by_cost}
    best = max(by_cost, key=lambda d: means[d])  # the first of equal means: the cheaper
    found = row_differences(true, predicted, best) if rng is None else grouped_differences(true, predicted, best, rng)
    return next(d for d in by_cost if verdict(*found[d], tolerance, confidence) == "within")


def decide_after_crossfit(mode: str, flops: dict[int, float], best: int, differences: Differences, true: np.ndarray,
                          predicted: dict[int, np.ndarray], tolerance: float, confidence: float,
                          rng: np.random.Generator | None) -> tuple[int, int]:
    """The depth the product ships with `crossfit: mode` (auto or on; no budget) and the fits cross-fitting trained
    (0: it did not run), from the validation rows' `differences` from their `best` and the out-of-fold rows: auto
    judges every depth the validation rows did not show worse, the best chosen among them on the out-of-fold rows;
    on, the cheaper depths than the choice unsettled or beyond, the best kept (selection.crossfit.arms_to_settle)."""
    by_cost = sorted(flops, key=lambda d: (flops[d], d))
    judged = {d: verdict(*differences[d], tolerance, confidence) for d in by_cost}
    chosen = next(d for d in by_cost if judged[d] == "within")
    if mode == "auto":
        arms = [d for d in by_cost if d == best or judged[d] != "worse"]
        if len(arms) < 2:
            return chosen, 0
        shipped = decide_on_rows({d: flops[d] for d in arms}, true, {d: predicted[d] for d in arms}, tolerance,
                                 confidence, rng)
        return shipped, FOLDS * len(arms)
    cheaper = [d for d in by_cost if flops[d] < flops[chosen] and judged[d] in ("unsettled", "beyond")]
    if not cheaper:
        return chosen, 0
    arms = {d: predicted[d] for d in [best, *cheaper]}
    again = row_differences(true, arms, best) if rng is None else grouped_differences(true, arms, best, rng)
    judged |= {d: verdict(*again[d], tolerance, confidence) for d in cheaper}
    return next(d for d in by_cost if judged[d] == "within"), FOLDS * len(arms)


def decide_path(path: str, flops: dict[int, float], best: int, differences: Differences, true: np.ndarray,
                predicted: dict[int, np.ndarray], tolerance: float, confidence: float,
                rng: np.random.Generator | None) -> tuple[int, int]:
    """The depth one path (PATHS) ships for a sweep and the fits its cross-fitting trained."""
    if path == "out_of_fold":
        return decide_on_rows(flops, true, predicted, tolerance, confidence, rng), FOLDS * len(flops)
    return decide_after_crossfit(path.removeprefix("crossfit_"), flops, best, differences, true, predicted, tolerance,
                                 confidence, rng)


def rules_choice_after_crossfit(mode: str, candidates: list, true: np.ndarray, predicted: dict[int, np.ndarray],
                                tolerance: float, confidence: float) -> int:
    """What the product ships: choose_depth on the validation rows, arms_to_settle, and choose_depth again with the
    out-of-fold predictions of the best and the depths to settle."""
    from depthfinder.evidence.bootstrap import Predictions
    from depthfinder.selection.crossfit import OutOfFold, arms_to_settle, judges_every_depth
    from depthfinder.selection.rule import choose_depth
    from depthfinder.selection.settings import SelectionRule

    rule = SelectionRule(tolerance=tolerance, confidence=confidence)
    decision = choose_depth(candidates, rule)
    settle = arms_to_settle(decision, mode)
    if not settle:
        return decision.selected_depth
    arms = [(decision.best_family, decision.best_depth), *settle]
    evidence = OutOfFold(Predictions(true, {(f, d, 1): predicted[d] for f, d in arms}), folds=FOLDS,
                         chooses_best=judges_every_depth(mode, decision, arms))
    return choose_depth(candidates, rule, evidence).selected_depth


def candidates_of(true: np.ndarray, predicted: dict[int, np.ndarray], flops: dict[int, float], folder: Path) -> list:
    """A sweep as choose_depth takes it: a Candidate per depth judged on these rows, its file written to `folder`."""
    from depthfinder.evidence.bootstrap import metric_of, save_predictions
    from depthfinder.selection.candidate import Candidate, Cost

    return [Candidate(depth=d, status="trained", metrics={METRIC: metric_of(true, p, METRIC)},
                      cost=Cost(flops_per_example=flops[d]),
                      predictions=str(save_predictions(folder / f"depth-{d}.npz", true, p)))
            for d, p in predicted.items()]


@dataclass
class OutOfFoldCell:
    """One constructed cell's decisions with out-of-fold rows (a fresh draw of `rows` of the pool per decision): per
    path, the depth each shipped, the fits it spent, and the checks against choose_depth (and of those, how many the
    grouped bootstrap decided as the row bootstrap did)."""

    true: np.ndarray
    predicted: dict[int, np.ndarray]
    rows: int
    checks: int
    rng: np.random.Generator
    shipped: dict[str, list[int]] = field(default_factory=lambda: {path: [] for path in PATHS})
    fits: dict[str, list[int]] = field(default_factory=lambda: {path: [] for path in PATHS})
    checked: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PATHS, 0))
    agreed: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PATHS, 0))

    def decide(self, flops: dict[int, float], best: int, differences: Differences, tolerance: float,
               confidence: float, candidates: Callable[[], list], folder: Path) -> None:
        """One sweep, from its validation rows' `differences` from their `best` (`candidates`: the same sweep as
        choose_depth takes it), by every path; checked while checks are left."""
        from depthfinder.selection.rule import choose_depth
        from depthfinder.selection.settings import SelectionRule

        pool = len(self.true)
        rows = np.arange(pool) if self.rows >= pool else np.sort(self.rng.choice(pool, self.rows, replace=False))
        true, predicted = self.true[rows], {d: p[rows] for d, p in self.predicted.items()}
        for path in PATHS:
            given = (path, flops, best, differences, true, predicted, tolerance, confidence)
            depth, fits = decide_path(*given, self.rng)
            if fits and self.checked[path] < self.checks:
                exact, _ = decide_path(*given, None)
                rule = (choose_depth(candidates_of(true, predicted, flops, folder),
                                     SelectionRule(tolerance=tolerance, confidence=confidence)).selected_depth
                        if path == "out_of_fold" else
                        rules_choice_after_crossfit(path.removeprefix("crossfit_"), candidates(), true, predicted,
                                                    tolerance, confidence))
                if rule != exact:
                    raise SystemExit(f"{path}: the rule shipped depth {rule}, the bench {exact}: the bench does not "
                                     "measure the rule")
                self.checked[path] += 1
                self.agreed[path] += exact == depth
            self.shipped[path].append(depth)
            self.fits[path].append(fits)


def report_out_of_fold(stress: dict, goal: float) -> str:
    """The out-of-fold table of the constructed cells (validation alone against each path, and the fits each spent),
    the checks, the goal's verdict; the RESULT line's fields."""

    cells = [(name, size, cell) for name, sizes in stress.items() for size, cell in sizes.items()
             if "out_of_fold" in cell]
    if not cells:
        return ""
    rows = []
    for name, size, cell in cells:
        rows.append([name, size, f"{cell['out_of_fold'].rows:,}",
                     *(f"{cell[p].risk:.2f} / {cell[p].thrift:.2f}" for p in ("non_inferior", *PATHS)),
                     f"{cell['out_of_fold'].sweep_fits} + " + " / ".join(f"{cell[p].fits.mean():.1f}" for p in PATHS),
                     str(cell["non_inferior"].decisions)])
    print(f"\nout-of-fold evidence ({FOLDS} folds, no budget): risk / thrift on the validation rows alone and with "
          "out-of-fold rows, 9 x the validation rows: the rule's decision made on them (out_of_fold), what the product "
          "ships with crossfit auto and on; fits per decision: the sweep's + each path's cross-fitting, mean")
    print_table(["dataset", "validation rows", "out-of-fold rows", "validation only", *PATHS,
                  "fits: sweep + out_of_fold / auto / on", "decisions"], rows)
    checked = {p: sum(cell[p].checked for _, _, cell in cells) for p in PATHS}
    agreed = {p: sum(cell[p].agreed for _, _, cell in cells) for p in PATHS}
    print("choose_depth shipped what the bench ships with the rule's row bootstrap on every decision checked (the "
          "first that cross-fit, per cell and path): " + ", ".join(f"{p} {checked[p]}" for p in PATHS)
          + "; the grouped bootstrap shipped the same on " + ", ".join(f"{agreed[p]}" for p in PATHS))
    return _constructed_fields(cells, goal)


def _constructed_fields(cells: list, goal: float) -> str:
    """The goal's verdict on the constructed cells per path, printed, and their RESULT fields."""
    def pooled(path: str, size: str) -> float:
        chosen = [cell[path].thrifty for _, s, cell in cells if s == size]
        return float(np.concatenate(chosen).mean()) if chosen else float("nan")

    fields = ""
    for path, short in (("non_inferior", "val"), ("out_of_fold", "oof"), ("crossfit_auto", "auto"),
                        ("crossfit_on", "on")):
        worst = max(cell[path].risk for _, _, cell in cells)
        over = [f"{name} at {size}" for name, size, cell in cells if cell[path].risk > goal + 1e-12]
        print(f"{path}: risk at most {goal:.2f} in every constructed cell: "
              f"{'met' if not over else 'not met (' + '; '.join(over) + ')'}; thrift at 300 validation rows "
              f"{pooled(path, '300'):.2f} pooled")
        fields += f" {short}_worst_risk={worst:.3f} {short}_thrift_300={pooled(path, '300'):.3f}"
        if path != "non_inferior":
            fits = np.concatenate([cell[path].fits for _, _, cell in cells])
            fields += f" {short}_fits={fits.mean():.2f}"
    return fields
