"""A network as ONNX Runtime runs it: exported to an ONNX graph, quantised to int8 weights, and served in the torch
network's place.

The network is exported by torch's TorchScript-based exporter with dynamic batch and sequence axes, and quantised by
ONNX Runtime's dynamic quantisation (activations quantised on the fly). The deployment (encoder.deployment), the
forms' sizes (encoder.size) and the cost table's int8 latency (encoder.cost) all make their files here, so that each
weighs and times the file the deployment ships.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import torch

from depthfinder.encoder.serving import Network

OPSET = 17


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
    """int8 weights by ONNX Runtime's dynamic quantisation (activations quantised on the fly), one scale per output
    channel of each matrix, after its recommended pre-processing (shape inference, graph optimisation). Per-channel
    scales kept all-MiniLM-L6-v2's test macro-F1 within 0.003 of float32 on three fine-tuned models of two files,
    each shown within the 0.01 margin, where one scale per matrix moved it by up to 0.009 and left one interval
    unsettled (−0.002 [−0.014, +0.010]), for 0.03 MiB more (bench/quantization.py)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process

    prepared = int8.with_suffix(".prepared.onnx")
    quant_pre_process(str(fp32), str(prepared), skip_symbolic_shape=True)  # symbolic inference fails on masks
    quantize_dynamic(str(prepared), str(int8), weight_type=QuantType.QInt8, per_channel=True)
    prepared.unlink()
    return int8
