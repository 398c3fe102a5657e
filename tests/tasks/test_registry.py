"""The registry task: champion moves last, and the champion answers the MLflow scoring server."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from mlflow import MlflowClient

from depthfinder.encoder.bundle import save_bundle
from depthfinder.selection.candidate import Candidate, Cost
from depthfinder.selection.settings import SelectionRule
from depthfinder.tasks.data import PreparedData
from depthfinder.tasks.registry import register_model
from depthfinder.tracking.runs import create_sweep_run
from tests.encoder.tiny_models import LABELS, TRAIN_LABELS, TRAIN_TEXTS, constant_network, tiny_tokenizer

RULE = SelectionRule(metric="macro_f1", tolerance=0.01, cost="flops_per_example")


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    """A registry whose champion (version 1) predicts 'pos' for everything."""
    folder = tmp_path_factory.mktemp("registry")
    frame = pd.DataFrame({"text": TRAIN_TEXTS, "label": TRAIN_LABELS, "split": "test"})
    frame.to_parquet(folder / "data.parquet")
    dataset = PreparedData(str(folder / "data.parquet"), "hash", "table", len(frame), LABELS)
    tokenizer = tiny_tokenizer()
    bundles = {
        label: str(save_bundle(folder / label, constant_network(tokenizer, label), tokenizer, LABELS))
        for label in LABELS
    }
    sweep = create_sweep_run(f"sqlite:///{folder / 'mlflow.db'}", "exp", "m", "sweep", params={}, tags={})
    first = register_model.fn(_candidate(bundles["pos"]), dataset, sweep, "m", RULE, {"depth": "1"})
    return folder, dataset, sweep, bundles, first


def _candidate(bundle: str, flops: float = 1e6) -> Candidate:
    return Candidate(depth=1, status="trained", bundle=bundle, cost=Cost(flops_per_example=flops))


def test_first_registration_becomes_champion_with_its_cost_tagged(registry) -> None:
    _, _, sweep, _, first = registry
    version = sweep.client.get_model_version_by_alias("m", "champion")

    assert first.promoted is True and first.promotion == "no champion yet"
    assert str(version.version) == "1"
    assert float(version.tags["cost.flops_per_example"]) == 1e6


def test_a_failure_before_the_verdict_leaves_the_aliases_alone_and_no_unjudged_version(registry, monkeypatch) -> None:
    """A version that was never judged against the champion (evaluation crashed, or the run was
    stopped) is removed again: a nightly rerun must not take it for a challenger that lost."""
    _, dataset, sweep, bundles, _ = registry
    import depthfinder.tracking.registry

    def broken_scoring(model_uri, texts):
        raise RuntimeError(f"scoring of {model_uri} crashed")

    monkeypatch.setattr(depthfinder.tracking.registry, "predict_labels", broken_scoring)
    with pytest.raises(RuntimeError, match="crashed"):
        register_model.fn(_candidate(bundles["neg"], flops=1.0), dataset, sweep, "m", RULE, {"depth": "1"})

    client: MlflowClient = sweep.client
    assert str(client.get_model_version_by_alias("m", "champion").version) == "1"
    assert str(client.get_model_version_by_alias("m", "challenger").version) == "1"
    assert [str(v.version) for v in client.search_model_versions("name='m'")] == ["1"]


def test_the_champion_answers_the_scoring_server_with_raw_text(registry) -> None:
    """The app `mlflow models serve -m models:/m@champion` runs, driven in-process."""
    import mlflow
    from fastapi.testclient import TestClient
    from mlflow.pyfunc import scoring_server

    _, _, sweep, _, _ = registry
    mlflow.set_tracking_uri(sweep.tracking_uri)
    app = scoring_server.init(mlflow.pyfunc.load_model("models:/m@champion"))

    response = TestClient(app).post(
        "/invocations",
        content=json.dumps({"dataframe_records": [{"text": "a great film"}, {"text": "awful"}]}),
        headers={"Content-Type": "application/json"},
    )

    assert response.status_code == 200, response.text
    predictions = response.json()["predictions"]
    assert [row["label"] for row in predictions] == ["pos", "pos"]  # the champion says 'pos' to everything


def test_cli_predict_reads_a_file_of_texts(registry, tmp_path: Path, capsys) -> None:
    from depthfinder.cli.main import main

    folder, _, sweep, _, _ = registry
    (tmp_path / "in.csv").write_text("body\nnot bad\ngreat\n")

    code = main(["predict", "--model", "models:/m@champion", "--data", str(tmp_path / "in.csv"),
                 "--text-col", "body", "--tracking-uri", sweep.tracking_uri])

    out = pd.read_csv(__import__("io").StringIO(capsys.readouterr().out))
    assert code == 0
    assert out["label"].tolist() == ["pos", "pos"] and out["text"].tolist() == ["not bad", "great"]


def test_a_champion_that_spells_a_class_otherwise_is_scored_by_the_class(tmp_path: Path, monkeypatch) -> None:
    """A champion trained before labels were normalised may answer 'pos\u200b' for the class 'pos': that is right."""
    import depthfinder.tracking.registry

    frame = pd.DataFrame({"text": TRAIN_TEXTS, "label": TRAIN_LABELS, "split": "test"})
    frame.to_parquet(tmp_path / "data.parquet")
    dataset = PreparedData(str(tmp_path / "data.parquet"), "hash", "table", len(frame), LABELS)
    tokenizer = tiny_tokenizer()
    bundle = str(save_bundle(tmp_path / "pos", constant_network(tokenizer, "pos"), tokenizer, LABELS))
    sweep = create_sweep_run(f"sqlite:///{tmp_path / 'mlflow.db'}", "exp", "m", "sweep", params={}, tags={})
    register_model.fn(_candidate(bundle), dataset, sweep, "m", RULE, {"depth": "1"})
    truth = dict(zip(TRAIN_TEXTS, TRAIN_LABELS, strict=True))

    def predict(model_uri: str, texts: list[str]) -> list[str]:
        champion = model_uri == "models:/m/1"
        return [truth[text] + ("\u200b" if champion else "") for text in texts]

    monkeypatch.setattr(depthfinder.tracking.registry, "predict_labels", predict)
    second = register_model.fn(_candidate(bundle, flops=1.0), dataset, sweep, "m", RULE, {"depth": "1"})

    assert second.champion_test_metrics is not None and second.champion_test_metrics["accuracy"] == 1.0


def test_the_deployment_gate_follows_the_deployment_margin_not_the_depth_tolerance(registry, tmp_path: Path,
                                                                                   monkeypatch) -> None:
    """An int8 variant 0.03 below the torch model on every metric: a loose depth tolerance does not ship it
    through a strict deployment margin, and a loose deployment margin ships it whatever the depth tolerance."""
    import depthfinder.encoder.deployment
    from depthfinder.tasks.registry import prepare_deployment

    _, dataset, _, bundles, _ = registry
    judged = depthfinder.encoder.deployment.apply_gate

    def int8_loses_003(measured, metric, margin, note, *rest):
        int8 = measured["onnx-int8"]
        lower = int8.model_copy(update={"metrics": {key: value - 0.03 for key, value in int8.metrics.items()}})
        return judged({**measured, "onnx-int8": lower}, metric, margin, note, *rest)

    monkeypatch.setattr(depthfinder.encoder.deployment, "apply_gate", int8_loses_003)

    def shipped(tolerance: float, margin: float) -> tuple[bool, bool]:
        rule = SelectionRule(tolerance=tolerance, deployment_margin=margin)
        deployment = prepare_deployment.fn(_candidate(bundles["pos"]), dataset, rule,
                                           str(tmp_path / f"{tolerance}-{margin}"))
        assert deployment.margin == margin  # the record says the margin it was judged by
        return deployment.variant("onnx-int8").shipped, deployment.variant("onnx").shipped

    assert shipped(tolerance=0.05, margin=0.01) == (False, True)
    assert shipped(tolerance=0.0, margin=0.05) == (True, True)


def test_a_registration_records_the_promotion_margin_it_was_judged_by(registry) -> None:
    _, dataset, sweep, bundles, first = registry
    rule = SelectionRule(tolerance=0.0, promotion_margin=0.02)

    again = register_model.fn(_candidate(bundles["pos"]), dataset, sweep, "m", rule, {"depth": "1"})

    assert first.promotion_margin is None  # no champion to be judged against
    assert again.promoted and again.promotion_margin == 0.02
