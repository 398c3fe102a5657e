"""The chosen model as it will run: torch, ONNX and int8 ONNX, each measured the way the choice was made.

The network is exported to ONNX (torch's TorchScript-based exporter, dynamic batch and sequence axes) and
quantised to int8 weights by ONNX Runtime's dynamic quantisation. Each variant labels the test split through the
same tokenizer and length-sorted batching as the torch model (encoder.serving.TextClassifier), so its metric is
the one the promotion compares, and its latency is timed on the same texts at batch 1 and batch 32. A variant
ships only when it is within the deployment margin (`deployment_margin`, a setting of its own: loosening the depth
rule's tolerance does not loosen this gate) of the torch model by the rule's own test
(encoder.selection.margin.within): its test metric no more than the margin below the torch model's, and, at the
rule's confidence, the lower end of the paired bootstrap interval of (variant − torch) on the same test rows too.
Quantisation can lose accuracy silently, and a model that is fast but wrong defeats the purpose. ONNX Runtime is
the extra `depthfinder[onnx]`; without it the chosen model ships as torch alone, and the decision says why.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import numpy as np
import torch
from pydantic import Field
from tokenizers import Tokenizer

from encoder.metrics import classification_metrics
from encoder.selection.candidate import Record
from encoder.selection.evidence import Interval, paired_interval
from encoder.selection.margin import within
from encoder.serving import Network, TextClassifier, encode_texts, pad_batch

ONNX_FILE, INT8_FILE = "model.onnx", "model-int8.onnx"
BATCHES = (1, 32)
# Timed forwards per batch size (after WARMUP), over the test split's texts in turn.
REPEATS = {1: 50, 32: 10}
WARMUP = 3
OPSET = 17


class Variant(Record):
    """One form of the chosen model, measured on the test split."""

    name: str = Field(description="torch, onnx (fp32) or onnx-int8.")
    metrics: dict[str, float] = Field(description="Test accuracy, balanced accuracy, macro-F1.")
    latency_ms: dict[str, float] = Field(description="p50 and p95 of a forward at batch 1 and 32 (b1_p50, ...), ms.")
    size_mb: float = Field(description="Size of its weights file, MiB.")
    shipped: bool = Field(description="Registered with the version: within the deployment margin of the torch model.")
    file: str | None = Field(None, description="Its file (ONNX variants).")
    vs_torch: Interval | None = Field(
        None, description="Its test metric minus the torch model's, with the paired bootstrap interval at the rule's "
        "confidence (ONNX variants; none by means only)."
    )


class Deployment(Record):
    """What the chosen model's variants scored and cost, and which ship."""

    metric: str = Field(description="The metric they were judged by (the rule's), on the test split.")
    tolerance: float = Field(
        description="How much of it a variant may lose against the torch model: the deployment margin "
        "(sweep.deployment_margin), not the depth rule's tolerance."
    )
    variants: list[Variant] = Field(description="torch first, then each ONNX variant.")
    sentence: str = Field(description="What was measured and shipped, in a sentence.")
    hf_folder: str | None = Field(None, description="Its standard Hugging Face folder, when it is one.")

    def shipped_files(self) -> list[str]:
        """The files of the ONNX variants that ship."""
        return [variant.file for variant in self.variants if variant.shipped and variant.file]

    def variant(self, name: str) -> Variant | None:
        return next((variant for variant in self.variants if variant.name == name), None)


class OnnxNetwork:
    """An ONNX Runtime session that takes the torch network's place in a TextClassifier: same inputs, logits out."""

    def __init__(self, path: Path, cfg: object) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = torch.get_num_threads()  # as many threads as the torch model gets
        options.log_severity_level = 3
        self.session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.cfg = cfg

    def to(self, device: str) -> OnnxNetwork:
        return self

    def eval(self) -> OnnxNetwork:
        return self

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        feeds = {"input_ids": input_ids.numpy(), "attention_mask": attention_mask.numpy()}
        return torch.from_numpy(self.session.run(None, feeds)[0])


def export_onnx(network: Network, path: Path) -> Path:
    """The network as an ONNX graph with dynamic batch and sequence axes."""
    ids = torch.full((2, 8), 1, dtype=torch.long)
    mask = torch.ones(2, 8, dtype=torch.bool)
    axes = {"input_ids": {0: "batch", 1: "tokens"}, "attention_mask": {0: "batch", 1: "tokens"}, "logits": {0: "batch"}}
    network = network.to("cpu").eval()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # tracer notes on shape-dependent Python code, expected here
        torch.onnx.export(network, (ids, mask), str(path), input_names=["input_ids", "attention_mask"],
                          output_names=["logits"], dynamic_axes=axes, opset_version=OPSET, dynamo=False)
    return path


def quantize(fp32: Path, int8: Path) -> Path:
    """int8 weights by ONNX Runtime's dynamic quantisation (activations quantised on the fly), after its
    recommended pre-processing (shape inference, graph optimisation)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process

    prepared = int8.with_suffix(".prepared.onnx")
    quant_pre_process(str(fp32), str(prepared), skip_symbolic_shape=True)  # symbolic inference fails on masks
    quantize_dynamic(str(prepared), str(int8), weight_type=QuantType.QInt8)
    prepared.unlink()
    return int8


def measure_deployment(
    network: Network, tokenizer: Tokenizer, labels: list[str], texts: list[str], truths: list[str], metric: str,
    margin: float, folder: Path, confidence: float | None = 0.9,
) -> Deployment:
    """Export and quantise the network into `folder`, measure every variant on the labelled test texts, and say
    which ship (within `margin`, the deployment margin, of the torch model's `metric`, by the paired bootstrap at
    `confidence`; None: by the metric alone)."""
    torch_model = TextClassifier(network, tokenizer, labels)
    predicted: dict[str, list[str]] = {}
    measured = {"torch": _measure("torch", torch_model, texts, truths, None, predicted)}
    try:
        import onnxruntime  # noqa: F401 (the extra that makes ONNX variants)
    except ImportError:
        return _judged(measured, metric, margin, "ONNX variants not measured: onnxruntime is not installed "
                       "(pip install 'depthfinder[onnx]')")
    folder.mkdir(parents=True, exist_ok=True)
    fp32 = export_onnx(network, folder / ONNX_FILE)
    for name, path in (("onnx", fp32), ("onnx-int8", quantize(fp32, folder / INT8_FILE))):
        measured[name] = _measure(name, TextClassifier(OnnxNetwork(path, network.cfg), tokenizer, labels), texts,
                                  truths, path, predicted)
        if confidence is not None:
            interval = paired_interval(truths, predicted[name], predicted["torch"], metric, confidence)
            measured[name] = measured[name].model_copy(update={"vs_torch": interval})
    return _judged(measured, metric, margin, "")


def _measure(name: str, classifier: TextClassifier, texts: list[str], truths: list[str], path: Path | None,
             predicted: dict[str, list[str]]) -> Variant:
    """A variant's test metrics, its latency at each batch size on the test texts, and its size; its labels go
    into `predicted`, for the paired comparison."""
    predicted[name] = classifier.predict(texts)
    metrics = classification_metrics(truths, predicted[name])
    latency = {}
    ids = encode_texts(classifier.tokenizer, texts, classifier.network.cfg.max_len)
    for batch in BATCHES:
        p50, p95 = _latency_ms(classifier, ids, batch)
        latency[f"b{batch}_p50"], latency[f"b{batch}_p95"] = p50, p95
    if path is None:
        size = sum(p.numel() * p.element_size() for p in classifier.network.parameters()) / 2**20
    else:
        size = path.stat().st_size / 2**20
    return Variant(name=name, metrics=metrics, latency_ms=latency, size_mb=size, shipped=False,
                   file=None if path is None else str(path))


def _latency_ms(classifier: TextClassifier, ids: list[list[int]], batch: int) -> tuple[float, float]:
    """p50 and p95 of one forward of `batch` test texts (taken in turn), padded as served."""
    times = []
    network, pad_id = classifier.network, classifier.network.cfg.pad_id
    with torch.inference_mode():
        for run in range(WARMUP + REPEATS[batch]):
            rows = [ids[(run * batch + i) % len(ids)] for i in range(batch)]
            input_ids, attention_mask = pad_batch(rows, pad_id)
            started = time.perf_counter()
            network(input_ids, attention_mask)
            if run >= WARMUP:
                times.append((time.perf_counter() - started) * 1000)
    return float(np.percentile(times, 50)), float(np.percentile(times, 95))


def _judged(measured: dict[str, Variant], metric: str, margin: float, note: str) -> Deployment:
    """The variants with `shipped` decided, and the sentence."""
    reference = measured["torch"]
    base, fast = reference.metrics[metric], reference.latency_ms["b1_p50"]
    variants, clauses = [reference.model_copy(update={"shipped": True})], []
    for name in ("onnx-int8", "onnx"):
        if (variant := measured.get(name)) is None:
            continue
        value, interval = variant.metrics[metric], variant.vs_torch
        ships = within(value - base, margin, None if interval is None else interval.low)
        speed = fast / variant.latency_ms["b1_p50"] if variant.latency_ms["b1_p50"] else float("nan")
        variants.append(variant.model_copy(update={"shipped": ships}))
        label = "int8 ONNX" if name == "onnx-int8" else "ONNX"
        verdict = "shipped" if ships else _refusal(value - base, interval, margin)
        paired = f" ({interval.text()})" if interval is not None and interval.low != interval.high else ""
        clauses.append(f"{label}: {metric} {value:.3f} vs {base:.3f}{paired}, {speed:.1f}x as fast as torch at "
                       f"batch 1, {variant.size_mb:.2f} MiB: {verdict}")
    return Deployment(metric=metric, tolerance=margin, variants=variants, sentence="; ".join(clauses) or note)


def _refusal(difference: float, interval: Interval | None, margin: float) -> str:
    """Why a variant does not ship: it loses more than the margin, or the test rows do not show it within (the
    sentence calls the deployment margin the gate's tolerance, as it always has)."""
    if not within(difference, margin) or interval is None:
        return f"not shipped (it loses more than the tolerance {margin:g})"
    return (f"not shipped (the test rows do not show it within the tolerance {margin:g}: its interval reaches "
            f"{interval.low:+.3f})".replace("-", "\u2212"))
