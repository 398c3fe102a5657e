""""Not worse than a reference by more than a margin": the one predicate every such decision is judged by.

The depth rule (a cheaper depth against the best, by `tolerance`), the search strategy's "tied" and its first guess
(by `tolerance` too: the search serves the depth rule), successive halving's late bloomers (a projected curve against
the weakest kept depth, by `halving_margin`), the deployment gate (an ONNX variant against the torch model, by
`deployment_margin`) and convergence (a curve's best before its last epochs against its best in them, by
`convergence_gain`) all ask whether something may stand in for a reference, each with its own setting, so that
loosening one loosens no other. They ask it here, the same way: nothing passes whose mean is more than the margin
below the reference's, however wide its interval, and where there is evidence (a paired bootstrap) the lower end of
its interval must clear the margin too: the rows must show it within. "Not shown worse" alone is never a pass; with
few rows everything would pass, and the margin would silently grow with the noise.

Promotion asks another question, and answers it with `shown_worse`: a challenger retrained on more rows replaces
the model it succeeds unless the test rows show it worse by more than `promotion_margin` (docs/selection.md says
why).
"""

from __future__ import annotations

import math

# Metrics are floats computed from counts: keep reference - margin from excluding a value that sits exactly on
# the boundary because of rounding (0.95 - 0.01 = 0.9399999...).
EPS = 1e-9


def within(difference: float, margin: float, lower: float | None = None) -> bool:
    """Whether something is not worse than its reference by more than `margin`: its `difference` (it − reference,
    the observed means) is at least −margin, and so is `lower`, the lower end of the evidence's interval of that
    difference, when there is evidence."""
    if not difference >= -margin - EPS:  # written so that a NaN never passes
        return False
    return lower is None or lower >= -margin - EPS


def shown_worse(upper: float, margin: float) -> bool:
    """Whether the evidence shows something worse than its reference by more than `margin`: the upper end of the
    interval of (it − reference) below −margin. Promotion's question; never a tie test."""
    return upper < -margin - EPS


def rows_to_resolve(rows: int, half_width: float, margin: float) -> int | None:
    """About how many rows would make an interval ±`half_width` wide on `rows` rows as narrow as ±`margin` (a
    bootstrap interval's width shrinks as 1/sqrt(rows)), rounded up to two significant figures: an estimate, not a
    count; None when it is already, or when no rows would (margin 0)."""
    if half_width <= margin + EPS or margin <= 0:
        return None
    needed = rows * (half_width / margin) ** 2
    step = 10 ** max(0, math.floor(math.log10(needed)) - 1)
    return math.ceil(needed / step) * step
