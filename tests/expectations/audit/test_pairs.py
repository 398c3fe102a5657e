"""The audit of a text-pairs table: a pair is one example for the generic checks, and the pair checks find
planted defects in exactly their rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from depthfinder.expectations.audit.checks.base import KEY_COLUMN, USABLE_COLUMN
from depthfinder.expectations.audit.checks.conflicting_labels import ConflictingLabelsCheck
from depthfinder.expectations.audit.checks.cross_split_duplicates import CrossSplitDuplicatesCheck
from depthfinder.expectations.audit.checks.cross_split_shared_sides import CrossSplitSharedSidesCheck
from depthfinder.expectations.audit.checks.empty_text import EmptyTextCheck
from depthfinder.expectations.audit.checks.label_giveaway_columns import LabelGiveawayColumnsCheck
from depthfinder.expectations.audit.checks.one_side_baseline import OneSideBaselineCheck
from depthfinder.expectations.audit.checks.swapped_pairs import SwappedPairsCheck
from depthfinder.expectations.audit.config import AuditConfig
from depthfinder.expectations.audit.drops import drop_rows
from depthfinder.expectations.audit.registry import PAIR_REGISTRY, REGISTRY
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


def test_drops_remove_whole_pairs_only(clean: pd.DataFrame) -> None:
    table = clean.copy()
    a, b, c, d = rows_of(table, "train", 4)
    (test,) = rows_of(table, "test", 1)
    table.loc[b, ["text", "pair", "label"]] = [*table.loc[a, ["text", "pair"]], "neutral"]  # a conflict
    table.loc[d, ["text", "label"]] = [table.loc[c, "text"], "neutral"]  # a shared premise: kept
    table.loc[test, "text"] = table.loc[c, "text"]  # ... in test too: kept
    kept, counts = drop_rows(table, AuditConfig(drop=["conflicts", "leaks"]))
    assert counts == {"conflicts": 2, "leaks": 0} and set(table.index) - set(kept.index) == {a, b}


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


def test_pair_checks_pass_on_the_clean_table_and_its_whole_audit_passes(clean: pd.DataFrame) -> None:
    report = run_audit(clean, AuditConfig())
    assert [check.name for check in report.checks] == PAIR_REGISTRY.names()
    assert report.verdict == "passed", report.headline
    pair_checks = set(PAIR_REGISTRY.names()) - set(REGISTRY.names())
    assert pair_checks == {"swapped_pairs", "cross_split_shared_sides", "one_side_baseline"}
    assert all(report.check(name).success for name in pair_checks)


def test_a_classify_table_runs_no_pair_check(clean: pd.DataFrame) -> None:
    report = run_audit(clean.drop(columns="pair"), AuditConfig())
    assert [check.name for check in report.checks] == REGISTRY.names()


def test_a_side_of_a_train_pair_reused_in_val_or_test_warns_in_exactly_its_rows(clean: pd.DataFrame) -> None:
    table = clean.copy()
    train, (test, copy, swap), (val,) = rows_of(table, "train", 4), rows_of(table, "test", 3), rows_of(table, "val", 1)
    table.loc[test, "pair"] = table.loc[train[0], "pair"].upper()  # a hypothesis reused with another premise
    table.loc[val, "text"] = table.loc[train[1], "pair"]  # a train pair's second text as a first text
    table.loc[copy, ["text", "pair"]] = table.loc[train[2], ["text", "pair"]].to_numpy()  # the whole pair: not this
    table.loc[swap, ["text", "pair"]] = table.loc[train[3], ["pair", "text"]].to_numpy()  # its swap: not this either
    report = run_audit(table, AuditConfig(), checks=[CrossSplitSharedSidesCheck])
    check = report.check("cross_split_shared_sides")
    assert not check.success and check.severity == "warning" and report.blocking_failures == []
    assert sorted(check.failing_rows) == sorted([test, val])
    assert (check.observed["evaluation_rows"], check.observed["first_side_rows"]) == (2, 1)
    assert check.observed["evaluated"] == int((table["split"] != "train").sum())
    assert check.headline.startswith(f"2 of {check.observed['evaluated']} val/test pairs")
    by_row = {example["row"]: example for example in check.examples}
    assert (by_row[test]["side"], by_row[test]["matches"]) == ("second", [train[0]])
    assert (by_row[val]["side"], by_row[val]["matches"]) == ("first", [train[1]])
    fixed = run_audit(table.drop(index=[test, val]), AuditConfig(), checks=[CrossSplitSharedSidesCheck])
    assert fixed.check("cross_split_shared_sides").success


def test_a_swap_in_another_split_blocks_and_one_in_its_split_with_another_label_warns(clean: pd.DataFrame) -> None:
    table = clean.copy()
    train, (test, same) = rows_of(table, "train", 6), rows_of(table, "test", 2)
    table.loc[test, ["text", "pair"]] = table.loc[train[0], ["pair", "text"]].to_numpy()  # across splits
    table.loc[train[2], ["text", "pair"]] = table.loc[train[1], ["pair", "text"]].to_numpy()
    table.loc[train[2], "label"] = "neutral"  # ... in one split with another label
    table.loc[train[4], ["text", "pair"]] = table.loc[train[3], ["pair", "text"]].to_numpy()
    table.loc[train[4], "label"] = table.loc[train[3], "label"]  # ... with the same label: augmentation
    table.loc[[train[5], same], ["text", "pair"]] = table.loc[train[5], "text"]  # sides equal: nobody's swap
    report = run_audit(table, AuditConfig(), checks=[SwappedPairsCheck])
    check = report.check("swapped_pairs")
    assert report.blocking_failures == ["swapped_pairs"] and check.severity == "error"
    assert sorted(check.failing_rows) == sorted([train[0], test, train[1], train[2]])
    assert (check.observed["swap_in_other_split"], check.observed["swap_with_other_label"]) == (2, 2)
    first = check.examples[0]  # the evaluation-side copy leads
    assert (first["row"], first["swaps"], first["swap_splits"]) == (test, [train[0]], ["train"])
    fixed = table.drop(index=[test])
    fixed.loc[train[2], "label"] = fixed.loc[train[1], "label"]
    assert run_audit(fixed, AuditConfig(), checks=[SwappedPairsCheck]).check("swapped_pairs").success


def test_a_swap_in_its_split_with_another_label_only_warns(clean: pd.DataFrame) -> None:
    table = clean.copy()
    a, b = rows_of(table, "val", 2)
    table.loc[b, ["text", "pair"]] = table.loc[a, ["pair", "text"]].to_numpy()
    table.loc[b, "label"] = "neutral"
    report = run_audit(table, AuditConfig(), checks=[SwappedPairsCheck])
    check = report.check("swapped_pairs")
    assert report.warnings == ["swapped_pairs"] and check.severity == "warning"
    assert sorted(check.failing_rows) == sorted([a, b])
    assert check.examples[0]["swap_labels"] in (["neutral"], [table.loc[a, "label"]])


def with_artefact(table: pd.DataFrame, column: str, share: float) -> tuple[pd.DataFrame, list[int]]:
    """`table` with "Nobody" opening `column` in `share` of its contradiction rows (every other such row up to
    it), as crowd workers wrote contradicting hypotheses (Gururangan et al. 2018); and the rows planted."""
    contradiction = table.index[table["label"] == "contradiction"]
    planted = contradiction[np.linspace(0, len(contradiction) - 1, round(share * len(contradiction))).astype(int)]
    table = table.copy()
    table.loc[planted, column] = "Nobody " + table.loc[planted, column].str.lower()
    return table, planted.tolist()


@pytest.mark.parametrize(("column", "side"), [("pair", "second"), ("text", "first")])
def test_a_side_that_gives_the_label_away_alone_blocks(clean: pd.DataFrame, column: str, side: str) -> None:
    table, planted = with_artefact(clean, column, 0.7)
    report = run_audit(table, AuditConfig(), checks=[OneSideBaselineCheck])
    check = report.check("one_side_baseline")
    assert report.blocking_failures == ["one_side_baseline"] and check.severity == "error"
    (example,) = check.examples  # the other side stays clean
    assert example["side"] == side and example["lift"] >= 0.5 and example["baseline"] == 0.5
    word = example["tokens"][0]
    assert (word["token"], word["label"], word["rows"], word["purity"]) == ("nobody", "contradiction", len(planted), 1)
    assert word["row"] in planted
    assert check.headline.startswith("first side alone") and "majority class 50.0%" in check.headline
    relaxed = run_audit(table, AuditConfig(giveaway_min_lift=0.9), checks=[OneSideBaselineCheck])
    assert relaxed.warnings == ["one_side_baseline"] and relaxed.blocking_failures == []


def test_a_side_that_tells_some_labels_warns_and_a_clean_one_passes(clean: pd.DataFrame) -> None:
    table, _ = with_artefact(clean, "pair", 0.25)
    check = run_audit(table, AuditConfig(), checks=[OneSideBaselineCheck]).check("one_side_baseline")
    assert not check.success and check.severity == "warning"
    (example,) = check.examples
    assert example["side"] == "second" and 0 < example["lift"] < 0.5 and example["z"] > 3
    sides = run_audit(clean, AuditConfig(), checks=[OneSideBaselineCheck]).check("one_side_baseline")
    assert sides.success and all(side["z"] < 3 for side in sides.observed["sides"])


def test_noise_is_not_estimated_on_pairs_whose_label_no_bag_of_words_reads() -> None:
    """same-topic's label is whether both sides share a topic: no side's words, and no words they share, say it, so a
    baseline at the majority class would call half the labels wrong; a classify table with shuffled labels, which
    looks the same to the baseline, is still judged and blocked."""
    from depthfinder.expectations.audit.checks.suspected_label_noise import SuspectedLabelNoiseCheck
    from depthfinder.expectations.table.datasets import DATASETS
    from depthfinder.expectations.table.split import assign_splits

    pairs = assign_splits(DATASETS["same-topic"].generate(600, 1), 0.1, 0.1, 1)
    noise = run_audit(pairs, AuditConfig(), checks=[SuspectedLabelNoiseCheck]).check("suspected_label_noise")
    assert noise.success and noise.headline.startswith("not estimated: the baseline does no better than the majority")
    assert not noise.suspects
    texts = pairs.drop(columns=["pair"]).assign(label=np.random.default_rng(0).permutation(pairs["label"]))
    shuffled = run_audit(texts, AuditConfig(), checks=[SuspectedLabelNoiseCheck]).check("suspected_label_noise")
    assert not shuffled.success and shuffled.observed["fraction"] > 0.3


def test_noise_a_weak_pairs_baseline_estimates_warns_and_never_blocks() -> None:
    """same-topic, 1,200 pairs of another draw: the baseline is a little above the majority class (a topic's words
    shared by both sides), so confident learning judges it, and flags about its own error rate on labels that are
    clean by construction: a warning that says why, not a block."""
    from depthfinder.expectations.audit.checks.suspected_label_noise import PAIR_BLOCKING_LIFT, SuspectedLabelNoiseCheck
    from depthfinder.expectations.table.datasets import DATASETS
    from depthfinder.expectations.table.split import assign_splits

    pairs = assign_splits(DATASETS["same-topic"].generate(1200, 2), 0.1, 0.1, 1)
    report = run_audit(pairs, AuditConfig(), checks=[SuspectedLabelNoiseCheck])
    noise = report.check("suspected_label_noise")
    assert noise.observed["fraction"] > AuditConfig().max_label_noise_fraction  # it would have blocked
    assert report.blocking_failures == [] and report.warnings == ["suspected_label_noise"]
    assert f"closes {(noise.observed['baseline_accuracy'] - 0.5) / 0.5:.0%} of the gap" in noise.headline
    assert (noise.observed["baseline_accuracy"] - 0.5) / 0.5 < PAIR_BLOCKING_LIFT
