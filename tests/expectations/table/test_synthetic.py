from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from depthfinder.expectations.table.datasets import get_dataset
from depthfinder.expectations.table.normalize import text_keys
from depthfinder.expectations.table.synthetic import (
    ARITY,
    NESTED_OPS_TASKS,
    OPERATORS,
    NestedOpsTask,
    evaluate,
    expression,
)

TASKS = {task.depth: task for task in NESTED_OPS_TASKS}


@pytest.fixture(scope="module")
def tables() -> dict[int, pd.DataFrame]:
    return {depth: get_dataset(f"nested-ops-{depth}").generate(3000, seed=1) for depth in TASKS}


def read_level_as(text: str, level: int, operator: str) -> int:
    """The value of `text` when every operator at nesting `level` (1 = outermost) is read as `operator`."""
    tokens, depth = text.split(), 0
    for i, token in enumerate(tokens):
        if token in OPERATORS:
            depth += 1
            if depth == level:
                tokens[i] = operator
        elif token == ")":
            depth -= 1
    return evaluate(" ".join(tokens))


def nesting(text: str) -> int:
    """The deepest bracket nesting of a text."""
    depth = deepest = 0
    for token in text.split():
        depth += {"(": 1, ")": -1}.get(token, 0)
        deepest = max(deepest, depth)
    return deepest


def test_registered_with_the_family_shape() -> None:
    assert sorted(TASKS) == [1, 2, 3]
    for depth, task in TASKS.items():
        dataset = get_dataset(f"nested-ops-{depth}")
        assert (dataset.name, dataset.description) == (task.name, task.description)
        assert task.arity == ARITY[depth]
    with pytest.raises(ValueError, match="depth must be >= 1"):
        NestedOpsTask(depth=0, arity=2)


@pytest.mark.parametrize("depth", sorted(TASKS))
def test_deterministic_per_seed(depth: int) -> None:
    dataset = get_dataset(f"nested-ops-{depth}")
    first = dataset.generate(300, seed=3)
    assert first.equals(dataset.generate(300, seed=3))
    assert (first["text"] != dataset.generate(300, seed=4)["text"]).mean() > 0.95


@pytest.mark.parametrize("depth", sorted(TASKS))
def test_labels_are_the_value_balanced_over_ten_digits(tables: dict[int, pd.DataFrame], depth: int) -> None:
    table = tables[depth]
    assert (table["text"].map(evaluate).astype(str) == table["label"]).all()
    assert table["label"].value_counts().to_dict() == {str(digit): 300 for digit in range(10)}


@pytest.mark.parametrize("depth", sorted(TASKS))
def test_shape_is_fixed_short_and_varied(tables: dict[int, pd.DataFrame], depth: int) -> None:
    texts = tables[depth]["text"]
    arity = ARITY[depth]
    assert (texts.map(nesting) == depth).all()
    assert (texts.str.count(r"\d") == arity**depth).all()
    assert texts.str.split().str.len().max() <= 30
    assert text_keys(texts).duplicated().mean() < 0.01
    # Neither max nor min is drawn where its free arguments would take fewer than five digits.
    roots = texts.str.split().str[0]
    labels = tables[depth]["label"].astype(int)
    assert labels[roots == "max"].min() >= 4 and labels[roots == "min"].max() <= 5


@pytest.mark.parametrize("depth", sorted(TASKS))
def test_every_level_decides_the_label(tables: dict[int, pd.DataFrame], depth: int) -> None:
    # A solver that skips any one level (reads its operators as "first", or as "max")
    # is wrong on a large share of rows: no level can be left out.
    table = tables[depth]
    labels = table["label"].astype(int)
    for level in range(1, depth + 1):
        for operator in ("first", "max"):
            accuracy = (table["text"].map(lambda text, lv=level, op=operator: read_level_as(text, lv, op)) == labels)
            assert accuracy.mean() < 0.7, (level, operator, accuracy.mean())


@pytest.mark.parametrize("depth", [2, 3])
def test_a_bag_of_words_cannot_tell_the_levels_apart(tables: dict[int, pd.DataFrame], depth: int) -> None:
    # Swapping the outer operator with its first argument's operator keeps every token
    # (the same bag of words) but changes the value in a large share of rows.
    changed = []
    for text, label in zip(tables[depth]["text"], tables[depth]["label"], strict=True):
        tokens = text.split()
        inner = tokens.index("(") + 1  # the first argument's operator
        tokens[0], tokens[inner] = tokens[inner], tokens[0]
        assert sorted(tokens) == sorted(text.split())
        changed.append(evaluate(" ".join(tokens)) != int(label))
    assert np.mean(changed) > 0.35


def test_expression_has_the_requested_value_and_shape() -> None:
    rng = np.random.default_rng(0)
    for depth, arity in [(1, 2), (2, 4), (4, 2)]:
        for value in range(10):
            text = expression(rng, value, depth, arity)
            assert evaluate(text) == value
            assert nesting(text) == depth
            assert sum(token in OPERATORS for token in text.split()) == sum(arity**level for level in range(depth))
