from __future__ import annotations

import pandas as pd

from depthfinder.expectations.audit.checks.conflicting_labels import ConflictingLabelsCheck
from depthfinder.expectations.audit.checks.cross_split_duplicates import CrossSplitDuplicatesCheck
from depthfinder.expectations.audit.checks.cross_split_near_duplicates import CrossSplitNearDuplicatesCheck
from depthfinder.expectations.audit.checks.empty_text import EmptyTextCheck
from depthfinder.expectations.audit.config import AuditConfig
from depthfinder.expectations.audit.drops import drop_rows
from depthfinder.expectations.audit.run import run_audit
from tests.expectations.planting import lone_rows, loner_rows, topics_table


def planted_table() -> tuple[pd.DataFrame, dict[str, list[int]]]:
    """Topics with an empty text, a label conflict, an exact leak and a near-duplicate leak planted."""
    table = topics_table()
    empty, conflict_a, conflict_b = lone_rows(table, "val", 3)
    train_a, train_b = loner_rows(table, "train", 2)
    exact_copy, near_copy = loner_rows(table, "test", 2)
    table.loc[empty, "text"] = " ... "
    table.loc[conflict_b, ["text", "label"]] = [table.loc[conflict_a, "text"], "cooking"]
    table.loc[conflict_a, "label"] = "sports"
    table.loc[exact_copy, ["text", "label"]] = [table.loc[train_a, "text"] + "!", table.loc[train_a, "label"]]
    table.loc[near_copy, ["text", "label"]] = [table.loc[train_b, "text"] + " ok", table.loc[train_b, "label"]]
    rows = {"empty": [empty], "conflicts": [conflict_a, conflict_b], "leaks": [exact_copy, near_copy]}
    return table, rows


def test_each_kind_drops_exactly_its_rows_and_counts_them() -> None:
    table, rows = planted_table()
    kept, counts = drop_rows(table, AuditConfig(drop=["leaks", "conflicts", "empty"]))
    assert counts == {"empty": 1, "conflicts": 2, "leaks": 2}
    assert sorted(set(table.index) - set(kept.index)) == sorted(sum(rows.values(), []))
    assert kept["row"].equals(table.loc[kept.index, "row"])  # input positions survive for the evidence
    checks = [EmptyTextCheck, ConflictingLabelsCheck, CrossSplitDuplicatesCheck, CrossSplitNearDuplicatesCheck]
    assert run_audit(table, AuditConfig(), checks=checks).blocking_failures != []
    assert run_audit(kept, AuditConfig(), checks=checks).success


def test_only_the_named_kinds_are_dropped() -> None:
    table, rows = planted_table()
    kept, counts = drop_rows(table, AuditConfig(drop=["conflicts"]))
    assert counts == {"conflicts": 2} and sorted(set(table.index) - set(kept.index)) == rows["conflicts"]
    assert drop_rows(table, AuditConfig())[1] == {}
