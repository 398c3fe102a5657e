"""The audit report: one record per check and the verdict, and how both read in a terminal and in Markdown.

Frozen pydantic records with a JSON form (`to_dict`, DESIGN's report shape, and `from_dict`).
Each check owns its presentation: the report stores the headline the check wrote and the
keys of its evidence, so nothing here knows a check by name.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from depthfinder.expectations.table.labels import LabelNormalization
from depthfinder.expectations.table.shape import PAIR_COLUMN
from depthfinder.runtime.records import Record

# The audit's categories, then those of the comparison with the champion's table (expectations/changes).
Category = Literal["schema", "leakage", "noise", "imbalance", "text", "rows", "labels", "drift", "decay"]
Severity = Literal["error", "warning"]
EXAMPLES_SHOWN = 3
EXAMPLE_WIDTH = 100  # characters of an example's value in a table (its text: whole in the suspect-rows CSV)
FLAGGED_ROWS = "audit/flagged_rows.csv"  # the parent run's artifact with every row a check flagged
FOREIGN_ROWS = "changes/foreign_rows.csv"  # ... and with every row added the comparison flagged foreign
SUSPECT_COLUMNS = ("check", "line", "row", "text", "label", "likely_label")
PAIR_SUSPECT_COLUMNS = ("check", "line", "row", "text", PAIR_COLUMN, "label", "likely_label")  # of a pairs table
# How a suspect row is located, said wherever the rows are listed.
LINES = ("line: the row's line in the input file, 1-based with the header line counted (the first data row of a CSV "
         "is line 2, of a JSON-lines file line 1; a quoted text that spans lines moves the rows after it down; none "
         "for Parquet or a built-in dataset); row: its 0-based position among the data rows")
NORMALIZED = "labels normalised when loaded (Unicode NFC, invisible characters, white space)"
# The audit's verdict, spelled one way wherever it is shown: titles, artifact descriptions, tags, cards, the terminal.
PASSED, PASSED_WITH_WARNINGS, BLOCKED = "passed", "passed with warnings", "blocked"


class CheckResult(Record):
    """The outcome of one check: verdict, severity, observed figures and example rows."""

    name: str = Field(description="The check's stable name, e.g. cross_split_duplicates.")
    category: Category = Field(
        description="schema, leakage, noise, imbalance or text (audit); rows, labels, drift or decay (changes)."
    )
    severity: Severity = Field(description="error (blocks training) or warning (reported).")
    success: bool = Field(description="Whether the check passed.")
    headline: str = Field("", description="The figure that says most about the check, as the check phrases it.")
    observed: dict[str, Any] = Field(
        description="Observed values; where the check counts rows, `rows` and `fraction` of the table."
    )
    examples: list[dict[str, Any]] = Field(description="A handful of the rows (or classes, columns) at fault.")
    evidence: list[str] = Field([], description="Keys of an example that are evidence (shown after its text).")
    description: str = Field("", exclude=True)
    # `row` values (input-file positions) of every failing row; not part of the JSON report.
    failing_rows: list[int] = Field([], exclude=True, repr=False)
    # Every row the check suspects (row, text, label, likely_label where known): the suspect-rows CSV's source.
    suspects: list[dict[str, Any]] = Field([], exclude=True, repr=False)
    seconds: float = Field(0.0, exclude=True)  # time to plan and validate (for benchmarks)


class AuditReport(Record):
    """All check results, and what blocks training.

    `blocking_failures` names the failed error-level checks and `warnings` the failed
    warning-level ones; `success` is False when anything blocks under the `strict` the
    audit ran with (so strict with only warnings: success False, blocking_failures []).
    """

    success: bool = Field(description="Nothing blocks training (under --strict, warnings block too).")
    blocking_failures: list[str] = Field(description="Failed error-level checks.")
    warnings: list[str] = Field(description="Failed warning-level checks.")
    checks: list[CheckResult] = Field(description="Every check, in the registry's order.")
    dropped: dict[str, int] = Field({}, description="Rows removed before the audit (audit.drop), per kind.")
    normalized_labels: LabelNormalization = Field(
        LabelNormalization(), description="Labels written otherwise than as their class (another Unicode form, "
        "invisible characters, surrounding white space), made one class when the table was loaded."
    )
    rows: int = Field(0, exclude=True)
    prepare_seconds: float = Field(0.0, exclude=True)  # normalising and hashing the texts, shared by the checks
    docs_seconds: float = Field(0.0, exclude=True)  # building the Data Docs
    data_docs: str | None = Field(None, exclude=True)  # index.html of the GX Data Docs, when built

    @classmethod
    def from_checks(cls, checks: list[CheckResult], rows: int, strict: bool = False) -> AuditReport:
        """Gather check results; success means nothing blocks under `strict`."""
        failed = [check for check in checks if not check.success]
        return cls(
            success=not [check for check in failed if check.severity == "error" or strict],
            blocking_failures=[check.name for check in failed if check.severity == "error"],
            warnings=[check.name for check in failed if check.severity == "warning"],
            checks=checks,
            rows=rows,
        )

    @property
    def verdict(self) -> str:
        """PASSED, PASSED_WITH_WARNINGS or BLOCKED (under --strict a warning blocks too)."""
        if not self.success:
            return BLOCKED
        return PASSED_WITH_WARNINGS if self.warnings else PASSED

    @property
    def blocked_by(self) -> list[str]:
        """The checks that block training: the failed error-level ones, else (under --strict) the failed warnings;
        none when it passed."""
        return [] if self.success else self.blocking_failures or self.warnings

    @property
    def headline(self) -> str:
        """The verdict in a line, the checks that blocked first and those that only warn as warnings: `blocked by
        empty_text; warnings: cross_split_near_duplicates`, `passed with warnings: class_imbalance`."""
        if self.success:
            return f"{PASSED_WITH_WARNINGS}: {', '.join(self.warnings)}" if self.warnings else PASSED
        warned = [name for name in self.warnings if name not in self.blocked_by]
        return f"{BLOCKED} by {', '.join(self.blocked_by)}" + (f"; warnings: {', '.join(warned)}" if warned else "")

    def blocking(self, strict: bool) -> list[str]:
        """Names of failed error-level checks, plus failed warning-level ones when `strict`."""
        return [check.name for check in self.checks if not check.success and (check.severity == "error" or strict)]

    def check(self, name: str) -> CheckResult:
        """The result of the check called `name`."""
        for check in self.checks:
            if check.name == name:
                return check
        raise KeyError(f"no check named {name!r} in this report; checks: {', '.join(c.name for c in self.checks)}")


def audit_lines(report: AuditReport) -> list[str]:
    """One line per check (verdict, name, headline), its first examples when it failed, and dropped rows."""
    lines = []
    for check in report.checks:
        verdict = "ok  " if check.success else ("FAIL" if check.severity == "error" else "warn")
        lines.append(f"  {verdict} {check.name:<28} {check.headline}".rstrip())
        if not check.success:
            shown = check.examples[:EXAMPLES_SHOWN]
            lines += [f"         {example_line(example, check.evidence)}" for example in shown]
    if report.dropped:
        lines.append(f"  dropped before the audit: {dropped_text(report.dropped)}")
    if report.normalized_labels.rows:
        lines.append(f"  {NORMALIZED}: {normalized_text(report.normalized_labels)}")
    return lines


def example_line(example: dict[str, Any], evidence: list[str]) -> str:
    """One example as a line: where it is, its text, and its evidence."""
    if "row" not in example:  # a per-class or per-column example
        return ", ".join(f"{k}={short(v)}" for k, v in example.items())
    where = ", ".join(f"{k} {example[k]}" for k in ("split", "label") if example.get(k) is not None)
    text = str(example.get("text", ""))[:60]
    shown = ", ".join(f"{k} {short(example[k])}" for k in evidence if example.get(k) not in (None, []))
    return f"row {example['row']} ({where}): {text!r}" + (f"; {shown}" if shown else "")


def audit_markdown(report: AuditReport) -> str:
    """The audit for the Prefect UI: a table of checks and verdicts (a long headline on a line below it), then the
    top examples of each failed check."""
    headlines, below = figure_cells([check.name for check in report.checks], [c.headline for c in report.checks])
    rows = [[check.name, check.category, _verdict(check), headline]
            for check, headline in zip(report.checks, headlines, strict=True)]
    parts = [f"# Data audit: {report.verdict}", markdown_table(["check", "category", "verdict", "headline"], rows),
             *below]
    if report.dropped:
        parts.append(f"Rows dropped before the audit: {dropped_text(report.dropped)}.")
    if report.normalized_labels.rows:
        phrase = NORMALIZED[0].upper() + NORMALIZED[1:]
        parts.append(f"{phrase}: {cell(normalized_text(report.normalized_labels), width=400)}.")
    for check in report.checks:
        if check.success or not check.examples:
            continue
        parts += [f"## {check.name} ({_verdict(check)})", examples_table(check)]
        flagged = len(check.failing_rows) or check.observed.get("rows", 0)
        shown = min(len(check.examples), EXAMPLES_SHOWN)
        if flagged > shown:
            parts.append(f"{shown} of {flagged} flagged rows shown; every one is in the `flagged-rows` artifact and "
                         f"in `{FLAGGED_ROWS}` on the MLflow parent run ({LINES}).")
    return "\n\n".join(parts)


def suspect_rows(checks: list[CheckResult], first_line: int | None) -> list[dict[str, Any]]:
    """Every row the checks suspect, as SUSPECT_COLUMNS: its file line (`row + first_line`, the 1-based line of the
    file's first data row; None without lines), row, text (and a pair's second text), label and likely label where
    the check knows one."""
    rows = []
    for check in checks:
        for suspect in check.suspects:
            row = int(suspect["row"])
            rows.append({"check": check.name, "line": None if first_line is None else row + first_line, "row": row,
                         "text": suspect.get("text"), PAIR_COLUMN: suspect.get(PAIR_COLUMN),
                         "label": suspect.get("label"), "likely_label": suspect.get("likely_label")})
    return rows


def suspects_csv(rows: list[dict[str, Any]]) -> str:
    """The suspect rows as CSV (SUSPECT_COLUMNS, or PAIR_SUSPECT_COLUMNS where a row is a pair; empty fields where a
    value is unknown)."""
    import csv
    import io

    columns = PAIR_SUSPECT_COLUMNS if any(row.get(PAIR_COLUMN) is not None for row in rows) else SUSPECT_COLUMNS
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows({key: "" if row.get(key) is None else row[key] for key in columns} for row in rows)
    return out.getvalue()


def examples_table(check: CheckResult) -> str:
    """A failed check's first examples as a Markdown table, one column per key."""
    examples = check.examples[:EXAMPLES_SHOWN]
    header = list(dict.fromkeys(key for example in examples for key in example))
    return markdown_table(header, [[cell(short(example.get(key, "")), EXAMPLE_WIDTH) for key in header]
                                   for example in examples])


def dropped_text(dropped: dict[str, int]) -> str:
    return ", ".join(f"{rows} {kind}" for kind, rows in dropped.items())


def normalized_text(normalized: LabelNormalization) -> str:
    """How many labels were made one class when loaded, with the first examples."""
    shown = "; ".join(f"row {example.row} {example.raw} -> {example.label!r}"
                      for example in normalized.examples[:EXAMPLES_SHOWN])
    return f"{normalized.rows} rows, {normalized.spellings} spellings, e.g. {shown}"


def short(value: object) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


# The longest figure a table of checks keeps in its cell; a longer one is whole on a line below the table. The
# Prefect UI never wraps a table cell: what passes the page's edge is cut off (at 1600 px about 130 characters a
# row: name, verdict and an 80-character figure fit side by side).
FIGURE_WIDTH = 80


def figure_cells(names: list[str], figures: list[str]) -> tuple[list[str], list[str]]:
    """Each check's figure as its table cell, `(below the table)` where it is longer than FIGURE_WIDTH, and the
    lines that hold those whole (`**name**: figure`), for below the table."""
    cells = [cell(figure) for figure in figures]
    below = [f"**{name}**: {text}" for name, text in zip(names, cells, strict=True) if len(text) > FIGURE_WIDTH]
    return [text if len(text) <= FIGURE_WIDTH else "(below the table)" for text in cells], below


def cell(value: object, width: int | None = None) -> str:
    """A markdown table cell: one line, pipes escaped; never cut (the UIs wrap it) unless a `width` is given by
    design, where the whole value is one click away (an example's text: the suspect-rows CSV)."""
    text = " ".join(str(value).split()).replace("|", "\\|")
    return text if width is None or len(text) <= width else text[: width - 3] + "..."


def _verdict(check: CheckResult) -> str:
    return "pass" if check.success else ("**blocks**" if check.severity == "error" else "warning")
