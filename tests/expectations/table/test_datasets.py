from __future__ import annotations

import pytest

from depthfinder.expectations.table.datasets import DATASETS, list_datasets
from depthfinder.expectations.table.normalize import normalize_text, text_keys


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_deterministic_per_seed_and_different_across_seeds(name: str) -> None:
    dataset = DATASETS[name]
    first = dataset.generate(500, seed=1)
    columns = {"classify": ["text", "label"], "pairs": ["text", "pair", "label"], "tokens": ["tokens", "tags"]}
    assert list(first.columns) == columns[dataset.task] and len(first) == 500
    assert first.equals(dataset.generate(500, seed=1))
    text = first.columns[0]
    assert (first[text] != dataset.generate(500, seed=2)[text]).mean() > 0.9


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_varied_and_consistently_labelled(name: str) -> None:
    table = DATASETS[name].generate(3000, seed=1)
    if "tokens" in table:  # a sentence's text is its tokens, its label its tags
        table = table.assign(text=table["tokens"].str.join(" "), label=table["tags"].str.join(" "))
    keys = text_keys(table["text"] + (" | " + table["pair"] if "pair" in table else ""))  # a pair: both its texts
    assert keys.duplicated().mean() < 0.02
    assert table.groupby(keys)["label"].nunique().max() == 1  # a text (a pair) never has two labels


def test_topics_shares() -> None:
    shares = DATASETS["topics"].generate(1000, seed=4)["label"].value_counts(normalize=True)
    assert shares.to_dict() == {"sports": 0.4, "technology": 0.3, "cooking": 0.2, "travel": 0.1}


def test_reviews_negation_defeats_bag_of_words() -> None:
    table = DATASETS["reviews-negation"].generate(3000, seed=1)
    assert set(table["label"]) == {"positive", "negative"}
    assert table["label"].value_counts(normalize=True).min() > 0.45
    # "X is good, not bad" is positive, "X is bad, not good" negative: the same words,
    # opposite labels, so no bag-of-words model can get both right.
    contrast = table["text"].map(normalize_text).str.extract(r"\bis (\w+) not (\w+)\b").dropna()
    pairs = contrast.apply(lambda words: " ".join(sorted(words)), axis=1)
    labels_per_pair = table.loc[contrast.index, "label"].groupby(pairs).nunique()
    assert (labels_per_pair > 1).sum() >= 10
    negated = table[table["text"].str.contains(r"\bis not (?:bad|terrible|awful)\b", case=False, regex=True)]
    assert len(negated) and (negated["label"] == "positive").all()


def test_list_datasets() -> None:
    assert [dataset.name for dataset in list_datasets()] == [
        "names-in-context", "nested-ops-1", "nested-ops-2", "nested-ops-3", "reviews-negation", "same-topic", "topics"
    ]
    assert all(dataset.description for dataset in list_datasets())
