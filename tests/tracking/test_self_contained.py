"""A registered model loads and predicts where depthfinder is not installed: in a process where depthfinder's
packages cannot be imported (fast), and in a fresh virtual environment built from the model's own requirements
alone (slow: it installs them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import mlflow
import numpy as np
import pytest
from mlflow.tracking import MlflowClient

from depthfinder.encoder.bundle import save_bundle
from depthfinder.encoder.checkpoint import resolve_checkpoint
from depthfinder.encoder.pretrained import load_truncated
from depthfinder.encoder.serving import load_bundle, load_tokenizer, proba_columns, spans_of
from depthfinder.tracking.registry import log_text_classifier, register_version
from tests.encoder.tiny_checkpoint import tiny_checkpoint
from tests.encoder.tiny_models import LABELS, TRAIN_TEXTS, tiny_tokenizer, trained_network
from tests.encoder.tiny_tokens import TAGS, token_tokenizer, trained_tagger

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")
TEXTS = ["a great film", "an awful mess", "great music, awful plot", "truly fun"]
# Raw text for a model of token labels: words are what white space separates, punctuation and all.
TOKEN_TEXTS = ["anna smith lives in paris", "Bob visited New York, today.", "nothing here", "in paris anna met bob"]
# Load a registered model and label TEXTS, with depthfinder made unimportable first.
ALONE = """
import json, sys
sys.modules["depthfinder"] = None  # importing depthfinder or any of its modules now raises ImportError
import mlflow, pandas as pd
mlflow.set_tracking_uri(sys.argv[1])
model = mlflow.pyfunc.load_model(sys.argv[2])
predictions = model.predict(pd.DataFrame({"text": json.loads(sys.argv[3])}))
print(json.dumps(predictions.to_dict(orient="list")))
"""


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Iterator[tuple[str, dict[str, Path]]]:
    """A SQLite store with a scratch model, two pretrained ones (mean pooling; the type's own head) and a scratch
    model of token labels (`tokens`)."""
    root = tmp_path_factory.mktemp("self-contained")
    uri = f"sqlite:///{root}/mlflow.db"
    tokenizer = tiny_tokenizer()
    bundles = {"scratch": save_bundle(root / "scratch", trained_network(tokenizer), tokenizer, LABELS)}
    checkpoint = resolve_checkpoint(str(tiny_checkpoint(root / "bert", TRAIN_TEXTS, layers=3)))
    for pooling in ("mean", "head"):
        network = load_truncated(checkpoint, 2, n_classes=2, max_len=16, pooling=pooling)
        bundles[f"pretrained-{pooling}"] = save_bundle(root / pooling, network, load_tokenizer(
            checkpoint.tokenizer_path), LABELS)
    tagger_tokenizer = token_tokenizer()
    bundles["tokens"] = save_bundle(root / "tokens", trained_tagger(tagger_tokenizer), tagger_tokenizer, TAGS)
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    client = MlflowClient(tracking_uri=uri)
    experiment = client.create_experiment("alone", artifact_location=(root / "artifacts").as_uri())
    for name, bundle in bundles.items():
        with mlflow.start_run(experiment_id=experiment):
            example = TOKEN_TEXTS[:2] if name == "tokens" else TEXTS[:2]
            register_version(client, log_text_classifier(bundle, input_example=example), name, {})
    try:
        yield uri, bundles
    finally:
        mlflow.set_tracking_uri(previous)


def served(python: str, uri: str, name: str, env: dict[str, str] | None = None, texts: list[str] = TEXTS) -> dict:
    """Each output column of the registered model `name` on `texts`, predicted where depthfinder cannot be imported."""
    done = subprocess.run([python, "-c", ALONE, uri, f"models:/{name}/1", json.dumps(texts)], capture_output=True,
                          text=True, timeout=600, cwd="/", env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", ["scratch", "pretrained-mean", "pretrained-head"])
def test_a_registered_model_predicts_where_depthfinders_packages_cannot_be_imported(store, name: str) -> None:
    uri, bundles = store

    alone = served(sys.executable, uri, name)

    here = load_bundle(bundles[name])
    assert alone["label"] == here.predict(TEXTS)
    proba = np.array([alone[column] for column in proba_columns(here.labels)]).T  # (N, K)
    assert np.allclose(proba, here.predict_proba(TEXTS), atol=1e-6)


def test_a_registered_model_of_token_labels_gives_tags_and_spans_where_depthfinder_cannot_be_imported(store) -> None:
    uri, bundles = store

    alone = served(sys.executable, uri, "tokens", texts=TOKEN_TEXTS)

    tags = load_bundle(bundles["tokens"]).predict_tags(TOKEN_TEXTS)
    assert alone["tags"] == [" ".join(words) for words in tags]
    assert alone["spans"] == [spans_of(text, words) for text, words in zip(TOKEN_TEXTS, tags, strict=True)]
    assert alone["spans"][0] == [{"text": "anna smith", "type": "PER", "start": 0, "end": 10},
                                 {"text": "paris", "type": "LOC", "start": 20, "end": 25}]  # a sentence it learned


def test_a_model_of_token_labels_declares_tags_and_spans_as_its_outputs(store) -> None:
    outputs = mlflow.models.get_model_info("models:/tokens/1").signature.outputs.to_dict()

    assert [column["name"] for column in outputs] == ["tags", "spans"]
    assert outputs[0]["type"] == "string"
    assert outputs[1]["type"] == "array" and outputs[1]["items"]["type"] == "object"
    assert {name: spec["type"] for name, spec in outputs[1]["items"]["properties"].items()} == {
        "text": "string", "type": "string", "start": "long", "end": "long"}


def test_the_model_declares_every_package_it_imports_pinned(store) -> None:
    uri, _ = store
    local = Path(mlflow.artifacts.download_artifacts(artifact_uri="models:/pretrained-head/1"))

    requirements = (local / "requirements.txt").read_text().split()
    code = sorted(path.name for path in (local / "code").iterdir())

    assert {line.split("==")[0] for line in requirements} >= {"mlflow", "torch", "tokenizers", "numpy", "pandas",
                                                              "transformers"}
    assert all("==" in line for line in requirements if not line.startswith("-"))
    assert code == ["depthfinder_network.py", "depthfinder_serving.py"]


@pytest.mark.slow
def test_a_registered_model_predicts_in_a_fresh_environment_built_from_its_requirements_alone(
    store, tmp_path: Path
) -> None:
    """`python -m venv` and `pip install -r` the model's requirements.txt: nothing of depthfinder's is there."""
    uri, bundles = store
    local = Path(mlflow.artifacts.download_artifacts(artifact_uri="models:/pretrained-head/1", dst_path=tmp_path))
    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "env")], check=True, timeout=300)
    python = str(tmp_path / "env" / "bin" / "python")
    install = subprocess.run([python, "-m", "pip", "install", "--quiet", "-r", str(local / "requirements.txt")],
                             capture_output=True, text=True, timeout=1800)
    assert install.returncode == 0, install.stderr[-3000:]
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    assert subprocess.run([python, "-c", "import depthfinder"], capture_output=True, env=environment,
                          cwd=tmp_path).returncode != 0  # nothing of depthfinder's is there

    alone = served(python, uri, "pretrained-head", env=environment)

    assert alone["label"] == load_bundle(bundles["pretrained-head"]).predict(TEXTS)
