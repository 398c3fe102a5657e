"""What people read: the terminal summary and the Prefect markdown artifacts."""

from __future__ import annotations

import base64
from pathlib import Path

EXAMPLES_SHOWN = 3
COLUMNS = (
    ("depth", "depth", "{}"),
    ("seed", "seed", "{}"),
    ("status", "status", "{}"),
    ("epochs", "epochs", "{}"),
    ("val macro-F1", "metrics.macro_f1", "{:.3f}"),
    ("test macro-F1", "test_metrics.macro_f1", "{:.3f}"),
    ("params", "cost.params", "{:,.0f}"),
    ("MFLOPs/ex", "cost.flops_per_example", "{:.2f}"),
    ("p50 ms", "cost.latency_ms_p50", "{:.2f}"),
    ("p95 ms", "cost.latency_ms_p95", "{:.2f}"),
    ("train s", "cost.train_seconds", "{:.1f}"),
)


def _field(candidate: dict, path: str, fmt: str) -> str:
    value: object = candidate
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if value is None:
        return "-"
    if path == "cost.flops_per_example":
        value = float(value) / 1e6
    return fmt.format(value)


def candidate_rows(candidates: list[dict]) -> tuple[list[str], list[list[str]]]:
    """Header and formatted cells of the candidates table."""
    header = [title for title, _, _ in COLUMNS]
    return header, [[_field(c, path, fmt) for _, path, fmt in COLUMNS] for c in candidates]


def audit_lines(report: dict) -> list[str]:
    """One line per check (verdict, name, headline figure), its first examples when it failed, and dropped rows."""
    lines = []
    for check in report["checks"]:
        verdict = "ok  " if check["success"] else ("FAIL" if check["severity"] == "error" else "warn")
        lines.append(f"  {verdict} {check['name']:<28} {headline(check)}".rstrip())
        if not check["success"]:
            lines += [f"         {_example(example)}" for example in check["examples"][:EXAMPLES_SHOWN]]
    if report.get("dropped"):
        lines.append(f"  dropped before the audit: {_dropped(report['dropped'])}")
    return lines


def headline(check: dict) -> str:
    """The figure that says most about a check."""
    observed = check["observed"]
    if "not_run" in observed:
        return f"not run: {observed['not_run']}"
    if check["name"] == "suspected_label_noise" and "fraction" in observed:
        sampled = ", sampled" if observed.get("sampled") else ""
        return (
            f"estimated noise {100 * observed['fraction']:.1f} % ({observed['rows']} rows flagged of "
            f"{observed['judged_rows']} judged{sampled})"
        )
    if check["name"] == "class_imbalance" and observed.get("ratio") is not None:
        return f"majority/minority {observed['ratio']:.1f}, minority share {100 * observed['minority_share']:.1f} %"
    if check["name"] == "label_giveaway_columns" and observed.get("columns"):
        best = max(observed["columns"], key=lambda column: column["lift"])
        return f"strongest: {best['column']} ({best['reading']}), lift {best['lift']:.2f}"
    if check["name"] == "label_in_text":
        return f"{len(observed.get('tokens', []))} giveaway tokens"
    if "rows" in observed:
        return f"{observed['rows']} rows ({100 * observed.get('fraction', 0):.2f} %)"
    scalars = [f"{k}={_short(v)}" for k, v in observed.items() if not isinstance(v, (dict, list))]
    return ", ".join(scalars[:4])


# Evidence keys shown after the text of an example, in this order.
EVIDENCE = ("reason", "token", "rows", "purity", "coverage", "likely_label", "self_confidence", "similarity", "matches")


def _example(example: dict) -> str:
    """One example as a line: where it is, its text, and its evidence."""
    if "row" not in example:  # a per-class or per-column example
        return ", ".join(f"{k}={_short(v)}" for k, v in example.items())
    where = ", ".join(f"{k} {example[k]}" for k in ("split", "label") if example.get(k) is not None)
    text = str(example.get("text", ""))[:60]
    evidence = ", ".join(f"{k} {_short(example[k])}" for k in EVIDENCE if example.get(k) not in (None, []))
    return f"row {example['row']} ({where}): {text!r}" + (f"; {evidence}" if evidence else "")


def _dropped(dropped: dict) -> str:
    return ", ".join(f"{rows} {kind}" for kind, rows in dropped.items())


def _short(value: object) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def format_summary(summary: dict) -> str:
    """The terminal summary of a run: audit verdict, depth table, decision, registered model."""
    if summary.get("skipped"):
        return f"Skipped: {summary['reason']}."
    audit = summary["audit"]
    verdict = "passed" if audit["success"] else ("BLOCKED" if audit["blocking_failures"] else "passed with warnings")
    lines = [f"Audit: {verdict}" + (f" (warnings: {', '.join(audit['warnings'])})" if audit["warnings"] else "")]
    if audit["blocking_failures"]:
        lines.append(f"Blocking checks: {', '.join(audit['blocking_failures'])}")
    lines += audit_lines(audit) if "checks" in audit else []
    if summary.get("candidates"):
        header, rows = candidate_rows(summary["candidates"])
        widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]
        lines.append("")
        for cells in [header, *rows]:
            lines.append("  ".join(cell.rjust(width) for cell, width in zip(cells, widths, strict=True)))
    if summary.get("selected_depth") is not None:
        lines += ["", f"Decision: {summary['rule']['reason']}."]
        if summary.get("halving"):
            lines.append(halving_sentence(summary["halving"]))
        model = summary["model"]
        promotion = (
            "promoted to champion"
            if summary["promoted"]
            else f"not promoted; champion stays version {summary['champion_version']}"
        )
        lines.append(f"Registered {model['uri']} as challenger, {promotion} ({summary.get('promotion', '')}).")
    lines.append(f"MLflow run: {summary['mlflow_run_id']}  data hash: {summary['data_hash']}")
    return "\n".join(lines)


def halving_sentence(halving: dict) -> str:
    """What successive halving did and what it saved, in one sentence."""
    rungs = "; ".join(
        f"after {rung['epochs']} epochs kept depths {', '.join(map(str, rung['kept']))} "
        f"of {', '.join(map(str, rung['depths']))}"
        for rung in halving["rungs"]
    )
    saved = ""
    if "saved_fraction" in halving:
        saved = (
            f"; {halving['train_seconds']:.0f} s of training instead of about "
            f"{halving['full_grid_train_seconds']:.0f} s for the full grid ({halving['saved_fraction']:.0%} saved)"
        )
    return f"Successive halving: {rungs}{saved}."


def _markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def audit_markdown(report: dict) -> str:
    """The audit for the Prefect UI: a table of checks and verdicts, then the top examples of each failed check."""
    rows = [
        [check["name"], check["category"], _verdict(check), _cell(headline(check))] for check in report["checks"]
    ]
    status = "passed" if report["success"] else "failed"
    parts = [f"# Data audit: {status}", _markdown_table(["check", "category", "verdict", "headline"], rows)]
    if report.get("dropped"):
        parts.append(f"Rows dropped before the audit: {_dropped(report['dropped'])}.")
    for check in report["checks"]:
        if check["success"] or not check["examples"]:
            continue
        examples = check["examples"][:EXAMPLES_SHOWN]
        header = list(dict.fromkeys(key for example in examples for key in example))
        table = [[_cell(_short(example.get(key, ""))) for key in header] for example in examples]
        parts += [f"## {check['name']} ({_verdict(check)})", _markdown_table(header, table)]
    return "\n\n".join(parts)


def _verdict(check: dict) -> str:
    return "pass" if check["success"] else ("**blocks**" if check["severity"] == "error" else "warning")


def _cell(value: object, width: int = 80) -> str:
    """A markdown table cell: one line, pipes escaped, long values cut."""
    text = " ".join(str(value).split()).replace("|", "\\|")
    return text if len(text) <= width else text[: width - 3] + "..."


def decision_markdown(result: dict, plots: list[Path] = ()) -> str:
    """The sweep table, the decision and its plots (inlined as data URIs), for the Prefect UI."""
    header, rows = candidate_rows(result["candidates"])
    model = result["model"]
    images = "".join(
        f"\n\n![{path.stem}](data:image/png;base64,{base64.b64encode(path.read_bytes()).decode()})" for path in plots
    )
    halving = f"\n\n{halving_sentence(result['halving'])}" if result.get("halving") else ""
    return (
        f"# Depth decision: {result['selected_depth']}\n\n{result['rule']['reason']}{halving}\n\n"
        + _markdown_table(header, rows)
        + f"\n\nRegistered `{model['uri']}`; promoted to champion: {result['promoted']}"
        + f" ({result.get('promotion', '')})."
        + images
    )
