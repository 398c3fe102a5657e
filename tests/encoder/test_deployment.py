"""The chosen model as it will run: ONNX and int8 ONNX variants computing what the torch model computes, an
accuracy gate that keeps a damaged variant out, a Hugging Face folder that transformers alone loads with the same
predictions, and `depthfinder export` writing each form to a folder."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import mlflow
import numpy as np
import pytest
import torch
from mlflow.tracking import MlflowClient

import depthfinder.encoder.deployment
from depthfinder.cli.main import main
from depthfinder.encoder.bundle import save_bundle, save_hf_folder
from depthfinder.encoder.checkpoint import resolve_checkpoint
from depthfinder.encoder.deployment import Gate, Shrinking, forms_passed, measure_deployment
from depthfinder.encoder.export import OnnxNetwork, export_onnx
from depthfinder.encoder.pretrained import load_truncated
from depthfinder.encoder.serving import TextClassifier, load_tokenizer
from depthfinder.encoder.vocabulary import word_embedding
from depthfinder.evidence.bootstrap import Interval
from depthfinder.tracking.registry import log_text_classifier, register_version
from tests.encoder.keyword_task import LABELS, keyword_frame
from tests.encoder.tiny_checkpoint import tiny_checkpoint

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning", "ignore::DeprecationWarning")
GATE = Gate("macro_f1", 0.05)  # the deployment gate of these tests: macro-F1, margin 0.05


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A pretrained network with its type's own head, its tokenizer, and 50 labelled texts."""
    root = tmp_path_factory.mktemp("deploy")
    frame = keyword_frame(120)
    checkpoint = resolve_checkpoint(str(tiny_checkpoint(root / "bert", frame["text"], layers=3)))
    torch.manual_seed(1)  # an untrained head answers one class for every text: here not the first (see below)
    network = load_truncated(checkpoint, 2, n_classes=len(LABELS), max_len=32, pooling="head")
    return root, network, load_tokenizer(checkpoint.tokenizer_path), frame["text"].head(50).tolist(), \
        frame["label"].head(50).tolist()


def test_the_onnx_graph_computes_what_the_torch_network_computes(model, tmp_path: Path) -> None:
    _, network, tokenizer, texts, _ = model

    path = export_onnx(network, tmp_path / "model.onnx")

    torch_model, onnx_model = TextClassifier(network, tokenizer, LABELS), TextClassifier(
        OnnxNetwork(path, network.cfg), tokenizer, LABELS)
    assert np.allclose(onnx_model.predict_proba(texts), torch_model.predict_proba(texts), atol=1e-4)


def test_the_int8_form_scales_each_embedding_row_and_each_block_of_a_matrix_apart(model, tmp_path: Path) -> None:
    """One scale per embedding row: a row of small numbers (a rare token's) keeps its values, where one scale per
    table (ONNX Runtime's dynamic quantisation) rounds it to zero; every matrix with a scale per block of a column."""
    import onnx
    from onnx import numpy_helper

    network = copy.deepcopy(model[1])
    table = word_embedding(network).weight
    with torch.no_grad():
        table[7] *= 1e-3
    int8 = depthfinder.encoder.deployment.quantize(export_onnx(network, tmp_path / "fp32.onnx"), tmp_path / "int8.onnx")
    graph = onnx.load(str(int8)).graph
    arrays = {tensor.name: numpy_helper.to_array(tensor) for tensor in graph.initializer}
    name = next(name for name, array in arrays.items() if name.endswith("_int8") and array.shape == table.shape)
    rows = arrays[name].astype(np.float32) * arrays[name.removesuffix("_int8") + "_scale"]
    small = table[7].detach().numpy()
    assert np.abs(rows[7] - small).max() <= np.abs(small).max() / 100, (rows[7][:4], small[:4])
    matrices = [node for node in graph.node if node.op_type == "MatMulNBits"]
    assert matrices and all(arrays[node.input[2]].size > 1 for node in matrices)


def _zeroed(fp32: Path, int8: Path) -> Path:
    """A quantisation that zeroes every weight: the graph runs, and says the same class for every text."""
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(fp32))
    for tensor in graph.graph.initializer:
        tensor.CopyFrom(numpy_helper.from_array(np.zeros_like(numpy_helper.to_array(tensor)), tensor.name))
    onnx.save(graph, str(int8))
    return int8


def test_variants_within_the_tolerance_ship_and_a_damaged_one_does_not(model, tmp_path: Path, monkeypatch) -> None:
    _, network, tokenizer, texts, labels = model
    truths = TextClassifier(network, tokenizer, LABELS).predict(texts)  # the torch model scores 1.0 on these
    assert LABELS[0] not in truths  # else a graph of zeros, which answers the first class, would be right too

    sound = measure_deployment(TextClassifier(network, tokenizer, LABELS),
                               texts, truths, GATE, tmp_path / "sound")

    monkeypatch.setattr(depthfinder.encoder.deployment, "quantize", _zeroed)
    broken = measure_deployment(TextClassifier(network, tokenizer, LABELS),
                                texts, truths, GATE, tmp_path / "broken")

    assert [(v.name, v.shipped) for v in sound.variants] == [("torch", True), ("onnx-int8", True), ("onnx", True)]
    assert sound.variant("onnx").metrics["macro_f1"] == 1.0
    assert sound.variant("onnx").vs_torch.low == sound.variant("onnx").vs_torch.high == 0  # the same labels
    assert set(sound.variant("onnx-int8").latency_ms) == {f"b{batch}_{key}" for batch in (1, 32)
                                                          for key in ("p50", "p95", "low", "high")}
    assert sound.shipped_files() == [str(tmp_path / "sound" / name) for name in ("model-int8.onnx", "model.onnx")]
    assert not broken.variant("onnx-int8").shipped and broken.variant("onnx").shipped
    assert "int8 ONNX: macro_f1" in broken.sentence and "not shipped (it loses more than the tolerance 0.05)" in \
        broken.sentence


def test_the_forms_the_gate_passes_on_validation_rows_leave_a_damaged_one_out(model, monkeypatch) -> None:
    """Under a size limit each candidate's forms are judged on its validation rows, so that the rule knows which depth
    can ship: the int8 forms pass where they label the rows as torch does and are left out where quantisation broke
    them; torch always passes."""
    _, network, tokenizer, texts, _ = model
    truths = TextClassifier(network, tokenizer, LABELS).predict(texts)
    train = keyword_frame(120)["text"].tail(70).tolist()  # the vocabulary's texts: not the rows judged on
    args = (TextClassifier(network, tokenizer, LABELS), texts, truths, GATE, Shrinking(train))

    sound = forms_passed(*args)
    monkeypatch.setattr(depthfinder.encoder.deployment, "quantize", _zeroed)
    broken = forms_passed(*args)

    assert sound[0] == "torch" and any(name.startswith("onnx-int8") for name in sound), sound
    assert broken[0] == "torch" and not any(name.startswith("onnx-int8") for name in broken), broken
    assert set(broken) - {"torch", "torch-pruned", "onnx"} == set(), broken


def test_the_validation_check_goes_by_the_mean_not_an_interval_a_few_hundred_rows_cannot_narrow(model,
                                                                                                monkeypatch) -> None:
    """A form that labels the validation rows as torch does passes the check even where a paired interval on those
    rows would reach far beyond the margin (the width of a few hundred rows, not a loss): the gate's intervals are
    the test split's business. Judged by the interval, the check refused int8 forms a test split's gate shipped."""
    _, network, tokenizer, texts, _ = model
    truths = TextClassifier(network, tokenizer, LABELS).predict(texts)
    train = keyword_frame(120)["text"].tail(70).tolist()
    wide = Interval(difference=0.0, low=-0.3, high=0.3)
    monkeypatch.setattr(depthfinder.encoder.deployment, "_vs_torch", lambda *_: wide)

    passed = forms_passed(TextClassifier(network, tokenizer, LABELS), texts, truths, Gate("macro_f1", 0.01),
                          Shrinking(train))

    assert any(name.startswith("onnx-int8") for name in passed), passed


def test_the_gate_is_the_rules_predicate_a_variant_the_test_rows_do_not_show_within_does_not_ship() -> None:
    """An int8 model 0.005 below torch on the mean (the gate by means alone shipped it) but disagreeing with it on
    so many rows that its paired interval reaches −0.03: the rows do not show it within 0.01, and it stays out;
    one whose interval clears −0.01 ships."""
    from depthfinder.encoder.verdict import Variant, apply_gate
    from depthfinder.evidence.bootstrap import Interval

    def variant(name: str, f1: float, interval: Interval | None) -> Variant:
        return Variant(name=name, metrics={"macro_f1": f1}, latency_ms={"b1_p50": 1.0}, size_mb=1.0, shipped=False,
                       vs_torch=interval)

    measured = {"torch": variant("torch", 0.90, None),
                "onnx-int8": variant("onnx-int8", 0.895, Interval(difference=-0.005, low=-0.03, high=0.02)),
                "onnx": variant("onnx", 0.895, Interval(difference=-0.005, low=-0.009, high=-0.001))}

    judged = apply_gate(measured, "macro_f1", 0.01, "")

    assert [(v.name, v.shipped) for v in judged.variants] == [("torch", True), ("onnx-int8", False), ("onnx", True)]
    assert "int8 ONNX: macro_f1 0.895 vs 0.900 (\u22120.005 [\u22120.030, +0.020])" in judged.sentence
    assert "not shipped (the test rows do not show it within the tolerance 0.01: its interval reaches \u22120.030)" \
        in judged.sentence
    by_means = {**measured, "onnx-int8": measured["onnx-int8"].model_copy(update={"vs_torch": None})}
    assert apply_gate(by_means, "macro_f1", 0.01, "").variant("onnx-int8").shipped  # means only: within

HF_ALONE = """
import json, sys
sys.modules["depthfinder"] = None  # importing depthfinder raises ImportError
from transformers import pipeline
classify = pipeline("text-classification", model=sys.argv[1], top_k=None)
print(json.dumps([{d["label"]: d["score"] for d in scores} for scores in classify(json.loads(sys.argv[2]))]))
"""


def test_the_hugging_face_folder_loads_with_transformers_alone_and_predicts_the_same(model, tmp_path: Path) -> None:
    _, network, tokenizer, texts, _ = model
    folder = save_hf_folder(tmp_path / "hf", network, tokenizer, LABELS)

    done = subprocess.run([sys.executable, "-c", HF_ALONE, str(folder), json.dumps(texts)], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path)

    assert done.returncode == 0, done.stderr[-3000:]
    scores = json.loads(done.stdout.strip().splitlines()[-1])
    expected = TextClassifier(network, tokenizer, LABELS).predict_proba(texts)
    assert np.allclose([[row[label] for label in LABELS] for row in scores], expected, atol=1e-5)
    assert json.loads((folder / "config.json").read_text())["num_hidden_layers"] == 2


def test_a_scratch_or_mean_pooled_network_has_no_hugging_face_folder(model, tmp_path: Path) -> None:
    root, _, tokenizer, _, _ = model
    mean = load_truncated(resolve_checkpoint(str(root / "bert")), 1, n_classes=len(LABELS), max_len=32,
                          pooling="mean")
    assert save_hf_folder(tmp_path / "hf", mean, tokenizer, LABELS) is None and not (tmp_path / "hf").exists()


def test_export_writes_each_form_of_a_registered_model_and_refuses_what_it_lacks(model, tmp_path, monkeypatch,
                                                                                capsys) -> None:
    root, network, tokenizer, texts, labels = model
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.chdir(tmp_path)
    bundle = save_bundle(tmp_path / "bundle", network, tokenizer, LABELS)
    deployment = measure_deployment(TextClassifier(network, tokenizer, LABELS),
                                    texts, labels, GATE, tmp_path / "onnx")
    deployment = deployment.model_copy(update={"hf_folder": str(save_hf_folder(tmp_path / "hf", network, tokenizer,
                                                                                  LABELS))})
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    try:
        client = MlflowClient(tracking_uri=uri)
        with mlflow.start_run():
            register_version(client, log_text_classifier(bundle, input_example=texts[:2], deployment=deployment),
                             "m", {})
            register_version(client, log_text_classifier(bundle, input_example=texts[:2]), "bare", {})
    finally:
        mlflow.set_tracking_uri(previous)
    capsys.readouterr()

    assert main(["export", "--model", "models:/m/1", "--to", "out-hf", "--tracking-uri", uri]) == 0
    assert main(["export", "--model", "models:/m/1", "--to", "out-onnx", "--format", "onnx", "--tracking-uri",
                 uri]) == 0
    refused = main(["export", "--model", "models:/bare/1", "--to", "out-bare", "--format", "onnx", "--tracking-uri",
                    uri])

    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {p.name for p in (tmp_path / "out-hf").iterdir()}
    shipped = {Path(file).name for file in deployment.shipped_files()}
    # the tokenizer.json the ONNX files take travels with them: ONNX Runtime and `tokenizers` alone serve them
    assert {p.name for p in (tmp_path / "out-onnx").iterdir()} == shipped | {"deployment.json", "tokenizer.json"}
    err = capsys.readouterr().err
    assert refused == 2 and err.count("\n") == 1 and "models:/bare/1 has no ONNX variants" in err
    assert not (tmp_path / "out-bare").exists()


def test_the_pruned_model_ships_within_the_margin_and_every_form_is_made_from_it(varied, tmp_path: Path) -> None:
    from depthfinder.encoder.serving import load_bundle

    network, tokenizer, train, texts = varied
    truths = TextClassifier(network, tokenizer, LABELS).predict(texts)  # torch scores 1.0 on these
    assert len(set(truths)) > 1

    deployment = measure_deployment(TextClassifier(network, tokenizer, LABELS),
                                    texts, truths, GATE, tmp_path, Shrinking(train))

    pruned, pruning = deployment.variant("torch-pruned"), deployment.pruning
    assert pruned.shipped and pruned.pruned and pruned.metrics["macro_f1"] == 1.0
    assert pruning.kept < pruning.vocabulary == tokenizer.get_vocab_size()
    assert pruned.size_mb == pytest.approx(deployment.variant("torch").size_mb - pruning.saved_mb)
    assert 0 < pruning.saved_share < 1
    served = load_bundle(Path(deployment.bundle))  # what the version registers
    assert served.tokenizer.get_vocab_size() == pruning.kept == served.network.cfg.vocab_size
    assert served.predict(texts) == truths
    beside = load_tokenizer(deployment.tokenizer_file)  # the ONNX files' tokenizer.json, pruned with them
    assert Path(deployment.tokenizer_file).parent == Path(deployment.variant("onnx").file).parent
    assert beside.get_vocab() == served.tokenizer.get_vocab()
    assert deployment.variant("onnx").pruned and deployment.variant("onnx-int8").pruned
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(deployment.variant("onnx").file).graph  # its word embedding: the kept rows (hidden 32)
    assert (pruning.kept, 32) in {numpy_helper.to_array(tensor).shape for tensor in graph.initializer}
    onnx = TextClassifier(OnnxNetwork(Path(deployment.variant("onnx").file), served.network.cfg), beside, LABELS)
    assert onnx.predict(texts) == truths
    assert f"pruned vocabulary (kept {pruning.kept:,} of {pruning.vocabulary:,} tokens, saving" in deployment.sentence
    assert "int8 ONNX of the pruned model: macro_f1" in deployment.sentence


def test_the_gate_refuses_a_pruning_that_hurts_and_the_forms_keep_the_full_vocabulary(varied, tmp_path: Path) -> None:
    """A threshold no token reaches keeps only the special tokens and single characters: every word is spelt out,
    the labels change, and the pruned model stays out."""
    network, tokenizer, train, texts = varied
    truths = TextClassifier(network, tokenizer, LABELS).predict(texts)

    deployment = measure_deployment(TextClassifier(network, tokenizer, LABELS),
                                    texts, truths, GATE, tmp_path, Shrinking(train, 10**9))

    pruned = deployment.variant("torch-pruned")
    assert not pruned.shipped and pruned.metrics["macro_f1"] < 1.0 - 0.05
    assert deployment.bundle is None and deployment.pruning.bundle is None
    assert not deployment.variant("onnx").pruned
    assert load_tokenizer(deployment.tokenizer_file).get_vocab() == tokenizer.get_vocab()
    assert "pruned vocabulary (kept" in deployment.sentence and "not shipped (it loses more than" in deployment.sentence


def test_a_tokenizer_that_cannot_be_pruned_ships_unpruned_and_says_why(varied, tmp_path: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    network, _, train, texts = varied
    bpe = Tokenizer(models.BPE(unk_token="[UNK]"))
    bpe.pre_tokenizer = pre_tokenizers.Whitespace()
    bpe.train_from_iterator(train, trainers.BpeTrainer(vocab_size=100, special_tokens=["[PAD]", "[UNK]"],
                                                       show_progress=False))
    truths = TextClassifier(network, bpe, LABELS).predict(texts)

    deployment = measure_deployment(TextClassifier(network, bpe, LABELS),
                                    texts, truths, GATE, tmp_path, Shrinking(train))

    assert deployment.variant("torch-pruned") is None and deployment.pruning is None and deployment.bundle is None
    assert "vocabulary not pruned: its tokenizer is BPE, and vocabulary pruning supports WordPiece" in \
        deployment.sentence


def test_under_a_size_limit_the_sentence_names_the_smallest_shipped_form_and_whether_it_fits() -> None:
    from depthfinder.encoder.verdict import Deployment, Variant, within_size

    def variant(name: str, size: float, shipped: bool, pruned: bool = False) -> Variant:
        return Variant(name=name, metrics={"macro_f1": 0.9}, latency_ms={"b1_p50": 1.0}, size_mb=size,
                       shipped=shipped, pruned=pruned)

    deployment = Deployment(metric="macro_f1", margin=0.01, sentence="gated", variants=[
        variant("torch", 59.0, True), variant("torch-pruned", 25.2, True, True),
        variant("onnx-int8", 6.4, True, True), variant("onnx", 25.3, True, True)])

    assert within_size(deployment, None) == deployment
    assert within_size(deployment, 8.0).sentence == ("gated; the smallest form shipped, int8 ONNX of the pruned model, "
                                                     "weighs 6.40 MiB: within max_size_mb 8")
    refused = deployment.model_copy(update={"variants": [v.model_copy(update={"shipped": v.name == "torch"})
                                                         for v in deployment.variants]})
    assert within_size(refused, 8.0).sentence.endswith("no form the gate shipped is within max_size_mb 8: the "
                                                        "smallest, torch, weighs 59.00 MiB")
