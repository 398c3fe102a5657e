"""The registry lifecycle against a throwaway SQLite tracking store.

One module-scoped fixture plays three nights: a mediocre first model (always "pos"), a worse
challenger (always "neg") and a trained, better one. Each test reads one part of the story.
Logging + registering one model on SQLite takes about a second; the module takes a few.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import mlflow
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from depthfinder.encoder.bundle import save_bundle
from depthfinder.encoder.serving import texts_from_input
from depthfinder.evidence.metrics import classification_metrics
from depthfinder.selection.settings import SelectionRule
from depthfinder.tracking.history import MOVE_PREFIX, alias_history, history_problems, holder_at, read_move
from depthfinder.tracking.registry import (
    CHALLENGER,
    CHAMPION,
    PREVIOUS_CHAMPION,
    current_champion,
    log_text_classifier,
    mark_challenger,
    predict_labels,
    promote_if_better,
    record_judgement,
    register_version,
)
from tests.encoder.tiny_models import LABELS, constant_network, tiny_tokenizer, trained_network

MODEL_NAME = "depthfinder-test"
# Imbalanced on purpose: always-"pos" scores macro-F1 0.43 here, always-"neg" only 0.2; ten copies, so that the
# paired bootstrap that judges a challenger has rows enough to show one worse.
TEST_TEXTS = ["great fun", "a great cast", "great music and acting", "an awful mess"] * 10
TEST_LABELS = ["pos", "pos", "pos", "neg"] * 10


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MlflowClient]:
    """A fresh SQLite tracking store and registry; artifacts stay under the temporary folder."""
    root = tmp_path_factory.mktemp("mlflow")
    uri = f"sqlite:///{root}/mlflow.db"
    previous_uri = mlflow.get_tracking_uri()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("MLFLOW_ALLOW_PICKLE_DESERIALIZATION", "false")  # the model must load without pickle
        env.setenv("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
        mlflow.set_tracking_uri(uri)
        try:
            yield MlflowClient(tracking_uri=uri)
        finally:
            mlflow.set_tracking_uri(previous_uri)


@pytest.fixture(scope="module")
def nights(client: MlflowClient, tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """Register three challengers in turn, scoring each against the champion as the retrain flow does."""
    root = tmp_path_factory.mktemp("bundles")
    tokenizer = tiny_tokenizer()
    networks = [constant_network(tokenizer, "pos"), constant_network(tokenizer, "neg"), trained_network(tokenizer)]
    experiment_id = client.create_experiment("registry-test", artifact_location=(root / "artifacts").as_uri())
    results = []
    for night, network in enumerate(networks, start=1):
        bundle = save_bundle(root / f"night-{night}", network, tokenizer, LABELS)
        with mlflow.start_run(experiment_id=experiment_id):
            model_uri = log_text_classifier(bundle, input_example=TEST_TEXTS[:2])
        champion_before = current_champion(client, MODEL_NAME)
        challenger = register_version(client, model_uri, MODEL_NAME, {"depth": "1", "night": str(night)})
        challenger_metrics = classification_metrics(TEST_LABELS, predict_labels(model_uri, TEST_TEXTS))
        champion_metrics = champion_labels = None
        if champion_before is not None:
            champion_labels = predict_labels(f"models:/{MODEL_NAME}@{CHAMPION}", TEST_TEXTS)
            champion_metrics = classification_metrics(TEST_LABELS, champion_labels)
        promoted = promote_if_better(
            client, MODEL_NAME, challenger, TEST_LABELS, predict_labels(model_uri, TEST_TEXTS), champion_labels,
            SelectionRule(promotion_margin=0.0),
        ).promoted
        mark_challenger(client, MODEL_NAME, challenger, "promoted" if promoted else "kept out")
        record_judgement(client, MODEL_NAME, challenger.version, promoted)
        results.append({
            "model_uri": model_uri, "version": str(challenger.version), "challenger": challenger,
            "challenger_metrics": challenger_metrics, "champion_metrics": champion_metrics, "promoted": promoted,
            # Versions come back as int from the SQL store (str elsewhere): compare as str.
            "aliases": {alias: str(v) for alias, v in client.get_registered_model(MODEL_NAME).aliases.items()},
        })
    return results


def test_first_registration_becomes_champion(nights: list[dict[str, Any]]) -> None:
    first = nights[0]
    assert first["champion_metrics"] is None
    assert first["promoted"]
    assert first["aliases"] == {CHALLENGER: first["version"], CHAMPION: first["version"]}


def test_worse_challenger_is_not_promoted_and_champion_stays(nights: list[dict[str, Any]]) -> None:
    first, second = nights[0], nights[1]
    assert second["challenger_metrics"]["macro_f1"] == pytest.approx(0.2)
    assert second["champion_metrics"]["macro_f1"] == pytest.approx(6 / 14)  # always "pos": F1 6/7 and 0
    assert not second["promoted"]
    assert second["aliases"] == {CHALLENGER: second["version"], CHAMPION: first["version"]}


def test_better_challenger_is_promoted_and_old_champion_becomes_previous(nights: list[dict[str, Any]]) -> None:
    first, third = nights[0], nights[2]
    assert third["challenger_metrics"]["macro_f1"] == pytest.approx(1.0)
    assert third["promoted"]
    assert third["aliases"] == {CHALLENGER: third["version"], CHAMPION: third["version"],
                                PREVIOUS_CHAMPION: first["version"]}


def test_champion_loads_by_alias_and_predicts_labels(client: MlflowClient, nights: list[dict[str, Any]]) -> None:
    model = mlflow.pyfunc.load_model(f"models:/{MODEL_NAME}@{CHAMPION}")
    predictions = model.predict(pd.DataFrame({"text": TEST_TEXTS}))
    assert list(predictions.columns) == ["label", "confidence", "proba_neg", "proba_pos"]
    assert predictions["label"].tolist() == TEST_LABELS
    assert set(predictions["label"]) <= set(LABELS)
    assert predictions[["proba_neg", "proba_pos"]].sum(axis=1).tolist() == pytest.approx([1.0] * len(TEST_TEXTS))
    assert (predictions["confidence"] >= 0.5).all()
    from_series = model.predict(pd.Series(TEST_TEXTS, name="text"))
    pd.testing.assert_frame_equal(from_series, predictions)


def test_model_input_may_be_a_frame_a_series_or_a_list() -> None:
    texts = ["great fun", "an awful mess"]
    assert texts_from_input(pd.DataFrame({"text": texts, "id": [1, 2]})) == texts
    assert texts_from_input(pd.Series(texts)) == texts
    assert texts_from_input(texts) == texts
    with pytest.raises(ValueError, match=r"needs a 'text' column, got columns \['review'\]"):
        texts_from_input(pd.DataFrame({"review": texts}))
    with pytest.raises(ValueError, match="text in row 1 is None"):
        texts_from_input(["great fun", None])


def test_logged_model_is_code_with_explicit_signature_not_a_pickle(nights: list[dict[str, Any]]) -> None:
    model_dir = Path(mlflow.artifacts.download_artifacts(nights[0]["model_uri"]))
    assert not list(model_dir.rglob("*.pkl"))
    assert (model_dir / "pyfunc.py").is_file()
    info = mlflow.models.get_model_info(nights[0]["model_uri"])
    assert info.signature.inputs.input_names() == ["text"]
    assert info.signature.outputs.input_names() == ["label", "confidence", "proba_neg", "proba_pos"]
    assert info.saved_input_example_info["type"] == "dataframe"


def test_versions_carry_their_tags(client: MlflowClient, nights: list[dict[str, Any]]) -> None:
    for night, result in enumerate(nights, start=1):
        tags = client.get_model_version(MODEL_NAME, result["version"]).tags
        judged = "promoted" if result["promoted"] else "not promoted"
        assert tags == {"depth": "1", "night": str(night), "judged": judged}
    assert nights[0]["challenger"].tags == {"depth": "1", "night": "1", "judged": "pending"}  # until judged


def test_current_champion_is_none_without_model_or_alias(client: MlflowClient, nights: list[dict[str, Any]]) -> None:
    assert current_champion(client, "no-such-model") is None
    client.create_registered_model("no-champion-yet")
    assert current_champion(client, "no-champion-yet") is None
    assert str(current_champion(client, MODEL_NAME).version) == nights[2]["version"]


def test_registering_through_a_client_of_another_store_than_the_global_one(
    client: MlflowClient, nights: list[dict[str, Any]], tmp_path: Path
) -> None:
    tracking_uri = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/never-opened.db")
    try:
        version = register_version(client, nights[2]["model_uri"], "other-store", {"depth": "1"})
    finally:
        mlflow.set_tracking_uri(tracking_uri)
    assert not (tmp_path / "never-opened.db").exists()
    predictions = mlflow.pyfunc.load_model(f"models:/other-store/{version.version}").predict(
        pd.DataFrame({"text": TEST_TEXTS})
    )
    assert predictions["label"].tolist() == TEST_LABELS


def test_logging_needs_an_active_run(client: MlflowClient, tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="needs an active MLflow run"):
        log_text_classifier(tmp_path, input_example=["great"])


# Promotion history. These run last: the rollbacks move the aliases (and move them back).

def test_every_alias_move_is_recorded_in_order_with_its_reason_and_run(
    client: MlflowClient, nights: list[dict[str, Any]]
) -> None:
    versions = [night["version"] for night in nights]
    runs = [night["challenger"].run_id for night in nights]
    moves = alias_history(client, MODEL_NAME)
    assert [(m.alias, m.version, m.previous, m.run_id) for m in moves] == [
        (CHAMPION, versions[0], None, runs[0]), (CHALLENGER, versions[0], None, runs[0]),
        (CHALLENGER, versions[1], versions[0], runs[1]),  # night 2: not promoted
        (PREVIOUS_CHAMPION, versions[0], None, runs[2]), (CHAMPION, versions[2], versions[0], runs[2]),
        (CHALLENGER, versions[2], versions[1], runs[2]),
    ]
    assert [m.seq for m in moves] == list(range(1, 7))
    assert [m.time for m in moves] == sorted(m.time for m in moves)
    assert moves[0].reason == "no champion yet"
    assert moves[4].reason.startswith("challenger +0.571 [+0.537, +0.614] vs champion on 40 test rows")  # the evidence
    assert moves[2].reason == "judged against the champion: kept out"
    assert history_problems(client, MODEL_NAME, moves) == []


def test_the_history_reads_as_lines_in_the_registered_models_tags_and_json_tags_of_before_still_read(
    client: MlflowClient, nights: list[dict[str, Any]]
) -> None:
    """The MLflow UI shows a registered model's tags as they are: each move is a line a reviewer reads, not JSON."""
    tags = client.get_registered_model(MODEL_NAME).tags
    moves = alias_history(client, MODEL_NAME)
    lines = [tags[f"{MOVE_PREFIX}{move.seq:06d}"] for move in moves]

    assert lines[0].startswith(f"champion → version {nights[0]['version']} (was none), ")
    assert lines[0].endswith(f", run {nights[0]['challenger'].run_id}: no champion yet")
    assert lines[4].startswith(f"champion → version {nights[2]['version']} (was {nights[0]['version']}), ")
    assert not any(line.lstrip().startswith("{") for line in lines)
    assert [read_move(move.seq, line) for move, line in zip(moves, lines, strict=True)] == moves
    assert read_move(1, json.dumps(moves[0].to_dict())) == moves[0]  # a tag an earlier release wrote


def test_the_champion_at_a_moment_is_the_last_move_before_it(client: MlflowClient, nights) -> None:
    moves = alias_history(client, MODEL_NAME)
    first, third = moves[0], moves[4]
    assert holder_at(moves, CHAMPION, first.time - timedelta(seconds=1)) is None
    assert holder_at(moves, CHAMPION, first.time).version == nights[0]["version"]
    assert holder_at(moves, CHAMPION, third.time - timedelta(microseconds=1)).version == nights[0]["version"]
    assert holder_at(moves, CHAMPION, third.time + timedelta(days=1)).version == nights[2]["version"]


def test_rollback_moves_champion_back_and_loses_cleanly_to_a_running_retrain(
    client: MlflowClient, nights: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    from depthfinder.cli.main import main
    from depthfinder.runtime.lock import holding_now

    first, third = nights[0]["version"], nights[2]["version"]
    where = ["--model", MODEL_NAME, "--tracking-uri", mlflow.get_tracking_uri(), "--workdir", str(tmp_path)]
    before = alias_history(client, MODEL_NAME)
    with holding_now(MODEL_NAME, tmp_path):  # a retrain, about to promote, holds the model's lock
        assert main(["rollback", *where]) == 1
    assert "not rolled back: a retrain of 'depthfinder-test' is running (" in capsys.readouterr().err
    assert alias_history(client, MODEL_NAME) == before  # nothing moved, nothing recorded

    assert main(["rollback", *where, "--reason", "bad answers in production"]) == 0
    aliases = {alias: str(v) for alias, v in client.get_registered_model(MODEL_NAME).aliases.items()}
    assert (aliases[CHAMPION], aliases[PREVIOUS_CHAMPION]) == (first, third)
    champion_move, previous_move = alias_history(client, MODEL_NAME)[-2:]
    assert (champion_move.alias, champion_move.version, champion_move.previous) == (CHAMPION, first, third)
    assert champion_move.reason == f"rollback from version {third}: bad answers in production"
    assert champion_move.run_id is None and "@" in champion_move.by
    assert (previous_move.alias, previous_move.version) == (PREVIOUS_CHAMPION, third)

    capsys.readouterr()
    assert main(["history", *where[:4], "--at", f"{champion_move.time:%Y-%m-%dT%H:%M:%S.%f%z}"]) == 0
    assert capsys.readouterr().out.startswith(f"Version {first} of {MODEL_NAME} was champion at ")
    assert main(["rollback", *where]) == 0  # and back: a rollback is a move like any other
    assert str(client.get_registered_model(MODEL_NAME).aliases[CHAMPION]) == third
    assert capsys.readouterr().out.startswith(f"Champion of {MODEL_NAME} is version {third} again (was {first})")
    assert main(["history", *where[:4]]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[:5] == ["#", "time", "(UTC)", "alias", "version"] and len(table) == 1 + 10
    assert main(["history", "--model", "nobody", "--tracking-uri", mlflow.get_tracking_uri()]) == 2
    assert "no registered model 'nobody'" in capsys.readouterr().err
