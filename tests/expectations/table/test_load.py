from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from depthfinder.expectations.table.config import DataConfig
from depthfinder.expectations.table.load import load_table


def load(path: Path, **options: object) -> pd.DataFrame:
    """load_table for a file path."""
    return load_table(DataConfig(path=path, **options))


def bad_input(path: Path, **options: object) -> str:
    """The ValueError message load_table raises; it must be one line."""
    with pytest.raises(ValueError) as error:
        load(path, **options)
    message = str(error.value)
    assert "\n" not in message
    return message


def test_csv_gives_the_canonical_frame(tmp_path: Path) -> None:
    path = tmp_path / "data.csv"
    content = 'text,label,source\n"Great, really",1,web\nNA,0,app\n,1,web\n"two\nlines",0,app\n'
    path.write_text(content, encoding="utf-8")
    table = load(path)
    assert list(table.columns) == ["text", "label", "row", "source"]
    assert table["text"].tolist() == ["Great, really", "NA", "", "two\nlines"]
    assert table["label"].tolist() == ["1", "0", "1", "0"]
    assert table["row"].tolist() == [0, 1, 2, 3]
    assert table["source"].tolist() == ["web", "app", "web", "app"]


def test_csv_with_other_column_names_and_split(tmp_path: Path) -> None:
    path = tmp_path / "data.csv"
    path.write_text("review,stars,part\ngood,5,train\nbad,1, test\nok,3,val\n", encoding="utf-8")
    table = load(path, text_col="review", label_col="stars", split_col="part")
    assert list(table.columns) == ["text", "label", "split", "row"]
    assert table["split"].tolist() == ["train", "test", "val"]
    assert table["label"].tolist() == ["5", "1", "3"]


def test_tsv(tmp_path: Path) -> None:
    path = tmp_path / "data.tsv"
    path.write_text("text\tlabel\nhello, world\tham\nwin cash\tspam\n", encoding="utf-8")
    assert load(path)["text"].tolist() == ["hello, world", "win cash"]


def test_parquet_int_labels_become_strings(tmp_path: Path) -> None:
    path = tmp_path / "data.parquet"
    pd.DataFrame({"text": ["a", "b", None], "label": [0, 1, 1], "id": [7, 8, 9]}).to_parquet(path)
    table = load(path)
    assert table["label"].tolist() == ["0", "1", "1"]
    assert table["text"].tolist() == ["a", "b", ""]
    assert table["id"].tolist() == [7, 8, 9]


def test_jsonl_with_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    lines = [json.dumps({"text": "good", "label": 1}), "", json.dumps({"text": 42, "label": 0, "meta": "x"})]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    table = load(path)
    assert table["text"].tolist() == ["good", "42"]
    assert table["label"].tolist() == ["1", "0"]
    assert table["row"].tolist() == [0, 1]


def test_builtin_dataset(tmp_path: Path) -> None:
    table = load_table(DataConfig(dataset="topics", dataset_rows=50, seed=3))
    assert len(table) == 50 and {"text", "label", "row"} <= set(table.columns)


@pytest.mark.parametrize(
    ("name", "content", "options", "expected"),
    [
        ("data.xlsx", b"whatever", {}, "unknown file type '.xlsx'"),
        ("data.csv", b"body,label\nhi,a\n", {}, "no column 'text' (columns: body, label)"),
        ("data.csv", b"text,target\nhi,a\n", {}, "no column 'label' (columns: text, target)"),
        ("data.csv", b"text,label\nhi,a\n", {"split_col": "fold"}, "no column 'fold'"),
        ("data.csv", b"text,label\n", {}, "no rows"),
        ("data.csv", b"", {}, "file is empty"),
        ("data.csv", b"text,label\na,x\nb,x\n", {}, "single class 'x'"),
        ("data.csv", b"text,label\na,x\nb,\nc,y\nd, \n", {},
         "2 of 4 rows have no label in column 'label' (first rows: 1, 3)"),
        ("data.csv", b"text,label\ncaf\xe9,x\nb,y\n", {}, "not UTF-8: byte 0xe9 at offset 14 (line 2)"),
        ("data.csv", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", {}, "looks binary (NUL byte at offset 8)"),
        ("data.csv", b"text,label\na,x,extra\nb,y\n", {}, "CSV file: row 0 has 3 fields, the header has 2"),
        ("data.csv", b"text,label\nb,y\na,x,extra\n", {}, "Expected 2 fields in line 3, saw 3"),
        ("data.csv", b"text,label,split\na,x,train\nb,y,dev\n", {"split_col": "split"}, "row 1 = 'dev'"),
        ("data.csv", b"text,label,split\na,x,train\nb,y,test\n", {}, "column 'split' clashes"),
        ("data.jsonl", b'{"text": "a", "label": "x"}\n{"text": "b", label}\n', {}, "line 2 is not valid JSON"),
        ("data.jsonl", b'["a", "x"]\n', {}, "line 1 is a JSON list; expected an object"),
        ("data.jsonl", b'{"text": ["a"], "label": "x"}\n{"text": "b", "label": "y"}\n', {}, "row 0 holds a list"),
        ("data.parquet", b"this is not parquet", {}, "not a readable Parquet file"),
    ],
)
def test_bad_input_is_one_clear_line(
    tmp_path: Path, name: str, content: bytes, options: dict, expected: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    message = bad_input(path, **options)
    assert expected in message
    assert str(path) in message


def test_missing_file(tmp_path: Path) -> None:
    assert "no such file" in bad_input(tmp_path / "nope.csv")


def test_nan_labels_in_parquet(tmp_path: Path) -> None:
    path = tmp_path / "data.parquet"
    pd.DataFrame({"text": ["a", "b", "c"], "label": [1.0, None, 0.0]}).to_parquet(path)
    assert "1 of 3 rows have no label" in bad_input(path)


def test_unknown_dataset() -> None:
    with pytest.raises(ValueError, match="unknown dataset .nope.; expected one of: names-in-context, .*, topics"):
        load_table(DataConfig(dataset="nope"))
