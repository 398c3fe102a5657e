"""A run registers what a team ships: its chosen model with its ONNX variants measured and gated, a Hugging Face
folder for a pretrained model with its type's own head, and a model card a reviewer reads in the MLflow UI as
the version's and the registered model's description and the run's note."""

from __future__ import annotations

import json
from pathlib import Path

import mlflow
import pytest
from mlflow import MlflowClient

from depthfinder.cli.main import main
from depthfinder.expectations.table.datasets import DATASETS
from tests.encoder.tiny_checkpoint import tiny_checkpoint

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning", "ignore::DeprecationWarning")
CONFIG = """
data: {dataset: topics, dataset_rows: 400}
model: {max_len: 32, pretrained_pooling: head}
train: {batch_size: 32, finetune_learning_rate: 0.003, finetune_max_epochs: 2, finetune_min_epochs: 2}
sweep: {depths: [1, 2], tolerance: 0.05, crossfit: off}
"""


@pytest.fixture(scope="module")
def registered(prefect_server, tmp_path_factory) -> tuple[Path, dict, MlflowClient]:
    folder = tmp_path_factory.mktemp("deployable")
    unused = ["zebras and quokkas graze at dusk"] * 5  # words the task never uses: its vocabulary prunes
    checkpoint = tiny_checkpoint(folder / "ckpt", [*DATASETS["topics"].generate(400, 1)["text"], *unused], layers=2)
    (folder / "run.yaml").write_text(CONFIG)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        assert main(["run", "--config", "run.yaml", "--pretrained", str(checkpoint), "--summary-json", "s.json"]) == 0
    return folder, json.loads((folder / "s.json").read_text()), MlflowClient(f"sqlite:///{folder / 'mlflow.db'}")


def test_the_version_carries_its_hugging_face_folder_and_the_onnx_variants_that_passed_the_gate(registered) -> None:
    folder, summary, client = registered
    deployment = summary["deployment"]

    assert [v["name"] for v in deployment["variants"]] == ["torch", "torch-pruned", "onnx-int8", "onnx"]
    torch_f1 = deployment["variants"][0]["metrics"]["macro_f1"]
    for variant in deployment["variants"][1:]:
        assert variant["shipped"] == (variant["metrics"]["macro_f1"] >= torch_f1 - 0.05)
    model_dir = Path(mlflow.artifacts.download_artifacts(
        artifact_uri=client.get_model_version("depthfinder", "1").source, tracking_uri=client.tracking_uri,
        dst_path=str(folder / "fetched")))
    shipped = {Path(v["file"]).name for v in deployment["variants"] if v["shipped"] and v["file"]}
    beside = {"tokenizer.json"} if shipped else set()  # what ONNX Runtime and `tokenizers` alone run them with
    assert {p.name for p in (model_dir / "artifacts" / "onnx").iterdir()} == shipped | beside | {"deployment.json"}
    assert (model_dir / "artifacts" / "hf" / "model.safetensors").is_file()
    assert deployment["sentence"] in (folder / "s.json").read_text()


def test_every_form_the_version_serves_carries_the_pruned_vocabulary(registered) -> None:
    """The pruned model passed the gate (the test split's texts use the train split's words): the MLflow model, the
    Hugging Face folder (tokenizer.json and vocab.txt) and the ONNX files' tokenizer.json all hold its vocabulary,
    and `transformers` alone loads the folder with it."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    folder, summary, client = registered
    deployment, pruning = summary["deployment"], summary["deployment"]["pruning"]
    assert deployment["variants"][1]["shipped"] and pruning["kept"] < pruning["vocabulary"]
    model_dir = folder / "fetched"  # downloaded by the test above, or now
    if not model_dir.is_dir():
        mlflow.artifacts.download_artifacts(artifact_uri=client.get_model_version("depthfinder", "1").source,
                                            tracking_uri=client.tracking_uri, dst_path=str(model_dir))
    artifacts = model_dir / "artifacts"
    (bundle,) = [path.parent for path in artifacts.glob("*/encoder.json")]  # the bundle the pyfunc serves
    vocabularies = {form: json.loads((form / "tokenizer.json").read_text())["model"]["vocab"]
                    for form in (bundle, artifacts / "hf", artifacts / "onnx")}
    assert all(len(vocab) == pruning["kept"] for vocab in vocabularies.values())
    assert len((artifacts / "hf" / "vocab.txt").read_text().splitlines()) == pruning["kept"]
    hf = AutoModelForSequenceClassification.from_pretrained(artifacts / "hf")
    assert hf.config.vocab_size == pruning["kept"] == AutoTokenizer.from_pretrained(artifacts / "hf").vocab_size
    assert summary["model"]["size_mb"] < next(c["cost"]["bundle_mb"] for c in summary["candidates"]
                                              if c["depth"] == summary["selected_depth"])


def test_the_model_card_is_the_versions_and_the_models_description_and_the_runs_note(registered) -> None:
    _, summary, client = registered

    version = client.get_model_version("depthfinder", "1").description
    model = client.get_registered_model("depthfinder").description
    note = client.get_run(summary["mlflow_run_id"]).data.tags["mlflow.note.content"]

    chosen = f"{summary['rule']['selected_family']} depth {summary['selected_depth']}"  # the checkpoint's own name
    assert version.startswith(f"# depthfinder version 1: {chosen}")
    assert summary["rule"]["reason"] in version and summary["deployment"]["sentence"] in version
    assert "get-artifact?path=plots%2Fmetric_vs_depth.png" in version
    assert "--format hf" in version and "--format onnx" in version
    assert model.startswith(version) and "## Promotion history" in model and "| champion | 1 |" in model
    assert note == version


def test_the_rule_can_choose_by_the_latency_of_what_will_run(prefect_server, tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "run.yaml").write_text(
        "data: {dataset: topics, dataset_rows: 400}\n"
        "model: {d_model: 16, n_heads: 2, d_ff: 32, vocab_size: 300, max_len: 32}\n"
        "train: {max_epochs: 2, min_epochs: 2, batch_size: 32, learning_rate: 0.003}\n"
        "sweep: {depths: [1, 2], cost: onnx_latency_ms_p50, crossfit: off}\n")
    monkeypatch.chdir(tmp_path)

    assert main(["run", "--config", "run.yaml", "--summary-json", "s.json"]) == 0

    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["rule"]["cost"] == "onnx_latency_ms_p50"
    latencies = [c["cost"]["onnx_latency_ms_p50"] for c in summary["candidates"]]
    assert all(latency > 0 for latency in latencies)
    assert [score["cost"] for score in summary["rule"]["scores"]] == pytest.approx(latencies)


def test_the_rule_can_choose_and_limit_by_the_size_of_the_smallest_form(prefect_server, tmp_path: Path,
                                                                         monkeypatch) -> None:
    """--cost size_mb with --max-size-mb: every form of every depth weighed, int8 ONNX ones too, and judged on the
    validation rows; the rule chooses by the smallest that passed, the limit leaves out the depth above it, and the
    deployment says which shipped form fits. The deployment margin is wide: whether a 2-epoch model's int8 forms
    lose a label on 60 validation rows depends on the CPU's int8 kernels (tests/flows/test_size_limit.py has the
    forms the validation rows refuse)."""
    (tmp_path / "run.yaml").write_text(
        "data: {dataset: topics, dataset_rows: 400}\n"
        "model: {d_model: 64, n_heads: 2, d_ff: 128, vocab_size: 300, max_len: 32}\n"
        "train: {max_epochs: 2, min_epochs: 2, batch_size: 32, learning_rate: 0.003}\n"
        "sweep: {depths: [1, 2], cost: size_mb, tolerance: 1.0, deployment_margin: 1.0, crossfit: off}\n")
    monkeypatch.chdir(tmp_path)

    # 64 wide: a block is about 33,000 weights; at int8 depth 1 weighs about 0.09 MiB, depth 2 about 0.16
    assert main(["run", "--config", "run.yaml", "--max-size-mb", "0.12", "--summary-json", "s.json"]) == 0

    summary = json.loads((tmp_path / "s.json").read_text())
    costs = {c["depth"]: c["cost"] for c in summary["candidates"]}
    for cost in costs.values():
        assert set(cost["sizes_mb"]) == {"torch", "torch-pruned", "onnx-int8", "onnx-int8-pruned", "onnx-int8-coded"}
        # Under the limit the rule holds each depth to the smallest form the gate passed on its validation rows.
        assert "torch" in cost["passed_mb"] and set(cost["passed_mb"]) <= set(cost["sizes_mb"])
        assert all(cost["passed_mb"][form] == cost["sizes_mb"][form] for form in cost["passed_mb"])
        assert cost["size_mb"] == min(cost["passed_mb"].values()) < cost["sizes_mb"]["torch"]
    assert costs[1]["size_mb"] <= 0.12 < costs[2]["size_mb"], costs  # else the limit below tests nothing
    assert summary["selected_depth"] == 1 and "depth 2 (size_mb" in summary["rule"]["reason"]
    assert "within max_size_mb 0.12" in summary["deployment"]["sentence"]
