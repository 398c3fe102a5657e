from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from expectations.datasets import DATASETS
from expectations.normalize import text_keys
from expectations.split import assign_splits


def unique_texts(n: int, start: int = 0) -> pd.DataFrame:
    """n distinct texts with alternating labels."""
    numbers = np.arange(start, start + n)
    return pd.DataFrame({"text": [f"sentence number {i}" for i in numbers], "label": (numbers % 2).astype(str)})


def test_normalised_duplicates_never_straddle_splits() -> None:
    variants = ["Same text here", "same text here!", "  SAME  text, here ", "same text here..."]
    table = pd.concat([unique_texts(2000), pd.DataFrame({"text": variants * 50, "label": "1"})], ignore_index=True)
    split = assign_splits(table, val_fraction=0.2, test_fraction=0.2, seed=7)
    assert split.groupby("group")["split"].nunique().max() == 1
    assert split.loc[2000:, "split"].nunique() == 1
    assert (split["group"] == text_keys(split["text"])).all()


def test_proportions_are_near_the_fractions() -> None:
    split = assign_splits(unique_texts(10_000), val_fraction=0.1, test_fraction=0.2, seed=1)
    shares = split["split"].value_counts(normalize=True)
    assert shares["val"] == pytest.approx(0.1, abs=0.015)
    assert shares["test"] == pytest.approx(0.2, abs=0.02)
    assert shares["train"] == pytest.approx(0.7, abs=0.02)


def test_each_class_is_split_in_the_same_proportions_in_expectation() -> None:
    table = DATASETS["topics"].generate(3000, seed=5)
    split = assign_splits(table, val_fraction=0.1, test_fraction=0.1, seed=5)
    for label, rows in split.groupby("label"):
        tolerance = 4 * math.sqrt(0.1 * 0.9 / len(rows))
        assert (rows["split"] == "test").mean() == pytest.approx(0.1, abs=tolerance), label
        assert (rows["split"] == "val").mean() == pytest.approx(0.1, abs=tolerance), label


def test_growing_the_data_never_moves_an_old_row() -> None:
    old = unique_texts(3000)
    grown = pd.concat([old, unique_texts(2000, start=3000), old.sample(300, random_state=0)], ignore_index=True)
    grown = grown.sample(frac=1.0, random_state=1)  # new rows interleaved, order shuffled
    before = assign_splits(old, 0.1, 0.1, seed=3)
    after = assign_splits(grown, 0.1, 0.1, seed=3)
    assert after.loc[before.index, "split"].equals(before["split"])


def test_seed_gives_a_deterministic_but_different_split() -> None:
    table = unique_texts(2000)
    first = assign_splits(table, 0.1, 0.1, seed=1)["split"]
    assert first.equals(assign_splits(table, 0.1, 0.1, seed=1)["split"])
    assert (first != assign_splits(table, 0.1, 0.1, seed=2)["split"]).mean() > 0.1


def test_input_is_not_modified_and_bad_arguments_raise() -> None:
    table = unique_texts(10)
    assign_splits(table, 0.1, 0.1, seed=1)
    assert list(table.columns) == ["text", "label"]
    with pytest.raises(ValueError, match="their sum below 1"):
        assign_splits(table, 0.6, 0.5, seed=1)
    with pytest.raises(ValueError, match="already has a 'split' column"):
        assign_splits(table.assign(split="train"), 0.1, 0.1, seed=1)
