"""The unlabelled pool audited like a split (expectations.table.pool.audit_pool): copies and near-copies of the
labelled texts, after the audit's normalisation, found in exactly the texts they were planted in."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from depthfinder.expectations.table.config import DataConfig
from depthfinder.expectations.table.pool import audit_pool, check_pool

LABELLED = pd.DataFrame({
    "text": ["the battery died after a week of light use", "great screen and the speakers are loud enough",
             "shipping took three weeks and the box was crushed", "i would buy this charger again for my car"],
    "split": ["train", "val", "test", "train"],
})
NEW = ["the keyboard feels cheap but works fine", "customer service never answered my two emails",
       "a sturdy case that survived a fall down the stairs"]


def test_copies_and_near_copies_of_evaluation_texts_are_left_out_and_counted_apart_from_train_copies() -> None:
    pool = [
        NEW[0],
        "GREAT screen, and the speakers are loud enough!!",  # the val text: other case and punctuation
        "shipping  took three weeks and the box was  crushed.",  # the test text: other spacing
        "shipping took three weeks and the box was crushed badly",  # a near-copy of the test text
        NEW[1],
        "The battery died after a week of light use.",  # a train text
        NEW[2],
        NEW[1],  # a repeat of a new text is still new: another draw of the source
    ]
    audit = audit_pool(pool, LABELLED)

    assert audit.new == [0, 4, 6, 7]
    assert (audit.of_held_out, audit.of_train) == (3, 1)


def test_a_text_that_copies_both_a_train_and_a_test_text_counts_as_an_evaluation_copy() -> None:
    labelled = pd.DataFrame({"text": ["same words in both splits here", "same words in both splits here"],
                             "split": ["train", "test"]})
    audit = audit_pool(["Same words in both splits here!", NEW[0]], labelled)
    assert (audit.new, audit.of_held_out, audit.of_train) == ([1], 1, 0)


def test_without_splits_every_labelled_text_may_be_an_evaluation_row() -> None:
    audit = audit_pool(["I would buy this charger again, for my car", NEW[2]], LABELLED[["text"]])
    assert (audit.new, audit.of_held_out, audit.of_train) == ([1], 1, 0)


def test_a_pool_of_nothing_new_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "pool.csv"
    pd.DataFrame({"text": [text.upper() + " " for text in LABELLED["text"]]}).to_csv(path, index=False)
    with pytest.raises(ValueError, match=r"pool.csv: every one of its 4 texts is a copy or near-copy of a labelled "
                                         r"text") as refused:
        check_pool(path, None, DataConfig(path=tmp_path / "data.csv"), {"a", "b"}, labelled=LABELLED)
    assert "\n" not in str(refused.value)
    check_pool(path, None, DataConfig(path=tmp_path / "data.csv"), {"a", "b"})  # no table to compare with: read only


PAIRS = pd.DataFrame({
    "text": ["the battery died after a week of light use", "great screen and the speakers are loud enough",
             "shipping took three weeks and the box was crushed"],
    "pair": ["i would buy this charger again for my car", "the keyboard feels cheap but works fine",
             "customer service never answered my two emails"],
    "split": ["train", "val", "test"],
})


def test_a_pool_pair_sharing_either_text_with_a_held_out_pair_is_left_out_and_a_train_pair_swapped_too() -> None:
    pool = [
        (NEW[2], "The keyboard feels cheap, but works fine."),  # the val pair's second text, beside a new one
        ("Customer service never answered my two emails!", NEW[2]),  # the test pair's second text, first here
        ("i would buy this charger again for my car", "the battery died after a week of light use"),  # train, swapped
        ("the battery died after a week of light use", NEW[2]),  # a train text paired anew: a new example
        ("the battery died after a week of light use", "i would buy this charger again for my car"),  # train, as is
        ("the battery died after a week of light use", "great screen and the speakers are loud enough"),  # val text
    ]
    audit = audit_pool(pool, PAIRS)
    assert audit.new == [3]
    assert (audit.of_held_out, audit.of_train) == (3, 2)


def test_a_pool_of_pairs_reads_both_columns_and_a_missing_pair_column_is_one_line(tmp_path: Path) -> None:
    from depthfinder.expectations.table.pool import load_text_labels, load_texts

    data = DataConfig(path=tmp_path / "data.csv", task="pairs", text_col="first", pair_col="second")
    path = tmp_path / "pool.csv"
    pd.DataFrame({"first": ["a cat", "  ", "a dog"], "second": ["a hat", "a log", "a frog"],
                  "label": ["same", "", "other"]}).to_csv(path, index=False)
    assert load_texts(path, data) == [("a cat", "a hat"), ("a dog", "a frog")]
    assert load_text_labels(path, data) == {("a cat", "a hat"): "same", ("a dog", "a frog"): "other"}
    pd.DataFrame({"first": ["a cat"]}).to_csv(path, index=False)
    with pytest.raises(ValueError, match=r"pool.csv: no column 'second' \(columns: first\); set --pair-col"):
        load_texts(path, data)


def test_a_pool_of_untagged_sentences_reads_conll_tokens_or_a_tokens_column_and_refuses_a_token_with_a_space(
        tmp_path: Path) -> None:
    from depthfinder.expectations.table.pool import load_texts

    data = DataConfig(path=tmp_path / "data.conll", task="tokens")
    (tmp_path / "pool.conll").write_text("Omar\nflew\nto Kyoto\n\n-DOCSTART-\nLima\n")  # a tag after a token: ignored
    assert load_texts(tmp_path / "pool.conll", data) == ["Omar flew to", "Lima"]
    (tmp_path / "pool.jsonl").write_text('{"tokens": ["Omar", "flew"]}\n{"tokens": ["to", "Lima"]}\n')
    assert load_texts(tmp_path / "pool.jsonl", data) == ["Omar flew", "to Lima"]
    (tmp_path / "bad.jsonl").write_text('{"tokens": ["New York", "is"]}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl: sentence 0 token 0 is 'New York'; a token is one word"):
        load_texts(tmp_path / "bad.jsonl", data)
    with pytest.raises(ValueError, match=r"missing.conll: no such file"):
        load_texts(tmp_path / "missing.conll", data)
