"""The two pictures of a decision: metric vs depth (with error bars) and metric vs cost (Pareto front)."""

from __future__ import annotations

from pathlib import Path

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


def plot_metric_vs_depth(decision: Decision, path: Path) -> Path:
    """Mean validation metric per depth with standard-error bars, one line per family; the choice highlighted."""
    plt = _pyplot()
    scores = decision.scores
    families = list(dict.fromkeys(s.family for s in scores))
    fig, ax = plt.subplots(figsize=(5, 3.5), dpi=120)
    for family in families:
        line = [s for s in scores if s.family == family]
        name = f"validation {decision.metric}" + (f" ({family})" if len(families) > 1 else "")
        ax.errorbar([s.depth for s in line], [s.mean for s in line], yerr=[s.std_error for s in line],
                    marker="o", capsize=4, color=COLORS[family], label=name)
    chosen = _chosen(decision)
    ax.scatter([chosen.depth], [chosen.mean], s=160, facecolors="none", edgecolors="tab:red", linewidths=2,
               label=f"chosen: {decision.selected_label}", zorder=3)
    ax.set_xlabel("depth (encoder blocks)")
    ax.set_ylabel(decision.metric)
    ax.set_xticks(sorted({s.depth for s in scores}))
    ax.margins(x=0.1, y=0.1)
    ax.set_title(f"{decision.metric} vs depth")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    return _save(fig, path)


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
    ax.set_xticks([s.cost for s in scores], [f"{s.cost:.3g}" for s in scores], fontsize=8)
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
