"""Two designs for judging every depth on all the evidence, measured on constructed cells whose truth is exact.

The question (docs/selection.md, *Why every depth*): when a chance validation mean decides which depths get more
evidence, is the cure to judge every depth on the out-of-fold rows, or a stricter rule, or both? For each cell of
bench/tolerance_risk.py's `constructed` (gaps in tolerances below the deepest depth; negative: above it) and each
validation size, `--draws` sweeps of that many validation rows and 9 x as many out-of-fold rows (its pool), each
decided by three rules on each kind of rows (the paired bootstrap drawn per row type, bench/out_of_fold.py):

- best: the product's rule: the best by the mean, the cheapest depth shown within the tolerance of it;
- every: the same, and a cheaper depth must also be shown within the tolerance of every costlier depth (else the
  best ships);
- stepdown: the cheapest depth shown within the tolerance of every costlier depth whose mean is within the tolerance
  of the best's (the costliest always qualifies on the first count): a cheap depth that wins by chance must still be
  shown as good as the deep ones.

Printed per cell and size: risk / thrift of each (risk: shipped more than the tolerance below the best in truth;
thrift: shipped the cheapest depth within it), on the validation rows (`val_`) and the out-of-fold rows (`oof_`).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from bench.out_of_fold import ROWS_PER_VALIDATION_ROW, grouped_differences, verdict
from bench.tolerance_risk import constructed

RULES = ("best", "every", "stepdown")


def decide(flops: dict[int, float], true: np.ndarray, predicted: dict[int, np.ndarray], rng: np.random.Generator,
           rule: str, tolerance: float, confidence: float) -> int:
    """The depth `rule` ships on these rows."""
    from depthfinder.evidence.bootstrap import metric_of

    by_cost = sorted(flops, key=lambda d: (flops[d], d))
    means = {d: metric_of(true, predicted[d], "macro_f1") for d in by_cost}
    best = max(by_cost, key=lambda d: means[d])
    vs_best = grouped_differences(true, predicted, best, rng)
    near_best = {d: d == best or verdict(*vs_best[d], tolerance, confidence) == "within" for d in by_cost}
    if rule == "best":
        return next(d for d in by_cost if near_best[d])
    against = {e: grouped_differences(true, predicted, e, rng) for e in by_cost}

    def as_good_as_costlier(d: int) -> bool:
        return all(verdict(*against[e][d], tolerance, confidence) == "within" for e in by_cost if flops[e] > flops[d])

    if rule == "every":
        return next((d for d in by_cost if near_best[d] and as_good_as_costlier(d)), best)
    return next((d for d in by_cost if as_good_as_costlier(d) and means[d] >= means[best] - tolerance - 1e-9), best)


def main(argv: list[str] | None = None) -> int:
    from depthfinder.evidence.bootstrap import metric_of

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gaps", default="1.1,1.1/1.1/1.1,1.5/1.5/1.5,2,0.5,-0.5,-1.1,1.1/-1.1")
    parser.add_argument("--sizes", default="100,300,1000")
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--tolerance", type=float, default=0.01)
    parser.add_argument("--confidence", type=float, default=0.9)
    args = parser.parse_args(argv)
    tolerance, confidence = args.tolerance, args.confidence
    for spec in args.gaps.split(","):
        cell = constructed([float(gap) for gap in spec.split("/")], tolerance)
        truth = {d: metric_of(cell.test_true, cell.test[d, 1], "macro_f1") for d in cell.depths}
        good = {d for d in cell.depths if truth[d] >= max(truth.values()) - tolerance - 1e-9}
        thrifty = min(good, key=lambda d: cell.flops[d])
        rng = np.random.default_rng(1)
        print(f"{cell.name}: test macro_f1 by depth " + ", ".join(f"{d}: {v:.3f}" for d, v in truth.items()))
        for size in (int(s) for s in args.sizes.split(",")):
            outcomes: dict[str, list[tuple[bool, bool]]] = {}
            for _ in range(args.draws):
                rows = rng.choice(len(cell.val_true), size, replace=False)
                pool = rng.choice(len(cell.oof_true), ROWS_PER_VALIDATION_ROW * size, replace=False)
                for source, (true, predicted) in {
                        "val": (cell.val_true[rows], {d: cell.val[d, 1][rows] for d in cell.depths}),
                        "oof": (cell.oof_true[pool], {d: cell.oof[d][pool] for d in cell.depths})}.items():
                    for rule in RULES:
                        depth = decide(cell.flops, true, predicted, rng, rule, tolerance, confidence)
                        outcomes.setdefault(f"{source}_{rule}", []).append((depth not in good, depth == thrifty))
            shown = [f"{key} {np.mean([r for r, _ in found]):.2f}/{np.mean([t for _, t in found]):.2f}"
                     for key, found in outcomes.items()]
            print(f"  {size:5d} " + "  ".join(shown), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
