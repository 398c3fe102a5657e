"""Planted label noise, imbalance and text defects, found in exactly their rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from depthfinder.expectations.audit.checks.class_imbalance import ClassImbalanceCheck
from depthfinder.expectations.audit.checks.empty_text import EmptyTextCheck
from depthfinder.expectations.audit.checks.suspected_label_noise import SuspectedLabelNoiseCheck
from depthfinder.expectations.audit.config import AuditConfig
from depthfinder.expectations.audit.run import run_audit
from depthfinder.expectations.table.config import DataConfig
from depthfinder.expectations.table.load import load_table
from depthfinder.expectations.table.split import assign_splits
from tests.expectations.planting import lone_rows, topics_table


def flip(table: pd.DataFrame, share: float, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    """`table` with `share` of its labels moved to another class at random; the flipped row labels."""
    rng = np.random.default_rng(seed)
    flipped = np.sort(rng.choice(len(table), size=int(share * len(table)), replace=False))
    classes = sorted(table["label"].unique())
    table = table.copy()
    for index in table.index[flipped]:
        others = [label for label in classes if label != table.at[index, "label"]]
        table.at[index, "label"] = others[int(rng.integers(len(others)))]
    return table, table.index[flipped].to_numpy()


def test_ten_percent_flipped_labels_on_real_sentences(shared_data: Path) -> None:
    clean = assign_splits(load_table(DataConfig(path=shared_data / "uci_sentiment_sentences.csv")), 0.1, 0.1, seed=1)
    noisy, flipped = flip(clean, 0.10, seed=0)
    report = run_audit(noisy, AuditConfig(examples=100), checks=[SuspectedLabelNoiseCheck])
    check = report.check("suspected_label_noise")
    assert not check.success and check.severity == "warning" and report.blocking_failures == []
    assert 0.05 <= check.observed["fraction"] <= 0.20  # the estimated noise rate; 10 % were flipped
    assert check.observed["rows"] == len(check.failing_rows)
    found = set(check.failing_rows) & set(noisy.loc[flipped, "row"])
    assert len(found) / len(flipped) > 0.5  # most flipped rows are among the rows flagged
    top = [example["row"] for example in check.examples]  # the 100 most suspicious, most suspicious first
    assert len(set(top) & set(flipped)) >= 60
    confidences = [example["self_confidence"] for example in check.examples]
    assert confidences == sorted(confidences)
    flipped_examples = [example for example in check.examples if example["row"] in set(flipped)]
    recovered = [e for e in flipped_examples if e["likely_label"] == clean.at[e["row"], "label"]]
    assert len(recovered) == len(flipped_examples)  # the likely label is the one before flipping


def test_a_clean_dataset_has_no_suspected_noise_and_heavy_noise_blocks() -> None:
    clean = topics_table(2000)
    assert run_audit(clean, AuditConfig(), checks=[SuspectedLabelNoiseCheck]).success
    noisy, _ = flip(clean, 0.2, seed=1)
    config = AuditConfig(max_label_noise_fraction=0.1)
    report = run_audit(noisy, config, checks=[SuspectedLabelNoiseCheck])
    check = report.check("suspected_label_noise")
    assert report.blocking_failures == ["suspected_label_noise"] and check.severity == "error"
    assert 0.1 < check.observed["fraction"] < 0.3


def test_confident_learning_samples_large_data_and_says_so() -> None:
    table = topics_table(3000)
    report = run_audit(table, AuditConfig(noise_max_rows=1000), checks=[SuspectedLabelNoiseCheck])
    observed = report.check("suspected_label_noise").observed
    assert observed["sampled"] is True and observed["judged_rows"] == 1000
    assert "random sample of 1,000 of 3,000 rows" in observed["note"]


def test_a_class_too_small_to_evaluate_blocks_and_is_named() -> None:
    table = topics_table()
    travel = table.index[table["label"] == "travel"]
    table = table.drop(travel[6:])
    report = run_audit(table, AuditConfig(), checks=[ClassImbalanceCheck])
    check = report.check("class_imbalance")
    assert report.blocking_failures == ["class_imbalance"] and check.severity == "error"
    assert check.observed["too_small_to_evaluate"] == ["travel"] and check.observed["counts"]["travel"] == 6
    assert check.observed["ratio"] == pytest.approx(1200 / 6)
    assert check.observed["min_share"] == pytest.approx(0.1 / 4)


def test_an_extremely_long_text_warns_in_exactly_its_row() -> None:
    table = topics_table()
    (long_row,) = lone_rows(table, "train", 1)
    table.loc[long_row, "text"] = "the striker scored again " * 400  # 10,000 characters
    report = run_audit(table, AuditConfig(), checks=[EmptyTextCheck])
    check = report.check("empty_text")
    assert report.warnings == ["empty_text"] and check.failing_rows == [long_row]
    assert check.examples[0]["reason"] == "extremely long" and check.examples[0]["chars"] == 10_000
    assert check.observed["long_rows"] == 1 and check.observed["empty_rows"] == 0
