"""A registered model of token labels read back by depthfinder: `predict` gives each text's tags and spans, and the
champion is scored on the rows added by entity F1 over its joined tags."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import mlflow
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from depthfinder.cli.main import main
from depthfinder.encoder.bundle import save_bundle
from depthfinder.encoder.serving import load_bundle, spans_of
from depthfinder.evidence.metrics import entity_metrics
from depthfinder.expectations.changes.compare import comparison_table
from depthfinder.expectations.changes.config import ChangesConfig
from depthfinder.selection.candidate import Candidate, Cost
from depthfinder.selection.settings import SelectionRule
from depthfinder.tasks.changes import score_champion
from depthfinder.tracking.registry import log_text_classifier, predict_labels, register_challenger, register_version
from depthfinder.tracking.runs import create_sweep_run
from tests.encoder.tiny_tokens import SENTENCES, TAGS, TEXTS, token_tokenizer, trained_tagger

# Sentences the tagger never saw: two tagged as it would tag them, and one whose names its tags miss.
ADDED = [("bob lives in new york", "B-PER O O B-LOC I-LOC"), ("anna met john smith in paris",
                                                               "B-PER O B-PER I-PER O B-LOC"),
         ("bob met anna", "O O O")]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A SQLite store whose model `tags` (version 1, champion) is a scratch tagger fitted to SENTENCES."""
    root = tmp_path_factory.mktemp("token-model")
    uri = f"sqlite:///{root}/mlflow.db"
    tokenizer = token_tokenizer()
    bundle = save_bundle(root / "bundle", trained_tagger(tokenizer), tokenizer, TAGS)
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    client = MlflowClient(tracking_uri=uri)
    experiment = client.create_experiment("tokens", artifact_location=(root / "artifacts").as_uri())
    with mlflow.start_run(experiment_id=experiment):
        register_version(client, log_text_classifier(bundle, input_example=TEXTS[:2]), "tags", {})
    client.set_registered_model_alias("tags", "champion", "1")
    try:
        yield uri, bundle
    finally:
        mlflow.set_tracking_uri(previous)


def test_predict_prints_each_texts_tags_and_spans_as_a_json_line(store, capsys) -> None:
    uri, bundle = store
    texts = [TEXTS[0], "nothing to see"]

    code = main(["predict", "--model", "models:/tags@champion", "--text", texts[0], "--text", texts[1],
                 "--tracking-uri", uri])

    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    tags = load_bundle(bundle).predict_tags(texts)
    assert code == 0
    assert lines == [{"tags": " ".join(words), "spans": spans_of(text, words)}
                     for text, words in zip(texts, tags, strict=True)]
    assert lines[0]["spans"] == [{"text": "anna smith", "type": "PER", "start": 0, "end": 10},
                                 {"text": "paris", "type": "LOC", "start": 20, "end": 25}]


def test_predict_writes_a_file_of_texts_as_csv_with_tags_and_spans_in_json(store, tmp_path: Path, capsys) -> None:
    uri, bundle = store
    (tmp_path / "in.csv").write_text("body\n" + "\n".join(TEXTS[:3]) + "\n")

    code = main(["predict", "--model", "models:/tags@champion", "--data", str(tmp_path / "in.csv"),
                 "--text-col", "body", "--tracking-uri", uri])

    out = pd.read_csv(io.StringIO(capsys.readouterr().out))
    tags = load_bundle(bundle).predict_tags(TEXTS[:3])
    assert code == 0
    assert out.columns.tolist() == ["tags", "spans", "text"]
    assert out["tags"].tolist() == [" ".join(words) for words in tags] and out["text"].tolist() == TEXTS[:3]
    assert [json.loads(cell) for cell in out["spans"]] == [spans_of(text, words)
                                                           for text, words in zip(TEXTS[:3], tags, strict=True)]


def test_the_champions_labels_are_its_joined_tags_per_row(store) -> None:
    texts = [text for text, _ in SENTENCES]

    assert predict_labels("models:/tags@champion", texts) == [tags for _, tags in SENTENCES]  # it learned them


def test_a_token_champion_is_scored_by_entity_f1_on_the_rows_added(store) -> None:
    champion = pd.DataFrame({"text": TEXTS, "label": [tags for _, tags in SENTENCES], "split": "test"})
    tonight = pd.concat([champion, pd.DataFrame({"text": [text for text, _ in ADDED], "label": [t for _, t in ADDED],
                                                 "split": "train"})], ignore_index=True)
    table = comparison_table(champion, tonight)

    scores = score_champion("models:/tags@champion", table, ChangesConfig(), "entity_f1")

    added = table.index[-len(ADDED):]
    said = [scores.predicted[row] for row in added]
    assert all(len(tags.split()) == len(text.split()) for tags, (text, _) in zip(said, ADDED, strict=True))
    assert scores.metric == "entity_f1" and scores.new_rows == len(ADDED)
    assert scores.on_new == entity_metrics([tags for _, tags in ADDED], said)["entity_f1"]
    assert 0 < scores.on_new < 1 and scores.on_test == 1.0  # its own test rows: the sentences it learned


def test_a_registered_model_of_token_labels_records_tags_and_spans_as_its_outputs(store, tmp_path: Path) -> None:
    uri, bundle = store
    pd.DataFrame({"text": TEXTS, "label": [tags for _, tags in SENTENCES]}).to_parquet(tmp_path / "table.parquet")
    sweep = create_sweep_run(uri, "ner", "ner", "sweep", params={}, tags={})
    candidate = Candidate(depth=1, status="trained", bundle=str(bundle), cost=Cost(flops_per_example=1e6))
    rule = SelectionRule(metric="entity_f1", tolerance=0.01, cost="flops_per_example")

    registration = register_challenger(sweep, candidate, str(tmp_path / "table.parquet"), TEXTS,
                                       [tags for _, tags in SENTENCES], "ner", rule, {})

    assert registration.model.outputs == ["tags", "spans"]
    assert registration.promoted and registration.challenger_test_metrics["entity_f1"] == 1.0
