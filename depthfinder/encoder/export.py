"""A network as ONNX Runtime runs it: exported to an ONNX graph, quantised to int8 weights, and served in the torch
network's place.

The network is exported by torch's TorchScript-based exporter with dynamic batch and sequence axes, and quantised to
int8 weights: its embedding tables row by row here, its matrices by ONNX Runtime's weight-only quantiser (the
MatMulNBits operator of ONNX Runtime's own set: the int8 file runs on ONNX Runtime). The deployment
(encoder.deployment), the forms' sizes (encoder.size) and the cost table's int8 latency (encoder.cost) all make their
files here, so that each weighs and times the file the deployment ships.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import torch

from depthfinder.encoder.serving import Network, labels_tokens

if TYPE_CHECKING:
    import onnx

OPSET = 17
BLOCK = 128  # numbers of a matrix column per scale
ROW_SCALE = 32  # numbers of an embedding row at least, for a scale of its own (a scale's 4 bytes at most an eighth)
INT8_COMPUTE = 4  # MatMulNBits' accuracy level: int8 products of each block, 1.35-1.6x the speed of float ones


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
    per_token = {1: "tokens"} if labels_tokens(network.cfg) else {}  # a network of token labels: (B, T, K) logits
    axes = {"input_ids": {0: "batch", 1: "tokens"}, "attention_mask": {0: "batch", 1: "tokens"},
            "logits": {0: "batch", **per_token}}
    network = network.to("cpu").eval()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # tracer notes on shape-dependent Python code, expected here
        torch.onnx.export(network, (ids, mask), str(path), input_names=["input_ids", "attention_mask"],
                          output_names=["logits"], dynamic_axes=axes, opset_version=OPSET, dynamo=False)
    return path


def quantize(fp32: Path, int8: Path, *, block: int = BLOCK, compute: int = INT8_COMPUTE, rows: bool = True) -> Path:
    """int8 weights with float activations: the embedding tables with one scale per row (`_int8_rows`; left in float
    without `rows`), every matrix by ONNX Runtime's weight-only quantiser (MatMulNBits, 8 bits, one scale per `block`
    numbers of a column, the activations quantised only inside each block's product at accuracy level `compute`),
    after its recommended pre-processing (shape inference, graph optimisation). The keywords are bench/quantization.py's
    alternatives; the deployment ships the defaults.

    Measured against the torch model on the validation and test texts of four files (sms_spam.csv, the UCI sentences,
    a 6-class file of review sentences and one of docstrings, 185-563 rows each; all-MiniLM-L6-v2 at depths 2 and 3),
    it changed 15 labels where dynamic quantisation (activations quantised on the fly, one scale per output channel,
    one per embedding table) changed 47, and 39 of the coded form's where it changed 67, for 0.1-0.2 MiB and 40-65%
    more time per text (bench/quantization.py, docs/benchmarks.md)."""
    import onnx
    from onnxruntime.quantization.shape_inference import quant_pre_process

    nbits = _nbits_quantizer()
    prepared = int8.with_suffix(".prepared.onnx")
    quant_pre_process(str(fp32), str(prepared), skip_symbolic_shape=True)  # symbolic inference fails on masks
    model = onnx.load(str(prepared))
    if rows:
        _int8_rows(model.graph)
    options = {"bits": 8, "block_size": block, "is_symmetric": True, "accuracy_level": compute,
               "op_types_to_quantize": ("MatMul",)}
    quantizer = nbits.MatMulNBitsQuantizer(model, algo_config=nbits.DefaultWeightOnlyQuantConfig(**options), **options)
    quantizer.process()
    quantizer.model.save_model_to_file(str(int8), use_external_data_format=False)
    prepared.unlink()
    return int8


def _nbits_quantizer() -> ModuleType:
    """ONNX Runtime's weight-only quantiser, its INFO lines off: the module configures the root logger at import
    (`logging.basicConfig(level=INFO)`), which would print every library's INFO lines on stderr."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    from onnxruntime.quantization import matmul_nbits_quantizer

    root.handlers[:], root.level = handlers, level
    logging.getLogger(matmul_nbits_quantizer.__name__).setLevel(logging.WARNING)
    return matmul_nbits_quantizer


def _int8_rows(graph: onnx.GraphProto) -> None:
    """Each embedding table (a float matrix only Gathers read rows of) as int8 rows, looked up and scaled in the
    graph: one scale per row of at least `ROW_SCALE` numbers (4 bytes of 384 for all-MiniLM-L6-v2's: 0.12 MiB for
    its 30,522 rows), one per table of narrower rows (the coded form's centroids: a scale per row would double them).
    ONNX Runtime's quantisers give a table either one scale for all its rows (the dynamic one: rows of small numbers,
    rare tokens' among them, keep a few levels) or 4 bits (the weight-only one)."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    readers: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)
    tables = [table for table in graph.initializer if table.data_type == onnx.TensorProto.FLOAT
              and len(table.dims) == 2 and readers.get(table.name)
              and all(_reads_rows(node, table.name) for node in readers[table.name])]
    for table in tables:
        weights = numpy_helper.to_array(table)
        per_row = weights.shape[1] >= ROW_SCALE
        scale = np.abs(weights).max(axis=1 if per_row else None, keepdims=True) / 127  # (V, 1) or (1, 1)
        scale[scale == 0] = 1
        rows = np.clip(np.round(weights / scale), -127, 127).astype(np.int8)
        graph.initializer.remove(table)
        graph.initializer.extend([numpy_helper.from_array(rows, f"{table.name}_int8"),
                                  numpy_helper.from_array(scale.astype(np.float32), f"{table.name}_scale")])
        for node in readers[table.name]:
            ids, out = node.input[1], node.output[0]
            at = list(graph.node).index(node)
            graph.node.remove(node)
            graph.node.insert(at, helper.make_node("Gather", [f"{table.name}_int8", ids], [f"{out}_int8"]))
            graph.node.insert(at + 1, helper.make_node("Cast", [f"{out}_int8"], [f"{out}_rows"],
                                                       to=onnx.TensorProto.FLOAT))
            if per_row:
                graph.node.insert(at + 2, helper.make_node("Gather", [f"{table.name}_scale", ids], [f"{out}_scale"]))
            scaled = f"{out}_scale" if per_row else f"{table.name}_scale"
            graph.node.insert(at + 2 + per_row, helper.make_node("Mul", [f"{out}_rows", scaled], [out]))


def _reads_rows(node: onnx.NodeProto, table: str) -> bool:
    """Whether `node` is a Gather of whole rows of `table` (its data, along the first axis)."""
    axis = next((attribute.i for attribute in node.attribute if attribute.name == "axis"), 0)
    return node.op_type == "Gather" and node.input[0] == table and axis == 0
