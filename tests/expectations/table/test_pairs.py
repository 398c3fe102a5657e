"""A pairs table: two text columns and a label per pair, read into `text` and `pair`; each bad input is one line
naming what is wrong; the built-in pair dataset's label needs both sides."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from pydantic import ValidationError

from depthfinder.expectations.table.config import DataConfig
from depthfinder.expectations.table.datasets import _TOPICS, DATASETS
from depthfinder.expectations.table.load import load_table
from depthfinder.expectations.table.shape import input_columns, model_inputs, side_texts
from tests.expectations.table.test_load import bad_input


def write(folder: Path, rows: str) -> Path:
    path = folder / "pairs.csv"
    path.write_text(rows, encoding="utf-8")
    return path


def test_a_pair_file_reads_both_texts_under_their_own_columns(tmp_path: Path) -> None:
    path = write(tmp_path, "question,answer,label,source\nIs it on?,Yes it is.,match,web\nWhere?,At noon.,other,app\n")
    table = load_table(DataConfig(path=path, task="pairs", text_col="question", pair_col="answer"))
    assert list(table.columns) == ["text", "pair", "label", "row", "source"]
    assert model_inputs(table) == [("Is it on?", "Yes it is."), ("Where?", "At noon.")]
    assert side_texts(table) == ["Is it on?", "Where?", "Yes it is.", "At noon."]
    assert input_columns(table) == ["text", "pair"]


def test_a_classify_table_reads_one_text_whatever_else_it_holds(tmp_path: Path) -> None:
    path = write(tmp_path, "text,label,answer\nIs it on?,match,Yes\nWhere?,other,No\n")
    table = load_table(DataConfig(path=path))
    assert model_inputs(table) == ["Is it on?", "Where?"] and input_columns(table) == ["text"]


@pytest.mark.parametrize(("rows", "options", "expected"), [
    ("text,label\na,x\nb,y\n", {}, "no column 'pair' (columns: text, label); set --pair-col"),
    ("q,a,label\na,b,x\nb,c,y\n", {"text_col": "q", "pair_col": "q"},
     "--text-col and --pair-col both name column 'q'; a pair is two columns"),
    ("text,pair,label\na,7,x\nb,8,y\n", {}, "column 'pair' holds only numbers"),
])
def test_bad_pair_input_is_one_line_naming_it(tmp_path: Path, rows: str, options: dict, expected: str) -> None:
    assert expected in bad_input(write(tmp_path, rows), task="pairs", **options)


def test_a_classify_file_with_a_pair_column_is_told_of_the_pairs_task(tmp_path: Path) -> None:
    message = bad_input(write(tmp_path, "text,pair,label\na,b,x\nb,c,y\n"))
    assert "column 'pair' clashes with a column depthfinder writes" in message and "--task pairs" in message


def test_a_builtin_dataset_of_pairs_needs_the_pairs_task() -> None:
    with pytest.raises(ValidationError, match="dataset 'same-topic' holds pairs examples: pass --task pairs"):
        DataConfig(dataset="same-topic")
    with pytest.raises(ValidationError, match="dataset 'topics' holds classify examples: pass --task classify"):
        DataConfig(dataset="topics", task="pairs")


def topic_of(sentence: str) -> str:
    """The topic whose agents' vocabulary the generated sentence uses."""
    lowered = sentence.lower()
    return next(topic for topic, (_, agents, _, _) in _TOPICS.items() if any(agent in lowered for agent in agents))


def test_same_topic_is_labelled_by_both_sides_and_by_neither_alone() -> None:
    table = DATASETS["same-topic"].generate(2000, 3)
    assert list(table.columns) == ["text", "pair", "label"]
    first, second = table["text"].map(topic_of), table["pair"].map(topic_of)
    assert ((first == second) == (table["label"] == "same")).all()  # the right answer is known
    assert table["label"].value_counts().to_dict() == {"same": 1000, "different": 1000}
    for side in (first, second):  # a side's topic says nothing of the label: each topic's share of "same" is ~1/2
        shares = pd.crosstab(side, table["label"], normalize="index")["same"]
        assert shares.between(0.4, 0.6).all(), shares
    assert DATASETS["same-topic"].generate(50, 3).equals(DATASETS["same-topic"].generate(50, 3))
