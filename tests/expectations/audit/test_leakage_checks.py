"""Planted leaks found in exactly their rows: near-duplicates across splits, giveaway tokens and columns."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from depthfinder.expectations.audit.checks.cross_split_duplicates import CrossSplitDuplicatesCheck
from depthfinder.expectations.audit.checks.cross_split_near_duplicates import CrossSplitNearDuplicatesCheck
from depthfinder.expectations.audit.checks.label_giveaway_columns import LabelGiveawayColumnsCheck
from depthfinder.expectations.audit.checks.label_in_text import LabelInTextCheck
from depthfinder.expectations.audit.config import AuditConfig
from depthfinder.expectations.audit.run import run_audit
from depthfinder.expectations.table.normalize import normalize_text
from tests.expectations.planting import loner_rows, topics_table


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return topics_table()


def test_planted_near_duplicates_across_splits_are_found_exactly_and_warn(table: pd.DataFrame) -> None:
    table = table.copy()
    sources, targets = loner_rows(table, "train", 2), loner_rows(table, "test", 1) + loner_rows(table, "val", 1)
    table.loc[targets[0], "text"] = table.loc[sources[0], "text"] + " again today"  # train -> test
    table.loc[targets[1], "text"] = "Honestly, " + table.loc[sources[1], "text"]  # train -> val
    exact = table.index[table["split"] == "test"][-1]
    table.loc[exact, "text"] = table.loc[sources[0], "text"].upper()  # an exact copy: the other check's
    report = run_audit(table, AuditConfig(), checks=[CrossSplitNearDuplicatesCheck, CrossSplitDuplicatesCheck])
    near = report.check("cross_split_near_duplicates")
    assert not near.success and near.severity == "warning" and report.blocking_failures == ["cross_split_duplicates"]
    assert sorted(near.failing_rows) == sorted([*sources, *targets])
    assert near.observed["evaluation_rows"] == 2
    by_row = {example["row"]: example for example in near.examples}
    assert set(by_row) >= set(targets)  # evaluation-side rows lead the evidence
    assert by_row[targets[0]]["matches"] == [sources[0]] and by_row[targets[0]]["match_splits"] == ["train"]
    assert by_row[targets[0]]["similarity"] >= 0.8
    assert sorted(report.check("cross_split_duplicates").failing_rows) == sorted([sources[0], exact])


def test_near_duplicates_above_the_share_of_evaluation_rows_block(table: pd.DataFrame) -> None:
    table = table.copy()
    evaluation = table.index[table["split"] != "train"]
    sources = loner_rows(table, "train", 40)
    targets = evaluation[: len(sources)]  # 40 of ~600 val+test rows: above 5 %
    table.loc[targets, "text"] = table.loc[sources, "text"].to_numpy() + " ok"
    report = run_audit(table, AuditConfig(), checks=[CrossSplitNearDuplicatesCheck])
    check = report.check("cross_split_near_duplicates")
    assert report.blocking_failures == ["cross_split_near_duplicates"] and check.severity == "error"
    assert set(targets) <= set(check.failing_rows)
    relaxed = run_audit(table, AuditConfig(max_near_duplicate_fraction=0.2), checks=[CrossSplitNearDuplicatesCheck])
    assert relaxed.blocking_failures == [] and relaxed.warnings == ["cross_split_near_duplicates"]


def test_a_tag_appended_to_every_row_of_one_class_is_found_in_exactly_those_rows(table: pd.DataFrame) -> None:
    table = table.copy()
    travel = table.index[table["label"] == "travel"]
    table.loc[travel, "text"] = table.loc[travel, "text"] + " #trvl"
    report = run_audit(table, AuditConfig(), checks=[LabelInTextCheck])
    check = report.check("label_in_text")
    assert report.blocking_failures == ["label_in_text"] and check.severity == "error"
    assert sorted(check.failing_rows) == sorted(table.loc[travel, "row"])
    tag = check.examples[0]
    assert (tag["token"], tag["label"], tag["purity"], tag["coverage"]) == ("trvl", "travel", 1.0, 1.0)
    assert tag["rows"] == len(travel) and tag["blocks"] is True


def test_a_class_name_in_a_third_of_its_rows_warns(table: pd.DataFrame) -> None:
    table = table.copy()
    travel = table.index[table["label"] == "travel"]
    planted = travel[::3]
    table.loc[planted, "text"] = "Travel: " + table.loc[planted, "text"]
    report = run_audit(table, AuditConfig(), checks=[LabelInTextCheck])
    check = report.check("label_in_text")
    assert report.warnings == ["label_in_text"] and report.blocking_failures == []
    holds = table["text"].map(lambda text: "travel" in normalize_text(text).split())
    assert sorted(check.failing_rows) == sorted(table.loc[holds, "row"])  # planted, and "the travel agent"
    assert [(t["token"], t["label_name"]) for t in check.examples] == [("travel", True)]
    assert run_audit(topics_table(), AuditConfig(), checks=[LabelInTextCheck]).check("label_in_text").success


def with_columns(table: pd.DataFrame, **columns: object) -> pd.DataFrame:
    return table.assign(**columns)


def test_a_column_that_names_the_label_is_found(table: pd.DataFrame) -> None:
    rng = np.random.default_rng(0)
    numbers = rng.permutation(len(table))
    planted = with_columns(
        table,
        feed=table["label"] + "_feed",  # the label, reworded
        file=[f"{label}/{n:05d}.txt" for label, n in zip(table["label"], numbers, strict=True)],  # unique names
        id=numbers,  # a shuffled id: no information
        source=rng.choice(["web", "app", "mail"], size=len(table)),
    )
    report = run_audit(planted, AuditConfig(), checks=[LabelGiveawayColumnsCheck])
    check = report.check("label_giveaway_columns")
    assert report.blocking_failures == ["label_giveaway_columns"] and check.severity == "error"
    assert {(e["column"], e["reading"]) for e in check.examples} == {("feed", "value"), ("file", "digits_masked")}
    lifts = {c["column"]: c["lift"] for c in check.observed["columns"]}
    assert lifts["feed"] == lifts["file"] == 1.0
    assert abs(lifts["id"]) < 0.1 and abs(lifts["source"]) < 0.1 and abs(lifts["(row order)"]) < 0.1
    ignored = run_audit(planted, AuditConfig(ignore_columns=["feed", "file"]), checks=[LabelGiveawayColumnsCheck])
    assert ignored.success


def test_rows_sorted_by_label_warn_but_a_split_by_row_order_blocks(table: pd.DataFrame) -> None:
    ordered = table.sort_values("label", kind="stable").reset_index(drop=True)
    ordered["row"] = np.arange(len(ordered))
    ordered["id"] = 1000 + ordered["row"]  # an auto-increment id follows the row order
    report = run_audit(ordered, AuditConfig(), checks=[LabelGiveawayColumnsCheck])
    check = report.check("label_giveaway_columns")
    assert report.warnings == ["label_giveaway_columns"] and report.blocking_failures == []
    assert {(e["column"], e["kind"]) for e in check.examples} == {("(row order)", "row_order"), ("id", "row_order")}
    positions = [ordered["row"] < 2400, ordered["row"] < 2700]
    by_position = ordered.assign(split=np.select(positions, ["train", "val"], "test"))
    blocked = run_audit(by_position, AuditConfig(), checks=[LabelGiveawayColumnsCheck])
    assert blocked.blocking_failures == ["label_giveaway_columns"]
    assert blocked.check("label_giveaway_columns").observed["split_follows_row_order"] > 0.9
