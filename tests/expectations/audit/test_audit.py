from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from depthfinder.expectations.audit.checks.empty_text import EmptyTextCheck
from depthfinder.expectations.audit.checks.schema import SchemaCheck
from depthfinder.expectations.audit.config import AuditConfig
from depthfinder.expectations.audit.registry import REGISTRY, CheckRegistry
from depthfinder.expectations.audit.report import audit_lines
from depthfinder.expectations.audit.run import AuditReport, run_audit
from depthfinder.expectations.table.config import DataConfig
from depthfinder.expectations.table.load import load_table
from depthfinder.expectations.table.split import assign_splits
from tests.expectations.planting import lone_rows, topics_table

CHECK_KEYS = {"name", "category", "severity", "success", "headline", "observed", "examples", "evidence"}


@pytest.fixture(scope="module")
def planted() -> tuple[AuditReport, dict[str, list[int]]]:
    """One audit over a clean table with a leak, a label conflict and two empty texts planted."""
    table = topics_table()
    leak_train, conflict_a, conflict_b = lone_rows(table, "train", 3)
    (leak_test,) = lone_rows(table, "test", 1)
    empty = lone_rows(table, "val", 2)
    # The same text in test, reworded by case, spacing and punctuation only; same label.
    table.loc[leak_test, "text"] = "  " + table.loc[leak_train, "text"].upper() + " !!"
    table.loc[leak_test, "label"] = table.loc[leak_train, "label"]
    # The same text twice in train with two labels.
    table.loc[conflict_b, "text"] = table.loc[conflict_a, "text"].lower()
    other_labels = sorted(set(table["label"]) - {table.loc[conflict_a, "label"]})
    table.loc[conflict_b, "label"] = other_labels[0]
    table.loc[empty, "text"] = ["   ", "?!... --"]
    rows = {"leak": [leak_train, leak_test], "conflict": [conflict_a, conflict_b], "empty": empty}
    return run_audit(table, AuditConfig()), rows


def test_planted_cross_split_duplicate_found_in_exactly_its_rows(planted) -> None:
    report, rows = planted
    check = report.check("cross_split_duplicates")
    assert not check.success and check.severity == "error"
    assert sorted(check.failing_rows) == sorted(rows["leak"])
    assert check.observed["rows"] == 2 and check.observed["groups"] == 1
    assert check.observed["fraction"] == pytest.approx(2 / 3000, abs=1e-6)
    (example,) = check.examples  # the copy the model would be evaluated on, matched to its training copy
    assert example["row"] == rows["leak"][1] and example["split"] == "test"
    assert example["matches"] == [rows["leak"][0]] and example["match_splits"] == ["train"]


def test_planted_label_conflict_found_exactly(planted) -> None:
    report, rows = planted
    check = report.check("conflicting_labels")
    assert not check.success and check.severity == "error"
    assert sorted(check.failing_rows) == sorted(rows["conflict"])
    (example,) = check.examples
    assert example["row"] == rows["conflict"][0] and example["matches"] == [rows["conflict"][1]]
    assert example["match_labels"] != [example["label"]]


def test_planted_empty_texts_found_exactly_and_only_warn(planted) -> None:
    report, rows = planted
    check = report.check("empty_text")
    assert not check.success and check.severity == "warning"
    assert sorted(check.failing_rows) == sorted(rows["empty"])
    assert [example["text"] for example in check.examples] == ["   ", "?!... --"]
    assert "empty_text" in report.warnings and "empty_text" not in report.blocking_failures


def test_planted_report_blocks_on_the_errors_only(planted) -> None:
    report, _ = planted
    assert not report.success
    assert report.blocking_failures == ["cross_split_duplicates", "conflicting_labels"]
    assert report.check("schema").success and report.check("class_imbalance").success
    assert report.blocking(strict=True) == ["empty_text", "cross_split_duplicates", "conflicting_labels"]


def test_report_json_shape(planted) -> None:
    report, _ = planted
    document = json.loads(json.dumps(report.to_dict()))
    assert set(document) == {"success", "blocking_failures", "warnings", "checks", "dropped", "normalized_labels"}
    assert document["normalized_labels"] == {"rows": 0, "spellings": 0, "examples": []}
    assert [check["name"] for check in document["checks"]] == REGISTRY.names()
    assert all(set(check) == CHECK_KEYS for check in document["checks"])
    assert report.blocking_failures[:2] == ["cross_split_duplicates", "conflicting_labels"]
    assert re.search(r"FAIL cross_split_duplicates +2 rows", "\n".join(audit_lines(report)))


def test_class_missing_from_test_blocks() -> None:
    table = topics_table()
    table = table[~((table["label"] == "travel") & (table["split"] == "test"))]
    report = run_audit(table, AuditConfig())
    check = report.check("class_imbalance")
    assert report.blocking_failures == ["class_imbalance"] and check.severity == "error"
    assert [example["label"] for example in check.examples] == ["travel"]
    assert check.examples[0]["test_rows"] == 0 and check.observed["test_counts"]["travel"] == 0


def test_imbalanced_but_evaluable_only_warns() -> None:
    table = topics_table(6000)
    travel = table.index[table["label"] == "travel"]
    table = table.drop(travel[120:])  # 2400 sports vs 120 travel: ratio 20
    report = run_audit(table, AuditConfig())
    check = report.check("class_imbalance")
    assert report.success and report.warnings == ["class_imbalance"] and report.blocking_failures == []
    assert not check.success and check.severity == "warning"
    assert check.observed["ratio"] == pytest.approx(20.0)
    assert check.observed["counts"]["travel"] == 120
    assert [example["label"] for example in check.examples] == ["travel"]
    assert report.blocking(strict=True) == ["class_imbalance"]
    strict = run_audit(table, AuditConfig(strict=True))
    assert not strict.success and strict.blocking_failures == [] and strict.warnings == ["class_imbalance"]


def test_empty_texts_above_the_threshold_block() -> None:
    table = pd.DataFrame(
        {"text": ["good", "", "  ", "bad"], "label": ["a", "b", "a", "b"], "row": [10, 11, 12, 13]}, index=[9, 5, 7, 3]
    )
    report = run_audit(table, AuditConfig(max_empty_text_fraction=0.25), checks=[EmptyTextCheck])
    assert report.blocking_failures == ["empty_text"] and report.check("empty_text").severity == "error"
    assert report.check("empty_text").failing_rows == [11, 12]  # the `row` column, not the index
    assert [example["row"] for example in report.check("empty_text").examples] == [11, 12]


def test_schema_problems_are_reported_not_raised() -> None:
    table = pd.DataFrame({"text": ["a", 3, "c"], "label": ["x", None, " "]})
    report = run_audit(table, AuditConfig())
    schema = report.check("schema")
    assert not schema.success and schema.observed["missing_columns"] == ["split"]
    assert schema.failing_rows == [1, 2]
    assert report.check("cross_split_duplicates").observed["not_run"] == "missing column(s): split"
    assert "schema" in report.blocking_failures


def test_registry_rejects_a_duplicate_name() -> None:
    with pytest.raises(ValueError, match="duplicate check name 'schema'"):
        CheckRegistry([SchemaCheck, SchemaCheck])


def test_builtin_topics_is_clean() -> None:
    report = run_audit(topics_table(), AuditConfig())
    assert report.success and report.blocking(strict=False) == []


@pytest.mark.parametrize("name", ["uci_sentiment_sentences.csv", "sms_spam.csv"])
def test_real_data_after_assign_splits_has_no_blocking_failure(shared_data: Path, name: str) -> None:
    table = assign_splits(load_table(DataConfig(path=shared_data / name)), 0.1, 0.1, seed=1)
    report = run_audit(table, AuditConfig())
    shown = "\n".join(audit_lines(report))
    assert report.blocking_failures == [], shown
    for name in ("label_in_text", "label_giveaway_columns", "cross_split_duplicates"):
        assert report.check(name).success, shown  # exact duplicates are grouped, not leaked
    # Near-duplicates share a split by chance, not by rule (split.py): a few straddle, far below the error line.
    near = report.check("cross_split_near_duplicates")
    assert near.observed["evaluation_fraction"] < 0.5 * AuditConfig().max_near_duplicate_fraction, shown
    assert report.check("label_in_text").observed["tokens"] == []


class _BrokenCheck(SchemaCheck):
    name = "broken"

    def plan(self, table: pd.DataFrame, config: AuditConfig):  # type: ignore[override]
        raise RuntimeError("boom")


def test_a_check_that_raises_fails_without_hiding_the_others() -> None:
    table = pd.DataFrame({"text": ["good", "fine"], "label": ["a", "b"]})
    report = run_audit(table, AuditConfig(), checks=[_BrokenCheck, EmptyTextCheck])
    assert report.blocking_failures == ["broken"]
    assert report.check("broken").observed == {"not_run": "the check raised RuntimeError: boom"}
    assert report.check("empty_text").success
