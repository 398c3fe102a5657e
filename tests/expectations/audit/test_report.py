"""The audit report: its JSON form and how it reads in a terminal and in the Prefect UI."""

from __future__ import annotations

from depthfinder.expectations.audit.checks.cross_split_duplicates import CrossSplitDuplicatesCheck
from depthfinder.expectations.audit.checks.schema import SchemaCheck
from depthfinder.expectations.audit.report import FIGURE_WIDTH, AuditReport, audit_lines, audit_markdown
from depthfinder.expectations.table.labels import LabelNormalization


def test_the_markdown_summary_shows_verdicts_and_top_examples() -> None:
    report = AuditReport.from_dict({
        "success": False, "blocking_failures": ["cross_split_duplicates"], "warnings": [],
        "dropped": {"conflicts": 3},
        "checks": [
            {"name": "schema", "category": "schema", "severity": "error", "success": True,
             "headline": SchemaCheck.headline({"rows": 0, "fraction": 0.0}), "observed": {"rows": 0, "fraction": 0.0},
             "examples": []},
            {"name": "cross_split_duplicates", "category": "leakage", "severity": "error", "success": False,
             "headline": CrossSplitDuplicatesCheck.headline({"rows": 4, "fraction": 0.002, "groups": 2}),
             "observed": {"rows": 4, "fraction": 0.002, "groups": 2}, "evidence": ["matches"],
             "examples": [{"row": 17, "text": "free | entry\nnow", "split": "test", "matches": [3021]},
                          {"row": 18, "text": "x" * 200, "split": "val", "matches": [5]}]},
        ],
    })
    markdown = audit_markdown(report)
    assert markdown.startswith("# Data audit: blocked")
    assert "| cross_split_duplicates | leakage | **blocks** | 4 rows (0.20 %) |" in markdown
    assert "Rows dropped before the audit: 3 conflicts." in markdown
    assert "## cross_split_duplicates (**blocks**)" in markdown
    assert "| 17 | free \\| entry now | test | [3021] |" in markdown  # one line per example, pipes escaped
    assert "x" * 77 + "..." in markdown and "## schema" not in markdown

    lines = audit_lines(report)
    assert lines[1] == "  FAIL cross_split_duplicates       4 rows (0.20 %)"
    assert lines[2] == "         row 17 (split test): 'free | entry\\nnow'; matches [3021]"
    assert lines[-1] == "  dropped before the audit: 3 conflicts"
    assert AuditReport.from_dict(report.to_dict()) == report


def test_labels_normalised_when_loaded_are_shown_with_examples_and_read_back() -> None:
    report = AuditReport.from_dict({
        "success": True, "blocking_failures": [], "warnings": [], "checks": [],
        "normalized_labels": {"rows": 7, "spellings": 2, "examples": [
            {"row": 3, "raw": "'ne\\u0301gatif'", "label": "négatif"},
            {"row": 9, "raw": "'a|b\\u200b'", "label": "a|b"}]},
    })

    assert audit_lines(report) == [
        "  labels normalised when loaded (Unicode NFC, invisible characters, white space): 7 rows, 2 spellings, "
        "e.g. row 3 'ne\\u0301gatif' -> 'négatif'; row 9 'a|b\\u200b' -> 'a|b'"]
    assert ("Labels normalised when loaded (Unicode NFC, invisible characters, white space): 7 rows, 2 spellings, "
            "e.g. row 3 'ne\\u0301gatif' -> 'négatif'; row 9 'a\\|b\\u200b' -> 'a\\|b'.") in audit_markdown(report)
    assert AuditReport.from_dict(report.to_dict()) == report
    clean = report.model_copy(update={"normalized_labels": LabelNormalization()})
    assert audit_lines(clean) == [] and "normalised" not in audit_markdown(clean)


def test_a_headline_too_long_for_a_prefect_table_cell_is_whole_below_the_table() -> None:
    """The Prefect UI never wraps a table cell: what passes the page's edge is cut off, so the checks table keeps
    a headline of at most FIGURE_WIDTH characters and a longer one is a line below it."""
    from depthfinder.expectations.audit.checks.label_giveaway_columns import LabelGiveawayColumnsCheck

    observed = {"columns": [{"column": "source", "reading": "as is", "lift": 0.19}]}
    headline = LabelGiveawayColumnsCheck.headline(observed)
    report = AuditReport.from_dict({
        "success": True, "blocking_failures": [], "warnings": [], "checks": [
            {"name": "label_giveaway_columns", "category": "leakage", "severity": "error", "success": True,
             "headline": headline, "observed": observed, "examples": []}]})

    markdown = audit_markdown(report)

    assert len(headline) > FIGURE_WIDTH
    assert "| label_giveaway_columns | leakage | pass | (below the table) |" in markdown
    assert f"**label_giveaway_columns**: {headline}" in markdown.split("\n\n")


def test_the_headline_names_what_blocked_first_and_the_warnings_as_warnings() -> None:
    def report(success: bool, blocking: list[str], warnings: list[str]) -> AuditReport:
        return AuditReport.from_dict({"success": success, "blocking_failures": blocking, "warnings": warnings,
                                      "checks": []})

    blocked = report(False, ["empty_text"], ["cross_split_near_duplicates", "class_imbalance"])
    assert blocked.headline == "blocked by empty_text; warnings: cross_split_near_duplicates, class_imbalance"
    assert blocked.blocked_by == ["empty_text"]
    assert report(False, [], ["class_imbalance"]).headline == "blocked by class_imbalance"  # --strict: warnings block
    assert report(True, [], ["class_imbalance"]).headline == "passed with warnings: class_imbalance"
    assert report(True, [], []).headline == "passed" and report(True, [], []).blocked_by == []
