"""What people read: the terminal summary and the Prefect markdown artifacts."""

from __future__ import annotations

import base64
from pathlib import Path

EXAMPLES_SHOWN = 3
COLUMNS = (
    ("depth", "depth", "{}"),
    ("seed", "seed", "{}"),
    ("status", "status", "{}"),
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
    """One line per check: verdict, name and its headline figures."""
    lines = []
    for check in report["checks"]:
        verdict = "ok  " if check["success"] else ("FAIL" if check["severity"] == "error" else "warn")
        observed = ", ".join(
            f"{k}={_short(v)}" for k, v in check["observed"].items() if not isinstance(v, (dict, list))
        )
        lines.append(f"  {verdict} {check['name']:<28} {observed}")
        if not check["success"]:
            lines += [f"         {_example(example)}" for example in check["examples"][:EXAMPLES_SHOWN]]
    return lines


def _example(example: dict) -> str:
    where = ", ".join(f"{k} {example[k]}" for k in ("split", "label") if k in example)
    text = str(example.get("text", ""))[:60]
    matches = f" matches rows {example['matches']}" if example.get("matches") else ""
    return f"row {example.get('row', '?')} ({where}): {text!r}{matches}"


def _short(value: object) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def format_summary(summary: dict) -> str:
    """The terminal summary of a run: audit verdict, depth table, decision, registered model."""
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
        model = summary["model"]
        promotion = (
            "promoted to champion"
            if summary["promoted"]
            else f"not promoted; champion stays version {summary['champion_version']}"
        )
        lines.append(f"Registered {model['uri']} as challenger, {promotion} ({summary.get('promotion', '')}).")
    lines.append(f"MLflow run: {summary['mlflow_run_id']}  data hash: {summary['data_hash']}")
    return "\n".join(lines)


def _markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def audit_markdown(report: dict) -> str:
    """The audit as a markdown table of checks with their first example rows."""
    rows = []
    for check in report["checks"]:
        verdict = "pass" if check["success"] else ("**blocks**" if check["severity"] == "error" else "warning")
        first = check["examples"][0] if check["examples"] else {}
        example = str(first.get("text", ""))[:60].replace("|", "\\|")
        rows.append([check["name"], check["category"], verdict, f"row {first['row']}: {example}" if first else ""])
    status = "passed" if report["success"] else "failed"
    return f"# Data audit: {status}\n\n" + _markdown_table(["check", "category", "verdict", "first example"], rows)


def decision_markdown(result: dict, plots: list[Path] = ()) -> str:
    """The sweep table, the decision and its plots (inlined as data URIs), for the Prefect UI."""
    header, rows = candidate_rows(result["candidates"])
    model = result["model"]
    images = "".join(
        f"\n\n![{path.stem}](data:image/png;base64,{base64.b64encode(path.read_bytes()).decode()})" for path in plots
    )
    return (
        f"# Depth decision: {result['selected_depth']}\n\n{result['rule']['reason']}\n\n"
        + _markdown_table(header, rows)
        + f"\n\nRegistered `{model['uri']}`; promoted to champion: {result['promoted']}"
        + f" ({result.get('promotion', '')})."
        + images
    )
