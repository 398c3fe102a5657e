"""A short terminal summary of an audit report."""

from __future__ import annotations

from typing import Any

from expectations.audit.run import AuditReport, CheckResult


def format_audit(report: AuditReport) -> str:
    """One header line, then one line per check: verdict, severity, name, key figure."""
    verdict = "PASSED" if report.success else "BLOCKED by " + ", ".join(report.blocking_failures)
    warned = f"; warnings: {', '.join(report.warnings)}" if report.warnings else ""
    lines = [f"audit {verdict}{warned} ({report.rows} rows)"]
    width = max((len(check.name) for check in report.checks), default=0)
    for check in report.checks:
        mark = "ok  " if check.success else ("FAIL" if check.severity == "error" else "WARN")
        lines.append(f"  {mark}  {check.name:<{width}}  {_key_figure(check)}".rstrip())
    return "\n".join(lines)


def _key_figure(check: CheckResult) -> str:
    """The one observed figure that says most about a check."""
    observed: dict[str, Any] = check.observed
    if "not_run" in observed:
        return f"not run: {observed['not_run']}"
    if "rows" in observed:
        return f"{observed['rows']} rows ({100 * observed.get('fraction', 0):.2f} %)"
    if "ratio" in observed and observed["ratio"] is not None:
        return f"majority/minority {observed['ratio']:.1f}, minority share {100 * observed['minority_share']:.1f} %"
    return ""
