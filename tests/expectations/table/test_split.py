from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from depthfinder.expectations.table.datasets import DATASETS
from depthfinder.expectations.table.near_duplicates import near_duplicate_pairs
from depthfinder.expectations.table.normalize import normalized_texts_and_keys, text_keys
from depthfinder.expectations.table.split import assign_splits


def unique_texts(n: int, start: int = 0) -> pd.DataFrame:
    """n distinct texts of random words, no two near-duplicates, with alternating labels."""
    rng = np.random.default_rng(start)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words = ["".join(rng.choice(letters, 7)) for _ in range(6 * n)]
    numbers = np.arange(start, start + n)
    texts = [" ".join(words[6 * i : 6 * i + 6]) for i in range(n)]
    return pd.DataFrame({"text": texts, "label": (numbers % 2).astype(str)})


def with_near_copies(table: pd.DataFrame, count: int) -> tuple[pd.DataFrame, list[tuple[int, int]]]:
    """`table` plus a near-copy (" ok" appended) of each of its first `count` rows; the (original, copy) pairs."""
    copies = table.iloc[:count].assign(text=lambda frame: frame["text"] + " ok")
    grown = pd.concat([table, copies], ignore_index=True)
    return grown, [(i, len(table) + i) for i in range(count)]


def straddling(split: pd.DataFrame, pairs: list[tuple[int, int]]) -> int:
    """How many (row, row) pairs sit in two splits."""
    return sum(split.at[a, "split"] != split.at[b, "split"] for a, b in pairs)


def moved_rows(old: pd.DataFrame, grown: pd.DataFrame, seed: int, **kwargs: object) -> int:
    """Rows of `old` (labels kept in `grown`) whose split changes when the table grows to `grown`."""
    before = assign_splits(old, 0.1, 0.1, seed, **kwargs)["split"]
    after = assign_splits(grown, 0.1, 0.1, seed, **kwargs)["split"]
    return int((after.loc[before.index] != before).sum())


def test_normalised_duplicates_never_straddle_splits() -> None:
    variants = ["Same text here", "same text here!", "  SAME  text, here ", "same text here..."]
    table = pd.concat([unique_texts(2000), pd.DataFrame({"text": variants * 50, "label": "1"})], ignore_index=True)
    for near in (True, False):
        split = assign_splits(table, val_fraction=0.2, test_fraction=0.2, seed=7, group_near_duplicates=near)
        assert split.groupby("group")["split"].nunique().max() == 1
        assert split.groupby(text_keys(split["text"]))["group"].nunique().max() == 1  # one text, one group
        assert split.loc[2000:, "split"].nunique() == 1


def test_texts_that_differ_only_by_unicode_form_or_invisible_characters_never_straddle_splits() -> None:
    import unicodedata

    bases = [f"{text} café numéro {i}" for i, text in enumerate(unique_texts(300)["text"])]
    variants = [[text, unicodedata.normalize("NFD", text), text.replace("é", "é\u200b"), f"\ufeff{text}\u2060"]
                for text in bases]
    table = pd.DataFrame({"text": [variant for four in variants for variant in four], "label": "1"})
    for near in (True, False):
        split = assign_splits(table, val_fraction=0.2, test_fraction=0.2, seed=7, group_near_duplicates=near)
        each = split.groupby(np.arange(len(split)) // 4)
        assert each["group"].nunique().max() == 1 and each["split"].nunique().max() == 1
        assert split["split"].nunique() == 3  # the texts themselves still spread over the splits


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


def test_a_rows_split_depends_on_the_row_alone() -> None:
    table, _ = with_near_copies(unique_texts(500), 100)
    together = assign_splits(table, 0.1, 0.1, seed=3)
    for index in table.index[::25]:
        alone = assign_splits(table.loc[[index]], 0.1, 0.1, seed=3)
        assert alone.at[index, "split"] == together.at[index, "split"]
        assert alone.at[index, "group"] == together.at[index, "group"]


def test_growing_the_data_never_moves_an_old_row() -> None:
    old = unique_texts(3000)
    grown = pd.concat([old, unique_texts(2000, start=3000), old.sample(300, random_state=0)], ignore_index=True)
    grown = grown.sample(frac=1.0, random_state=1)  # new rows interleaved, order shuffled
    assert moved_rows(old, grown, seed=3) == 0


def test_new_near_copies_that_bridge_old_texts_move_no_old_row() -> None:
    base = unique_texts(600)
    # Old: each text and a longer variant, too far apart to be near-duplicates of each other.
    old = pd.concat([base, base.assign(text=base["text"] + " and so we left")], ignore_index=True)
    # New: a middle text, a near-duplicate of both, that would join them into one cluster.
    grown = pd.concat([old, base.assign(text=base["text"] + " and so")], ignore_index=True)
    normalized, _ = normalized_texts_and_keys(grown["text"])
    found = near_duplicate_pairs(normalized.tolist(), threshold=0.8)
    linked = set(zip(found.left.tolist(), found.right.tolist(), strict=True))
    bridges = [i for i in range(600) if {(i, i + 1200), (i + 600, i + 1200)} <= linked and (i, i + 600) not in linked]
    assert len(bridges) > 200  # planted: many new texts bridge two old texts that were not near-duplicates
    shuffled = grown.sample(frac=1.0, random_state=2)  # new rows interleaved, order shuffled
    for seed in (1, 2, 3):
        assert moved_rows(old, shuffled, seed) == 0


def test_growing_real_data_never_moves_an_old_row(shared_data: Path) -> None:
    table = pd.read_csv(shared_data / "sms_spam.csv")
    half = table.iloc[: len(table) // 2]
    assert moved_rows(half, table, seed=1) == 0  # the cluster-min split moved 6 of these 2,787 rows
    rng = np.random.default_rng(0)
    for seed in (2, 3):
        old = table.sample(frac=rng.uniform(0.2, 0.9), random_state=seed)
        grown = table.sample(frac=1.0, random_state=seed + 10)  # every old row, new rows interleaved
        assert moved_rows(old, grown, seed) == 0
        assert moved_rows(old, grown, seed, group_near_duplicates=False) == 0


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
    with pytest.raises(ValueError, match="user_groups must have the table's index"):
        assign_splits(table, 0.1, 0.1, seed=1, user_groups=pd.Series(["a"] * 10, index=range(5, 15)))


def test_near_copies_mostly_share_a_split_where_exact_grouping_would_split_a_third() -> None:
    table, pairs = with_near_copies(unique_texts(2000), 150)
    for seed in (1, 4):
        grouped = assign_splits(table, 0.1, 0.1, seed=seed)
        exact_only = assign_splits(table, 0.1, 0.1, seed=seed, group_near_duplicates=False)
        shared = sum(grouped.at[a, "group"] == grouped.at[b, "group"] for a, b in pairs)
        assert shared >= 0.7 * len(pairs)  # about J**3 with J ~ 0.88 over 12-byte shingles
        assert straddling(exact_only, pairs) > 40  # about a third of the pairs would straddle
        assert straddling(grouped, pairs) < 0.4 * straddling(exact_only, pairs)


def test_real_near_duplicates_straddle_less_and_classes_keep_their_shares(shared_data: Path) -> None:
    table = pd.read_csv(shared_data / "sms_spam.csv")
    normalized, keys = normalized_texts_and_keys(table["text"])
    first = np.flatnonzero(~keys.duplicated().to_numpy())
    found = near_duplicate_pairs(normalized.iloc[first].tolist(), threshold=0.8)
    pairs = list(zip(table.index[first[found.left]], table.index[first[found.right]], strict=True))
    assert len(pairs) == 129
    for seed in (1, 2, 3):
        grouped = assign_splits(table, 0.1, 0.1, seed)
        exact_only = assign_splits(table, 0.1, 0.1, seed, group_near_duplicates=False)
        assert straddling(grouped, pairs) < 0.7 * straddling(exact_only, pairs)
        assert grouped.groupby("group").size().max() < 0.01 * len(table)  # unrelated texts do not pile up
        for label, rows in grouped.groupby("label"):
            tolerance = 4 * math.sqrt(0.1 * 0.9 / len(rows))
            for name in ("val", "test"):
                assert (rows["split"] == name).mean() == pytest.approx(0.1, abs=tolerance), (seed, label, name)


def test_templated_texts_are_kept_together_only_in_part() -> None:
    # Texts that differ in a few digits share most shingles; how many share a key depends on the seed.
    templated = pd.DataFrame({"text": [f"your order number {i:06d} has shipped" for i in range(400)], "label": "1"})
    table = pd.concat([unique_texts(1000), templated], ignore_index=True)
    largest, train = [], []
    for seed in range(1, 11):
        rows = assign_splits(table, 0.1, 0.1, seed).loc[1000:]
        assert rows["split"].nunique() == 3, seed
        largest.append(rows.groupby("group").size().max() / len(rows))
        train.append((rows["split"] == "train").mean())
    assert np.median(largest) < 0.15
    assert np.mean(train) == pytest.approx(0.8, abs=0.1)


def test_user_groups_never_straddle_and_never_move() -> None:
    table = unique_texts(3000)
    user_groups = pd.Series(np.arange(3000) // 10, index=table.index, dtype="float")
    user_groups.iloc[2000:] = np.nan  # the last thousand rows have no group: their text decides
    split = assign_splits(table, 0.1, 0.1, seed=2, user_groups=user_groups)
    assert split.iloc[:2000].groupby(user_groups.iloc[:2000])["split"].nunique().max() == 1
    assert split.iloc[:2000]["split"].value_counts(normalize=True)["train"] == pytest.approx(0.8, abs=0.05)
    by_text = assign_splits(table, 0.1, 0.1, seed=2)
    assert split.iloc[2000:]["split"].equals(by_text.iloc[2000:]["split"])
    # The group id decides, not its dtype (an int column that gains a null turns float), texts or other rows.
    shuffled = table.iloc[:500].assign(text=lambda frame: frame["text"].sample(frac=1.0, random_state=0).to_numpy())
    regrouped = assign_splits(shuffled, 0.1, 0.1, seed=2, user_groups=(user_groups.iloc[:500]).astype(int))
    assert regrouped["split"].equals(split.iloc[:500]["split"])
