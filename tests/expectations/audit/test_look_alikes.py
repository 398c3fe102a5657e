"""Texts and labels that differ only by Unicode form or invisible characters are the same to the audit."""

from __future__ import annotations

import unicodedata

import pandas as pd
import pytest

from depthfinder.expectations.audit.checks.conflicting_labels import ConflictingLabelsCheck
from depthfinder.expectations.audit.checks.cross_split_duplicates import CrossSplitDuplicatesCheck
from depthfinder.expectations.audit.checks.schema import SchemaCheck
from depthfinder.expectations.audit.config import AuditConfig
from depthfinder.expectations.audit.run import run_audit
from tests.expectations.planting import lone_rows, topics_table

CHECKS = [SchemaCheck, CrossSplitDuplicatesCheck, ConflictingLabelsCheck]


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return topics_table(1500)


def with_accent(text: str) -> str:
    """`text` with a word that NFC and NFD spell differently."""
    return f"{text} café"


def test_look_alike_copies_in_other_splits_are_cross_split_duplicates(table: pd.DataFrame) -> None:
    table = table.copy()
    (train,), (val,), (test,) = (lone_rows(table, split, 1) for split in ("train", "val", "test"))
    text = with_accent(table.loc[train, "text"])
    table.loc[[train, val, test], "text"] = [text, unicodedata.normalize("NFD", text), text.replace(" ", " \u200b", 1)]
    table.loc[[val, test], "label"] = table.loc[train, "label"]

    check = run_audit(table, AuditConfig(), checks=CHECKS).check("cross_split_duplicates")

    assert not check.success and sorted(check.failing_rows) == sorted([train, val, test])
    assert check.observed["groups"] == 1


def test_look_alike_copies_with_another_label_are_conflicting_labels(table: pd.DataFrame) -> None:
    table = table.copy()
    first, second = lone_rows(table, "train", 2)
    text = with_accent(table.loc[first, "text"])
    table.loc[[first, second], "text"] = [text, "\ufeff" + unicodedata.normalize("NFD", text) + "\u2060"]
    table.loc[second, "label"] = sorted(set(table["label"]) - {table.loc[first, "label"]})[0]

    report = run_audit(table, AuditConfig(), checks=CHECKS)

    check = report.check("conflicting_labels")
    assert not check.success and sorted(check.failing_rows) == sorted([first, second])
    assert report.check("cross_split_duplicates").success  # both in train


def test_a_label_of_invisible_characters_fails_the_schema_as_an_empty_label(table: pd.DataFrame) -> None:
    table = table.copy()
    blank, invisible = lone_rows(table, "train", 2)
    table.loc[[blank, invisible], "label"] = ["  ", "\u200b\ufeff"]

    report = run_audit(table, AuditConfig(), checks=CHECKS)

    check = report.check("schema")
    assert not check.success and check.severity == "error"
    assert sorted(check.failing_rows) == sorted([blank, invisible])
    assert report.blocking_failures == ["schema"]
