"""depthfinder loads only models it can vouch for, and none of their code runs: a foreign pickle, a foreign
models-from-code file, a model without depthfinder's bundle are refused in one line (predict: exit 2; a run
whose champion is one: exit 2 before any work), and depthfinder's own model predicts from its data alone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import mlflow
import pytest
from mlflow.tracking import MlflowClient

from depthfinder.cli.main import main
from depthfinder.encoder.bundle import save_bundle
from depthfinder.tracking.loading import foreign, open_classifier, vouch
from depthfinder.tracking.registry import log_text_classifier, register_version
from tests.encoder.tiny_models import LABELS, TRAIN_TEXTS, tiny_tokenizer, trained_network

# Code that leaves a mark when it runs: a model carrying it must never get that far.
MARKING_CODE = '''
import pathlib
import mlflow

class Marking(mlflow.pyfunc.PythonModel):
    def load_context(self, context):
        pathlib.Path({mark!r}).write_text("ran")

    def predict(self, context, model_input):
        pathlib.Path({mark!r}).write_text("ran")
        return model_input

pathlib.Path({mark!r}).write_text("ran")
mlflow.models.set_model(Marking())
'''


class Pickled(mlflow.pyfunc.PythonModel):
    """A cloudpickled model whose load would run code (it writes `mark`)."""

    def __init__(self, mark: str) -> None:
        self.mark = mark

    def load_context(self, context) -> None:
        Path(self.mark).write_text("ran")

    def predict(self, context, model_input):
        return model_input


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """A SQLite store holding depthfinder's own model `ours`, two foreign ones (`pickled`, `coded`) and `mimic`,
    whose code would leave a mark but which carries depthfinder's bundle and metadata."""
    root = tmp_path_factory.mktemp("loading")
    uri = f"sqlite:///{root}/mlflow.db"
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    client = MlflowClient(tracking_uri=uri)
    experiment = client.create_experiment("loading", artifact_location=(root / "artifacts").as_uri())
    tokenizer = tiny_tokenizer()
    bundle = save_bundle(root / "bundle", trained_network(tokenizer), tokenizer, LABELS)
    code = root / "marking_model.py"
    code.write_text(MARKING_CODE.format(mark=str(root / "mark")))
    with mlflow.start_run(experiment_id=experiment):
        register_version(client, log_text_classifier(bundle, input_example=TRAIN_TEXTS[:2]), "ours", {})
        pickled = mlflow.pyfunc.log_model(name="pickled", python_model=Pickled(str(root / "mark")))
        register_version(client, pickled.model_uri, "pickled", {})
    (root / "mark").unlink(missing_ok=True)  # logging from code runs the code: only loads count from here
    with mlflow.start_run(experiment_id=experiment):
        coded = mlflow.pyfunc.log_model(name="coded", python_model=str(code))
        register_version(client, coded.model_uri, "coded", {})
        mimic = mlflow.pyfunc.log_model(name="mimic", python_model=str(code), artifacts={"bundle": str(bundle)},
                                        metadata={"family": "scratch", "depth": 1, "labels": LABELS})
        register_version(client, mimic.model_uri, "mimic", {})
    (root / "mark").unlink(missing_ok=True)
    for name in ("ours", "pickled", "coded", "mimic"):
        client.set_registered_model_alias(name, "champion", "1")
    try:
        yield root, uri
    finally:
        mlflow.set_tracking_uri(previous)


def test_depthfinders_own_model_predicts_from_its_bundle(store) -> None:
    root, _ = store

    classifier = open_classifier("models:/ours@champion")

    assert classifier.predict(["a great film", "an awful mess"]) == ["pos", "neg"]
    assert vouch("models:/ours/1") == {"bundle": "artifacts/bundle"}


@pytest.mark.parametrize(("name", "what"), [
    ("pickled", "its python_model is a cloudpickle (python_model.pkl)"),
    ("coded", "it carries no 'bundle' artifact"),
])
def test_a_foreign_model_is_refused_without_running_its_code(store, name: str, what: str, monkeypatch) -> None:
    root, _ = store
    monkeypatch.setenv("MLFLOW_ALLOW_PICKLE_DESERIALIZATION", "true")  # even where pickles are allowed

    with pytest.raises(ValueError, match="is not a depthfinder model") as refused:
        open_classifier(f"models:/{name}/1")

    assert what in str(refused.value)
    assert not (root / "mark").exists()


def test_a_model_that_imitates_depthfinders_is_read_as_data_and_its_code_never_runs(store) -> None:
    root, _ = store

    assert open_classifier("models:/mimic/1").predict(["a great film"]) == ["pos"]  # the bundle's own network
    assert not (root / "mark").exists()


def test_predict_refuses_a_foreign_model_in_one_line_with_exit_2(store, capsys, monkeypatch) -> None:
    root, uri = store
    monkeypatch.chdir(root)

    code = main(["predict", "--model", "models:/pickled@champion", "--text", "hello", "--tracking-uri", uri])

    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "models:/pickled@champion is not a depthfinder model: its python_model is a cloudpickle" in err
    assert not (root / "mark").exists()


def test_a_run_whose_champion_is_foreign_stops_before_any_work(store, capsys, monkeypatch, tmp_path) -> None:
    root, uri = store
    monkeypatch.chdir(tmp_path)

    code = main(["run", "--dataset", "topics", "--model-name", "coded", "--tracking-uri", uri])

    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "the champion of 'coded': models:/coded/1 is not a depthfinder model" in err
    assert not (root / "mark").exists() and not (tmp_path / ".depthfinder").exists()


@pytest.mark.parametrize(("flavors", "metadata", "phrase"), [
    ({"sklearn": {}}, None, "no python_function flavour (flavours: sklearn)"),
    ({"python_function": {"loader_module": "mlflow.sklearn"}}, None, "loads with 'mlflow.sklearn'"),
    ({"python_function": {"loader_module": "mlflow.pyfunc.loaders.code_model", "model_code_path": "m.py"}},
     {"family": "scratch", "depth": 1, "labels": []}, "carries no 'bundle' artifact"),
])
def test_what_a_foreign_model_is_is_said(flavors: dict, metadata: dict | None, phrase: str) -> None:
    assert phrase in foreign(flavors, metadata)
