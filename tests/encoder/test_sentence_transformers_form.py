"""The sentence-transformers form of a mean- or first-token-pooled pretrained model: `depthfinder export --format
sentence-transformers` writes a folder in sentence-transformers' on-disk format whose argmax is the MLflow model's
prediction, checked by a plain transformers + safetensors reading of that format (always) and by
`SentenceTransformer(folder)` itself where the package is installed; the models that have no such form are
refused in one line."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import pytest
import torch
from mlflow.tracking import MlflowClient

from depthfinder.cli.main import main
from depthfinder.encoder.bundle import save_bundle, save_sentence_transformers_folder
from depthfinder.encoder.checkpoint import resolve_checkpoint
from depthfinder.encoder.pretrained import load_truncated
from depthfinder.encoder.serving import TextClassifier, load_tokenizer
from depthfinder.tracking.registry import log_text_classifier, register_version
from tests.encoder.keyword_task import LABELS, keyword_frame
from tests.encoder.tiny_checkpoint import tiny_checkpoint
from tests.encoder.tiny_models import tiny_network, tiny_tokenizer

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning", "ignore::DeprecationWarning")
MAX_LEN = 32  # the texts below include some longer: cut, they keep their closing [SEP] in every form


def pretrained(root: Path, pooling: str, model_type: str = "bert"):
    """Depth 2 of a tiny 3-layer checkpoint with `pooling`, its head scaled so the classes differ from text to
    text, and its tokenizer."""
    checkpoint = resolve_checkpoint(str(tiny_checkpoint(root / model_type, keyword_frame(120)["text"], layers=3,
                                                        model_type=model_type)))
    network = load_truncated(checkpoint, 2, n_classes=len(LABELS), max_len=MAX_LEN, pooling=pooling)
    if pooling != "head":
        with torch.no_grad():
            network.head.weight.normal_(std=3.0, generator=torch.Generator().manual_seed(0))
    return network.eval(), load_tokenizer(checkpoint.tokenizer_path)


@pytest.fixture(scope="module")
def registered(tmp_path_factory):
    """A tracking store with a mean-pooled (`st`), a head-pooled (`head`) and a scratch (`scratch`) model, and the
    texts to label."""
    root = tmp_path_factory.mktemp("st-form")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    texts = keyword_frame(120)["text"].tail(40).tolist()
    texts += [" ".join(texts[start:start + 8]) for start in range(0, 40, 8)]  # longer than MAX_LEN tokens
    scratch_tokenizer = tiny_tokenizer()
    models = {"st": (*pretrained(root, "mean"), LABELS), "head": (*pretrained(root, "head"), LABELS),
              "scratch": (tiny_network(scratch_tokenizer), scratch_tokenizer, ["neg", "pos"])}
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    try:
        client = MlflowClient(tracking_uri=uri)
        with mlflow.start_run():
            for name, (network, tokenizer, labels) in models.items():
                bundle = save_bundle(root / f"bundle-{name}", network, tokenizer, labels)
                register_version(client, log_text_classifier(bundle, input_example=texts[:2]), name, {})
    finally:
        mlflow.set_tracking_uri(previous)
    return root, uri, texts


@pytest.fixture(scope="module")
def exported(registered) -> tuple[Path, pd.DataFrame, list[str]]:
    """The `st` model exported as a sentence-transformers folder, and what the MLflow model says of the texts."""
    root, uri, texts = registered
    folder = root / "exported"
    assert main(["export", "--model", "models:/st/1", "--to", str(folder), "--format", "sentence-transformers",
                 "--tracking-uri", uri]) == 0
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    try:
        served = mlflow.pyfunc.load_model("models:/st/1").predict(pd.DataFrame({"text": texts}))
    finally:
        mlflow.set_tracking_uri(previous)
    return folder, served, texts


def read_as_sentence_transformers_does(folder: Path, texts: list[str]) -> np.ndarray:
    """What the folder's modules compute, read by its format alone with transformers and safetensors: the
    Transformer in the root (its sentence_bert_config.json), the pooling its config names, the Dense layer."""
    from safetensors.torch import load_file
    from transformers import AutoModel, AutoTokenizer

    modules = json.loads((folder / "modules.json").read_text())
    assert [(m["path"], m["type"].rsplit(".", 1)[-1]) for m in modules] == [
        ("", "Transformer"), ("1_Pooling", "Pooling"), ("2_Dense", "Dense")]
    transformer = json.loads((folder / "sentence_bert_config.json").read_text())
    pooling = json.loads((folder / "1_Pooling" / "config.json").read_text())
    dense = json.loads((folder / "2_Dense" / "config.json").read_text())
    assert dense["activation_function"] == "torch.nn.modules.linear.Identity"
    modes = [key for key, on in pooling.items() if key.startswith("pooling_mode_") and on]
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModel.from_pretrained(folder, **transformer.get("model_args", {})).eval()
    features = tokenizer(texts, padding=True, truncation="longest_first", max_length=transformer["max_seq_length"],
                         return_tensors="pt")
    with torch.no_grad():
        tokens = model(**features).last_hidden_state  # (B, T, H)
    mask = features["attention_mask"].unsqueeze(-1).to(tokens.dtype)  # (B, T, 1)
    pooled = {"pooling_mode_mean_tokens": (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9),
              "pooling_mode_cls_token": tokens[:, 0]}[modes[0]]
    weights = load_file(str(folder / "2_Dense" / "model.safetensors"))
    assert len(modes) == 1 and pooled.shape[1] == pooling["word_embedding_dimension"] == dense["in_features"]
    return (pooled @ weights["linear.weight"].T + weights["linear.bias"]).numpy()  # (B, out_features)


def test_the_folder_is_in_sentence_transformers_format_and_its_argmax_is_the_mlflow_models_label(exported) -> None:
    folder, served, texts = exported

    logits = read_as_sentence_transformers_does(folder, texts)

    labels = json.loads((folder / "labels.json").read_text())
    assert labels == LABELS and logits.shape == (len(texts), len(LABELS))
    assert [labels[k] for k in logits.argmax(axis=1)] == served["label"].tolist()
    assert len(set(served["label"])) > 1  # the texts do not all get one class
    probabilities = torch.softmax(torch.from_numpy(logits), dim=-1).numpy()
    assert np.allclose(probabilities, served[[f"proba_{label}" for label in LABELS]].to_numpy(), atol=1e-5)
    assert json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"] == MAX_LEN
    assert json.loads((folder / "config.json").read_text())["num_hidden_layers"] == 2
    assert json.loads((folder / "1_Pooling" / "config.json").read_text())["pooling_mode_mean_tokens"] is True
    assert not (folder / ".partial").exists() and "labels.json" in (folder / "README.md").read_text()


ST_ALONE = """
import json, sys
sys.modules["depthfinder"] = None  # importing depthfinder raises ImportError
from sentence_transformers import SentenceTransformer
model = SentenceTransformer(sys.argv[1], device="cpu")
print(json.dumps(model.encode(json.loads(sys.argv[2])).tolist()))
"""


@pytest.mark.skipif(importlib.util.find_spec("sentence_transformers") is None,
                    reason="sentence-transformers is not installed; the plain reading above checks the same folder")
def test_sentence_transformers_loads_the_folder_without_depthfinder_and_agrees_with_the_mlflow_model(exported):
    folder, served, texts = exported

    done = subprocess.run([sys.executable, "-c", ST_ALONE, str(folder), json.dumps(texts)], capture_output=True,
                          text=True, timeout=300, cwd=folder.parent, env={**os.environ, "HF_HUB_OFFLINE": "1"})

    assert done.returncode == 0, done.stderr[-3000:]
    assert "MISSING" not in done.stderr  # no weight of the loaded model is newly initialised
    logits = np.array(json.loads(done.stdout.strip().splitlines()[-1]))
    assert [LABELS[k] for k in logits.argmax(axis=1)] == served["label"].tolist()
    assert np.allclose(torch.softmax(torch.from_numpy(logits), dim=-1).numpy(),
                       served[[f"proba_{label}" for label in LABELS]].to_numpy(), atol=1e-5)


@pytest.mark.parametrize("model_type", ["roberta", "distilbert"])
def test_first_token_pooling_and_other_types_compute_what_depthfinder_computes(tmp_path: Path, model_type) -> None:
    network, tokenizer = pretrained(tmp_path, "cls", model_type)
    texts = keyword_frame(60)["text"].tolist()

    folder = save_sentence_transformers_folder(tmp_path / "st", network, tokenizer, LABELS)

    expected = TextClassifier(network, tokenizer, LABELS).predict_proba(texts)
    logits = read_as_sentence_transformers_does(folder, texts)
    assert np.allclose(torch.softmax(torch.from_numpy(logits), dim=-1).numpy(), expected, atol=1e-5)
    assert json.loads((folder / "1_Pooling" / "config.json").read_text())["pooling_mode_cls_token"] is True


@pytest.mark.parametrize(("model", "form", "said"), [
    ("st", "hf", "models:/st/1 has no Hugging Face folder: only a pretrained model trained with "
                 "model.pretrained_pooling head is one (or tokens, for token labels); one pooled by mean or first "
                 "token (the default) is a "
                 "sentence-transformers folder (--format sentence-transformers"),
    ("scratch", "sentence-transformers", "models:/scratch/1 has no sentence-transformers form: it is a scratch "
                                         "model"),
    ("head", "sentence-transformers", "models:/head/1 has no sentence-transformers form: it classifies with its "
                                      "type's own head, not pooling and a linear layer: its standard form is the "
                                      "Hugging Face folder (--format hf)"),
])
def test_a_model_without_the_form_is_refused_in_one_line_and_nothing_is_written(registered, capsys, model, form,
                                                                                said) -> None:
    root, uri, _ = registered
    target = root / f"refused-{model}-{form}"
    capsys.readouterr()

    code = main(["export", "--model", f"models:/{model}/1", "--to", str(target), "--format", form,
                 "--tracking-uri", uri])

    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and said in err, err
    assert not target.exists()
