from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from expectations.datasets import DATASETS
from expectations.normalize import text_keys
from expectations.split import MAX_CLUSTER_SHARE, assign_splits


def unique_texts(n: int, start: int = 0) -> pd.DataFrame:
    """n distinct texts of random words, no two near-duplicates, with alternating labels."""
    rng = np.random.default_rng(start)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words = ["".join(rng.choice(letters, 7)) for _ in range(6 * n)]
    numbers = np.arange(start, start + n)
    texts = [" ".join(words[6 * i : 6 * i + 6]) for i in range(n)]
    return pd.DataFrame({"text": texts, "label": (numbers % 2).astype(str)})


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


def with_near_copies(table: pd.DataFrame, count: int) -> tuple[pd.DataFrame, list[tuple[int, int]]]:
    """`table` plus a near-copy (" ok" appended) of each of its first `count` rows; the (original, copy) pairs."""
    copies = table.iloc[:count].assign(text=lambda frame: frame["text"] + " ok")
    grown = pd.concat([table, copies], ignore_index=True)
    return grown, [(i, len(table) + i) for i in range(count)]


def test_near_duplicates_share_a_split_and_exact_grouping_alone_would_not() -> None:
    table, pairs = with_near_copies(unique_texts(2000), 150)
    grouped = assign_splits(table, 0.1, 0.1, seed=4)
    exact_only = assign_splits(table, 0.1, 0.1, seed=4, near_duplicate_threshold=None)
    for original, copy in pairs:
        assert grouped.at[original, "split"] == grouped.at[copy, "split"]
        assert grouped.at[original, "group"] == grouped.at[copy, "group"]
        assert grouped.at[copy, "group"] == min(text_keys(table.loc[[original, copy], "text"]))
    straddling = sum(exact_only.at[a, "split"] != exact_only.at[b, "split"] for a, b in pairs)
    assert straddling > 20  # about a third of the pairs would leak without near-duplicate grouping
    assert (grouped.loc[2000:, "split"] != exact_only.loc[2000:, "split"]).sum() > 0


def test_growing_the_data_keeps_near_duplicate_clusters_in_place() -> None:
    old, _ = with_near_copies(unique_texts(2000), 150)
    new = unique_texts(1500, start=5000)
    before = assign_splits(old, 0.1, 0.1, seed=3)
    after = assign_splits(pd.concat([old, new], ignore_index=True), 0.1, 0.1, seed=3)
    assert after.loc[before.index, "split"].equals(before["split"])


def test_a_cluster_moves_only_when_its_smallest_key_changes() -> None:
    old, pairs = with_near_copies(unique_texts(600), 100)
    newcomers = old.loc[[a for a, _ in pairs], "text"] + " too"  # each joins its pair's cluster
    grown = pd.concat([old, pd.DataFrame({"text": newcomers.to_numpy(), "label": "0"})], ignore_index=True)
    before = assign_splits(old, 0.1, 0.1, seed=2)
    after = assign_splits(grown, 0.1, 0.1, seed=2)
    moved = before.index[after.loc[before.index, "split"] != before["split"]]
    changed_key = before.index[after.loc[before.index, "group"] != before["group"]]
    assert set(moved) <= set(changed_key)  # the documented price of grouping near-duplicates
    assert 0 < len(changed_key) < 200 and len(moved) < len(changed_key)


def test_a_chain_of_templated_texts_is_not_grouped_into_one_huge_cluster() -> None:
    templated = pd.DataFrame({"text": [f"your order number {i:06d} has shipped" for i in range(400)], "label": "1"})
    table = pd.concat([unique_texts(1000), templated], ignore_index=True)
    split = assign_splits(table, 0.1, 0.1, seed=1)
    assert split.groupby("group").size().max() <= MAX_CLUSTER_SHARE * len(table)  # the long chain was not joined
    assert split.loc[1000:, "split"].value_counts(normalize=True)["train"] < 0.95
