"""The two pictures of a decision: each depth's difference from the best with its interval and the tolerance band,
and metric vs cost (Pareto front)."""

from __future__ import annotations

from pathlib import Path

from encoder.selection.candidate import Candidate
from encoder.selection.rule import COST_NAMES, Decision, DepthScore


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only; never a window
    import matplotlib.pyplot as plt

    return plt


COLORS = {"scratch": "tab:blue", "pretrained": "tab:green"}


def _chosen(decision: Decision) -> DepthScore:
    return next(s for s in decision.scores
                if (s.family, s.depth) == (decision.selected_family, decision.selected_depth))


def depth_points(decision: Decision, pruned: list[Candidate] = ()) -> list[dict]:
    """What the depth plot shows, per depth: its difference from the best on validation with the ends of its
    interval (its paired bootstrap interval, else ± its standard error), and, for a depth halving pruned (or only
    screened, by a probe of a deeper network), its difference at the budget it was pruned at (as screened)."""
    best = next(s for s in decision.scores if (s.family, s.depth) == (decision.best_family, decision.best_depth))
    points = []
    for s in decision.scores:
        if s.vs_best is not None:
            low, high, difference = s.vs_best.low, s.vs_best.high, s.vs_best.difference
        else:
            difference = s.mean - best.mean
            low, high = difference - s.std_error, difference + s.std_error
        points.append({"family": s.family, "depth": s.depth, "difference": difference, "low": low, "high": high,
                       "pruned": None})
    for c in pruned:
        value = c.metrics.get(decision.metric)
        if value is not None:
            difference = value - best.mean
            points.append({"family": c.family, "depth": c.depth, "difference": difference, "low": difference,
                           "high": difference, "pruned": c.epochs, "status": c.status})
    return points


def plot_metric_vs_depth(decision: Decision, path: Path, pruned: list[Candidate] = ()) -> Path:
    """Each depth's validation metric minus the best's, with its interval, against the band of the tolerance the
    rule allows (a depth whose interval reaches into the band is tied with the best); depths halving pruned are
    marked at their budget; the choice highlighted. The axis spans at least three tolerances, so a gap within
    the noise does not look large."""
    plt = _pyplot()
    points = depth_points(decision, pruned)
    families = list(dict.fromkeys(p["family"] for p in points))
    fig, ax = plt.subplots(figsize=(5.5, 4.2), dpi=120)
    tolerance = decision.effective_tolerance
    ax.axhspan(-tolerance, 0, color="tab:green", alpha=0.12, label=f"within the tolerance ({tolerance:g})")
    ax.axhline(0, color="tab:gray", linewidth=0.8)
    for family in families:
        kept = [p for p in points if p["family"] == family and p["pruned"] is None]
        name = "trained" + (f" ({family})" if len(families) > 1 else "")
        ax.errorbar([p["depth"] for p in kept], [p["difference"] for p in kept],
                    yerr=[[p["difference"] - p["low"] for p in kept], [p["high"] - p["difference"] for p in kept]],
                    marker="o", capsize=4, linestyle="none", color=COLORS[family], label=name)
    cut = [p for p in points if p["pruned"] is not None and p.get("status") != "screened"]
    if cut:
        ax.scatter([p["depth"] for p in cut], [p["difference"] for p in cut], marker="x", color="tab:gray",
                   label=f"pruned (at {', '.join(sorted({str(p['pruned']) for p in cut}))} epochs)")
    seen = [p for p in points if p.get("status") == "screened"]
    if seen:
        ax.scatter([p["depth"] for p in seen], [p["difference"] for p in seen], marker="^", facecolors="none",
                   edgecolors="tab:purple", label="screened only (a probe of the deepest network)")
    chosen = next(p for p in points if (p["family"], p["depth"]) == (decision.selected_family,
                                                                     decision.selected_depth) and p["pruned"] is None)
    ax.scatter([chosen["depth"]], [chosen["difference"]], s=160, facecolors="none", edgecolors="tab:red",
               linewidths=2, label=f"chosen: {decision.selected_label}", zorder=3)
    lowest = min([p["low"] for p in points] + [-3 * tolerance, -0.05])
    highest = max([p["high"] for p in points] + [tolerance, 0.02])
    pad = 0.1 * (highest - lowest)
    ax.set_ylim(lowest - pad, highest + pad)
    ax.set_xticks(sorted({p["depth"] for p in points}))
    ax.margins(x=0.1)
    ax.set_xlabel("depth (encoder blocks)")
    ax.set_ylabel(f"{decision.metric} \u2212 best")
    interval = f"{decision.confidence:.0%} interval" if decision.confidence else "± standard error"
    ax.set_title(f"validation {decision.metric} minus the best ({decision.best_label}), {interval}", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2, fontsize=7, frameon=False)  # below: no overlap
    return _save(fig, path)


def cost_text(cost: str, value: float) -> str:
    """A cost as a reader wants it: MFLOPs, ms, millions of parameters, seconds."""
    if cost == "flops_per_example":
        return f"{value / 1e6:.3g} MFLOPs"
    if cost == "params":
        return f"{value / 1e6:.3g} M"
    if cost.startswith(("latency", "onnx_latency")):
        return f"{value:.3g} ms"
    return f"{value:.3g} s"


def plot_metric_vs_cost(decision: Decision, path: Path) -> Path:
    """Each depth at (cost, metric), the Pareto front as a line, the chosen depth marked."""
    plt = _pyplot()
    from matplotlib.ticker import NullFormatter

    scores = sorted(decision.scores, key=lambda s: s.cost)
    fig, ax = plt.subplots(figsize=(5, 3.5), dpi=120)
    ax.scatter([s.cost for s in scores], [s.mean for s in scores], color="tab:gray", zorder=2, label="depth")
    for s in scores:
        name = f"{'p' if s.family == 'pretrained' else 'd'}{s.depth}"  # p2: pretrained depth 2
        ax.annotate(name, (s.cost, s.mean), textcoords="offset points", xytext=(5, 4), fontsize=8)
    on_front = set(zip(decision.pareto_families, decision.pareto_front, strict=True))
    front = [s for s in scores if (s.family, s.depth) in on_front]
    ax.plot([s.cost for s in front], [s.mean for s in front], color="tab:blue", label="Pareto front")
    chosen = _chosen(decision)
    ax.scatter([chosen.cost], [chosen.mean], s=160, facecolors="none", edgecolors="tab:red", linewidths=2,
               label=f"chosen: {decision.selected_label}", zorder=3)
    ax.set_xscale("log")
    # Label the depths' own costs, not log-axis minor ticks (they overprint each other).
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xticks([s.cost for s in scores], [cost_text(decision.cost, s.cost) for s in scores], fontsize=7)
    ax.margins(x=0.12, y=0.08)
    ax.set_xlabel(COST_NAMES[decision.cost])
    ax.set_ylabel(decision.metric)
    ax.set_title(f"{decision.metric} vs {COST_NAMES[decision.cost]}")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    return _save(fig, path)


def _save(fig, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path
