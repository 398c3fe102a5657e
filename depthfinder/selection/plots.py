"""The two pictures of a decision, drawn by the rule's own criterion (evidence.margin): each depth's
validation difference from the best with its interval against −tolerance, and validation quality vs cost with the
same intervals. One colour per family, whatever the families are called (scratch, pretrained, or one per
checkpoint)."""

from __future__ import annotations

from pathlib import Path

from depthfinder.selection.candidate import COST_NAMES, Candidate, arm_label
from depthfinder.selection.decision import Decision, DepthScore
from depthfinder.selection.reasons import VERDICT_WORDS

# A marker per verdict of the rule (DepthScore.verdict); the legend says each in the rule's own words.
MARKERS = {"best": "D", "within": "o", "unsettled": "s", "beyond": "X", "worse": "v"}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only; never a window
    import matplotlib.pyplot as plt

    return plt


def family_colors(families: list[str]) -> dict[str, str]:
    """A colour per family in the order given, from matplotlib's qualitative cycle (tab10, then tab20)."""
    import matplotlib

    cycle = [*matplotlib.colormaps["tab10"].colors, *matplotlib.colormaps["tab20"].colors[1::2]]
    return {family: matplotlib.colors.to_hex(cycle[i % len(cycle)]) for i, family in enumerate(families)}


def _best(decision: Decision) -> DepthScore:
    return next(s for s in decision.scores if (s.family, s.depth) == (decision.best_family, decision.best_depth))


def depth_points(decision: Decision, pruned: list[Candidate] = ()) -> list[dict]:
    """What the depth plot shows, per depth: its difference from the best on validation with the ends of its
    interval (its paired bootstrap interval, else ± its standard error) and the rule's verdict on it (as the
    decision carries it: DepthScore.verdict), and, for a
    depth halving pruned (or only screened, by a probe of a deeper network), its difference at the budget it was
    pruned at (as screened)."""
    best = _best(decision)
    points = []
    for s in decision.scores:
        if s.vs_best is not None:
            low, high, difference = s.vs_best.low, s.vs_best.high, s.vs_best.difference
        else:
            difference = s.mean - best.mean
            low, high = difference - s.std_error, difference + s.std_error
        points.append({"family": s.family, "depth": s.depth, "difference": difference, "low": low, "high": high,
                       "pruned": None, "verdict": s.verdict})
    for c in pruned:
        value = c.metrics.get(decision.metric)
        if value is not None:
            difference = value - best.mean
            points.append({"family": c.family, "depth": c.depth, "difference": difference, "low": difference,
                           "high": difference, "pruned": c.epochs, "status": c.status})
    return points


def evidence_note(decision: Decision) -> str | None:
    """`302 validation rows cannot resolve the 0.01 tolerance; about 2,200 would`: the decision's own count
    (Decision.rows_to_resolve, as its sentence gives it, selection.reasons), or None when nothing the
    choice depends on was unsettled."""
    if decision.rows_to_resolve is None or decision.validation_rows is None:
        return None
    return (f"{decision.validation_rows:,} validation rows cannot resolve the {decision.tolerance:g} "
            f"tolerance; about {decision.rows_to_resolve:,} would")


def _error_bars(points: list[dict], centre: str) -> list[list[float]]:
    """Matplotlib's (below, above) error bars of each point around its `centre` key: the labelled rows' difference
    of a depth bounded on unlabelled texts may lie outside the pool's bounds, drawn then as a bar on one side."""
    return [[max(0.0, p[centre] - p["low"]) for p in points], [max(0.0, p["high"] - p[centre]) for p in points]]


def _offsets(families: list[str]) -> dict[str, float]:
    """A small sideways shift per family, so that two families' points at one depth do not hide each other."""
    step = 0.12 if len(families) > 1 else 0.0
    return {family: (i - (len(families) - 1) / 2) * step for i, family in enumerate(families)}


def plot_metric_vs_depth(decision: Decision, path: Path, pruned: list[Candidate] = ()) -> Path:
    """Each depth's validation metric minus the best's, with its interval, against −tolerance: a depth may ship
    in the best's place only when its whole interval clears the line (the rule's criterion, marked per depth);
    depths halving pruned are marked at their budget; the choice highlighted. The axis spans at least three
    tolerances, so a gap within the noise does not look large."""
    plt = _pyplot()
    points = depth_points(decision, pruned)
    families = list(dict.fromkeys(p["family"] for p in points))
    colors, shift = family_colors(families), _offsets(families)
    fig, ax = plt.subplots(figsize=(6, 4.6), dpi=120)
    tolerance = decision.tolerance
    ax.axhspan(-tolerance, 0, color="tab:green", alpha=0.10, label=f"an interval must lie above \u2212{tolerance:g}")
    ax.axhline(-tolerance, color="tab:green", linewidth=1, linestyle="--")
    ax.axhline(0, color="tab:gray", linewidth=0.8)
    for family in families:
        for key, words in VERDICT_WORDS.items():
            kept = [p for p in points if p["family"] == family and p["pruned"] is None and p["verdict"] == key]
            if not kept:
                continue
            name = words + (f" ({family})" if len(families) > 1 else "")
            ax.errorbar([p["depth"] + shift[family] for p in kept], [p["difference"] for p in kept],
                        yerr=_error_bars(kept, "difference"),
                        marker=MARKERS[key], capsize=4, linestyle="none", color=colors[family], label=name)
    _mark_pruned(ax, points, shift)
    chosen = next(p for p in points if (p["family"], p["depth"]) == (decision.selected_family,
                                                                     decision.selected_depth) and p["pruned"] is None)
    ax.scatter([chosen["depth"] + shift[chosen["family"]]], [chosen["difference"]], s=160, facecolors="none",
               edgecolors="tab:red", linewidths=2, label=f"chosen: {decision.selected_label}", zorder=3)
    lowest = min([p["low"] for p in points] + [-3 * tolerance, -0.05])
    highest = max([p["high"] for p in points] + [tolerance, 0.02])
    pad = 0.1 * (highest - lowest)
    ax.set_ylim(lowest - pad, highest + pad)
    ax.set_xticks(sorted({p["depth"] for p in points}))
    ax.margins(x=0.1)
    ax.set_xlabel("depth (encoder blocks)")
    ax.set_ylabel(f"validation {decision.metric} \u2212 best")
    interval = f"{decision.confidence:.0%} paired interval" if decision.confidence else "\u00b1 standard error"
    title = f"validation {decision.metric} minus the best ({decision.best_label}), {interval}"
    if note := evidence_note(decision):
        title += f"\n{note}"
    ax.set_title(title, fontsize=8)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, fontsize=7, frameon=False)  # below: no overlap
    return _save(fig, path)


def _mark_pruned(ax, points: list[dict], shift: dict[str, float]) -> None:
    """Depths halving pruned (x, at their budget) and depths only screened by a probe (open triangles)."""
    cut = [p for p in points if p["pruned"] is not None and p.get("status") != "screened"]
    if cut:
        ax.scatter([p["depth"] + shift[p["family"]] for p in cut], [p["difference"] for p in cut], marker="x",
                   color="tab:gray", label=f"pruned (at {', '.join(sorted({str(p['pruned']) for p in cut}))} epochs)")
    seen = [p for p in points if p.get("status") == "screened"]
    if seen:
        ax.scatter([p["depth"] + shift[p["family"]] for p in seen], [p["difference"] for p in seen], marker="^",
                   facecolors="none", edgecolors="tab:purple", label="screened only (a probe of the deepest network)")


def cost_text(cost: str, value: float) -> str:
    """A cost as a reader wants it: MFLOPs, ms, millions of parameters, seconds."""
    if cost == "flops_per_example":
        return f"{value / 1e6:.3g} MFLOPs"
    if cost == "params":
        return f"{value / 1e6:.3g} M"
    if cost.startswith(("latency", "onnx_latency")):
        return f"{value:.3g} ms"
    return f"{value:.3g} s"


def cost_points(decision: Decision) -> list[dict]:
    """What the cost plot shows, per depth: its cost, its validation mean and the ends of its interval (the best's
    mean plus the paired interval of its difference from the best, else ± its standard error). A depth compared with
    the best out of fold (selection.crossfit) stands at the best's mean plus its out-of-fold difference, which its
    interval is around; one bounded on unlabelled texts (selection.pool), between the pool's bounds."""
    best = _best(decision)
    points = []
    for s in sorted(decision.scores, key=lambda s: s.cost):
        mean = s.mean
        if s.vs_best is not None and s is not best:
            low, high = best.mean + s.vs_best.low, best.mean + s.vs_best.high
            mean = best.mean + s.vs_best.difference if s.compared_on != "validation" else mean
        else:
            low, high = s.mean - s.std_error, s.mean + s.std_error
        points.append({"family": s.family, "depth": s.depth, "cost": s.cost, "mean": mean, "low": low,
                       "high": high})
    return points


def plot_metric_vs_cost(decision: Decision, path: Path) -> Path:
    """Each depth at (cost, validation metric) with its interval, the best's mean minus the tolerance as a line,
    the Pareto front, the chosen depth marked; the metric axis spans at least six tolerances, so that the noise
    is not magnified into a slope."""
    plt = _pyplot()
    from matplotlib.ticker import NullFormatter

    points = cost_points(decision)
    families = list(dict.fromkeys(p["family"] for p in points))
    colors = family_colors(families)
    fig, ax = plt.subplots(figsize=(6, 4.2), dpi=120)
    for family in families:
        mine = [p for p in points if p["family"] == family]
        ax.errorbar([p["cost"] for p in mine], [p["mean"] for p in mine],
                    yerr=_error_bars(mine, "mean"),
                    marker="o", capsize=4, linestyle="none", color=colors[family], zorder=2,
                    label=family if len(families) > 1 else "depth")
    named = len(families) > 1
    for p in points:
        ax.annotate(f"d{p['depth']}", (p["cost"], p["mean"]), textcoords="offset points", xytext=(5, 4), fontsize=8)
    on_front = set(zip(decision.pareto_families, decision.pareto_front, strict=True))
    front = [p for p in points if (p["family"], p["depth"]) in on_front]
    ax.plot([p["cost"] for p in front], [p["mean"] for p in front], color="tab:gray", linewidth=1,
            label="Pareto front")
    best = _best(decision)
    ax.axhline(best.mean - decision.tolerance, color="tab:green", linestyle="--", linewidth=1,
               label=f"best \u2212 tolerance ({decision.tolerance:g})")
    chosen = next(p for p in points if (p["family"], p["depth"]) == (decision.selected_family,
                                                                     decision.selected_depth))
    ax.scatter([chosen["cost"]], [chosen["mean"]], s=160, facecolors="none", edgecolors="tab:red", linewidths=2,
               label=f"chosen: {arm_label(decision.selected_family, decision.selected_depth, named)}", zorder=3)
    ax.set_xscale("log")
    # Label the depths' own costs, not log-axis minor ticks (they overprint each other).
    ax.xaxis.set_minor_formatter(NullFormatter())
    costs = sorted({p["cost"] for p in points})
    ax.set_xticks(costs, [cost_text(decision.cost, cost) for cost in costs], fontsize=7)
    _honest_limits(ax, points, best.mean, decision.tolerance)
    ax.margins(x=0.12)
    ax.set_xlabel(COST_NAMES[decision.cost])
    ax.set_ylabel(f"validation {decision.metric}")
    interval = f"{decision.confidence:.0%} paired interval vs the best" if decision.confidence else "\u00b1 s.e."
    ax.set_title(f"validation {decision.metric} vs {COST_NAMES[decision.cost]} ({interval})", fontsize=8)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, fontsize=7, frameon=False)
    return _save(fig, path)


def _honest_limits(ax, points: list[dict], best: float, tolerance: float) -> None:
    """A metric axis that holds every interval and spans at least six tolerances (and 0.1), centred on the data."""
    lowest = min([p["low"] for p in points] + [best - tolerance])
    highest = max(p["high"] for p in points)
    span = max(highest - lowest, 6 * tolerance, 0.1)
    middle = (lowest + highest) / 2
    ax.set_ylim(middle - 0.55 * span, middle + 0.55 * span)


def _save(fig, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path
