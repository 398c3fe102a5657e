"""Every encoder type end to end: `depthfinder run --pretrained FOLDER` on a tiny checkpoint of each of the seven
types trains depths 1 and 2, registers the chosen one, and the registered model labels raw text in a fresh
process. DeBERTa-v3 (its tokenizer a SentencePiece model) and ModernBERT run in `make test`; the other five,
whose truncation the unit tests in tests/encoder/test_architectures.py cover, in `make test-slow`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from depthfinder.cli.main import main
from depthfinder.expectations.table.datasets import DATASETS
from tests.encoder.tiny_checkpoint import TYPES, tiny_checkpoint

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")
CONFIG = """
data: {dataset: topics, dataset_rows: 400}
model: {max_len: 32}
train: {batch_size: 32, finetune_learning_rate: 0.003, finetune_max_epochs: 2, finetune_min_epochs: 2}
sweep: {depths: [1, 2], crossfit: off}
"""
FORMS = {"deberta-v2": "spm", "bert": "vocab"}  # how their tokenizers ship; the rest: tokenizer.json
FAST = {"deberta-v2", "modernbert"}
PREDICT = """
import sys, mlflow, pandas as pd
mlflow.set_tracking_uri(sys.argv[1])
print("\\n".join(mlflow.pyfunc.load_model(sys.argv[2]).predict(pd.DataFrame({"text": sys.argv[3:]}))["label"]))
"""


@pytest.mark.parametrize("model_type", [
    pytest.param(model_type, marks=() if model_type in FAST else pytest.mark.slow) for model_type in TYPES])
def test_a_checkpoint_of_each_type_is_swept_registered_and_served_from_raw_text(
    prefect_server, model_type: str, tmp_path: Path, monkeypatch
) -> None:
    texts = DATASETS["topics"].generate(400, 1)["text"]
    folder = tiny_checkpoint(tmp_path / model_type, texts, layers=3, model_type=model_type,
                             tokenizer=FORMS.get(model_type, "json"))
    (tmp_path / "run.yaml").write_text(CONFIG)
    monkeypatch.chdir(tmp_path)

    code = main(["run", "--config", "run.yaml", "--pretrained", str(folder), "--model-name", model_type,
                 "--summary-json", "summary.json"])

    assert code == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [(c["family"], c["depth"], c["status"]) for c in summary["candidates"]] == [
        (model_type, 1, "trained"), (model_type, 2, "trained")]  # the family is named after the checkpoint's folder
    assert summary["model"]["version"] == "1" and summary["promoted"] is True
    served = subprocess.run(
        [sys.executable, "-c", PREDICT, f"sqlite:///{tmp_path / 'mlflow.db'}", f"models:/{model_type}@champion",
         "The striker scored twice.", "Whisk the eggs into the flour."],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert served.returncode == 0, served.stderr[-2000:]
    labels = served.stdout.split()
    assert len(labels) == 2 and set(labels) <= set(DATASETS["topics"].generate(400, 1)["label"])
