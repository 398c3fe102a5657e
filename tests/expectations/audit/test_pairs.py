"""The audit of a text-pairs table: a pair is one example for the generic checks, and the pair checks find
planted defects in exactly their rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from depthfinder.expectations.audit.checks.base import KEY_COLUMN, USABLE_COLUMN
from depthfinder.expectations.audit.checks.conflicting_labels import ConflictingLabelsCheck
from depthfinder.expectations.audit.checks.cross_split_duplicates import CrossSplitDuplicatesCheck
from depthfinder.expectations.audit.checks.empty_text import EmptyTextCheck
from depthfinder.expectations.audit.checks.label_giveaway_columns import LabelGiveawayColumnsCheck
from depthfinder.expectations.audit.config import AuditConfig
from depthfinder.expectations.audit.run import prepare_audit_table, run_audit

CONSONANTS, VOWELS = "bcdfghjklmnprstvwz", "aeiou"


def made_up_words(count: int, rng: np.random.Generator) -> np.ndarray:
    """`count` distinct pronounceable non-words ("hazame", "tofu"): no real word to trip a check by chance."""
    words: set[str] = set()
    while len(words) < count:
        words.add("".join(rng.choice(list(CONSONANTS)) + rng.choice(list(VOWELS)) for _ in range(rng.integers(2, 4))))
    return np.array(sorted(words))


def pairs_table(rows: int = 1000, seed: int = 0) -> pd.DataFrame:
    """A clean NLI-like table: a premise of nine words; an entailed hypothesis is four of them in order, a
    contradicted one four other words. Either side alone says nothing of the label (both are four or nine random
    words), the pair says everything, and no side repeats."""
    rng = np.random.default_rng(seed)
    vocabulary = made_up_words(600, rng)
    texts, pairs, labels = [], [], []
    for row in range(rows):
        premise = rng.choice(vocabulary, 9, replace=False)
        if row % 2 == 0:
            hypothesis, label = premise[np.sort(rng.choice(9, 4, replace=False))], "entailment"
        else:
            hypothesis, label = rng.choice(np.setdiff1d(vocabulary, premise), 4, replace=False), "contradiction"
        texts.append(" ".join(premise).capitalize() + ".")
        pairs.append(" ".join(hypothesis).capitalize() + ".")
        labels.append(label)
    draw = rng.random(rows)
    split = np.where(draw < 0.1, "val", np.where(draw < 0.2, "test", "train"))
    return pd.DataFrame({"text": texts, "pair": pairs, "label": labels, "split": split, "row": np.arange(rows)})


@pytest.fixture(scope="module")
def clean() -> pd.DataFrame:
    return pairs_table()


def rows_of(table: pd.DataFrame, split: str, count: int, skip: int = 0) -> list[int]:
    return table.index[table["split"] == split][skip : skip + count].tolist()


def test_a_pair_is_keyed_by_both_sides_and_no_split_of_words_between_them_collides() -> None:
    table = pd.DataFrame({"text": ["A b", "a", "A, B!", "...", "?"], "pair": ["c", "b c", "C", "x", ""]})
    prepared = prepare_audit_table(table)
    keys = prepared[KEY_COLUMN].tolist()
    assert keys[0] != keys[1] and keys[0] == keys[2]  # ("a b", "c") is not ("a", "b c"); case and marks aside
    assert prepared[USABLE_COLUMN].tolist() == [True, True, True, True, False]  # usable when either side is


def test_a_whole_pair_in_two_splits_leaks_and_a_shared_first_text_alone_does_not(clean: pd.DataFrame) -> None:
    table = clean.copy()
    train, test = rows_of(table, "train", 2), rows_of(table, "test", 2)
    table.loc[test[0], ["text", "pair"]] = table.loc[train[0], ["text", "pair"]].str.upper().to_numpy()
    table.loc[test[0], "label"] = table.loc[train[0], "label"]
    table.loc[test[1], "text"] = table.loc[train[1], "text"]  # the premise reused with another hypothesis
    report = run_audit(table, AuditConfig(), checks=[CrossSplitDuplicatesCheck])
    check = report.check("cross_split_duplicates")
    assert not check.success and check.severity == "error"
    assert sorted(check.failing_rows) == sorted([train[0], test[0]])
    (example,) = check.examples
    assert (example["row"], example["matches"]) == (test[0], [train[0]])
    assert example["pair"] == table.loc[test[0], "pair"]  # the evidence shows both sides


def test_a_pair_with_two_labels_conflicts_and_a_first_text_with_two_labels_does_not(clean: pd.DataFrame) -> None:
    table = clean.copy()
    a, b, c, d = rows_of(table, "train", 4)
    table.loc[b, ["text", "pair"]] = table.loc[a, ["text", "pair"]].to_numpy()
    table.loc[b, "label"] = "neutral"
    table.loc[d, "text"] = table.loc[c, "text"]  # one premise, two hypotheses, two labels: NLI as it should be
    table.loc[d, "label"] = "neutral"
    report = run_audit(table, AuditConfig(), checks=[ConflictingLabelsCheck])
    check = report.check("conflicting_labels")
    assert not check.success and sorted(check.failing_rows) == sorted([a, b])


def test_the_second_text_is_not_a_metadata_column_and_an_empty_pair_is_empty_on_both_sides(
    clean: pd.DataFrame,
) -> None:
    table = clean.copy()
    one_sided, empty = rows_of(table, "val", 2)
    table.loc[one_sided, "pair"] = ""  # a missing second text: still an example
    table.loc[empty, ["text", "pair"]] = ["...", "?"]
    report = run_audit(table, AuditConfig(), checks=[LabelGiveawayColumnsCheck, EmptyTextCheck])
    assert report.check("label_giveaway_columns").success
    assert [column["column"] for column in report.check("label_giveaway_columns").observed["columns"]] == [
        "(row order)"
    ]
    empty_text = report.check("empty_text")
    assert empty_text.failing_rows == [empty] and empty_text.examples[0]["pair"] == "?"
