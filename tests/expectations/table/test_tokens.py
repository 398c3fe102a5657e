"""Token labels read from CoNLL and from tables of token and tag lists into one row per sentence; every bad input is
one line naming the sentence or line at fault; the built-in tagged dataset's tags are right by construction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from depthfinder.expectations.table.config import DataConfig
from depthfinder.expectations.table.datasets import _EITHER, _PEOPLE, _PLACES, DATASETS
from depthfinder.expectations.table.load import load_table
from tests.expectations.table.test_load import bad_input

CONLL = """-DOCSTART- -X- -X- O

EU NNP B-NP B-ORG
rejects VBZ B-VP O
German JJ B-NP B-MISC

Peter NNP B-NP B-PER
Blackburn NNP I-NP I-PER
"""


def test_a_conll_file_is_one_row_per_sentence_with_its_tokens_and_last_field_tags(tmp_path: Path) -> None:
    path = tmp_path / "train.conll"
    path.write_text(CONLL, encoding="utf-8")
    table = load_table(DataConfig(path=path, task="tokens"))
    assert table["tokens"].tolist() == [["EU", "rejects", "German"], ["Peter", "Blackburn"]]
    assert table["tags"].tolist() == [["B-ORG", "O", "B-MISC"], ["B-PER", "I-PER"]]
    assert table["text"].tolist() == ["EU rejects German", "Peter Blackburn"]
    assert table["label"].tolist() == ["B-ORG O B-MISC", "B-PER I-PER"]
    assert table["row"].tolist() == [0, 1]


def test_a_jsonl_table_of_token_and_tag_lists_keeps_its_split_and_other_columns(tmp_path: Path) -> None:
    path = tmp_path / "tagged.jsonl"
    rows = [{"words": ["Ada", "wrote"], "ner": ["S-PER", "O"], "part": "train", "source": "a"},
            {"words": ["in", "New", "York", "City"], "ner": ["O", "B-LOC", "I-LOC", "E-LOC"], "part": "test",
             "source": "b"}]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    table = load_table(DataConfig(path=path, task="tokens", tokens_col="words", tags_col="ner", split_col="part"))
    assert list(table.columns) == ["tokens", "tags", "text", "label", "split", "row", "source"]
    assert table["split"].tolist() == ["train", "test"] and table["source"].tolist() == ["a", "b"]
    assert table["tags"].tolist()[1] == ["O", "B-LOC", "I-LOC", "E-LOC"]


@pytest.mark.parametrize(("name", "content", "options", "expected"), [
    ("a.conll", "EU B-ORG\nrejects\n", {}, "line 2 holds one field ('rejects'); a CoNLL line is a token and its tag"),
    ("a.conll", "EU B-ORG\nrejects U-ORG\n", {}, "sentence 0 token 1 has tag 'U-ORG', which is not BIO or BIOES"),
    ("a.conll", "EU ORG\n", {}, "sentence 0 token 0 has tag 'ORG', which is not BIO or BIOES"),
    ("a.conll", "-DOCSTART- O\n\n", {}, "no sentence"),
    ("a.jsonl", '{"tokens": ["a", "b"], "tags": ["O"]}\n', {}, "sentence 0 has 2 tokens but 1 tags"),
    ("a.jsonl", '{"tokens": [], "tags": []}\n', {}, "sentence 0 has no tokens"),
    ("a.jsonl", '{"tokens": "a b", "tags": ["O", "O"]}\n', {}, "column 'tokens' sentence 0 is not a list of strings"),
    ("a.jsonl", '{"words": ["a"], "tags": ["O"]}\n', {}, "no column 'tokens' (columns: words, tags); set --tokens-col"),
])
def test_bad_token_input_is_one_line_naming_it(tmp_path: Path, name: str, content: str, options: dict,
                                               expected: str) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    assert expected in bad_input(path, task="tokens", **options)


def test_a_conll_file_without_the_tokens_task_is_told_of_it(tmp_path: Path) -> None:
    path = tmp_path / "train.conll"
    path.write_text(CONLL, encoding="utf-8")
    assert "a CoNLL file holds a tag per token: pass --task tokens" in bad_input(path)


def test_names_in_context_tags_each_name_by_the_words_around_it() -> None:
    table = DATASETS["names-in-context"].generate(1000, 2)
    kinds: dict[str, set[str]] = {}
    for tokens, tags in zip(table["tokens"], table["tags"], strict=True):
        assert len(tokens) == len(tags)
        for position, (token, tag) in enumerate(zip(tokens, tags, strict=True)):
            if tag.startswith("B-"):
                kinds.setdefault(token, set()).add(tag[2:])
            if tag.startswith("I-"):  # BIO: an I- continues the mention before it
                assert tags[position - 1][2:] == tag[2:]
    assert all(kinds[name] == {"PER"} for name in _PEOPLE if name in kinds)
    assert all(kinds[name] == {"LOC"} for name in _PLACES if name in kinds)
    assert all(kinds[name] == {"PER", "LOC"} for name in _EITHER)  # the same word, two types: context decides
    assert table.equals(DATASETS["names-in-context"].generate(1000, 2))
