"""What a candidate weighs in each form it could ship in, before the deployment gate judges any of them.

The torch form's size is its float32 (or whatever precision it holds) parameters; its pruned form's, the same with
the vocabulary pruned to the train and validation texts (encoder.vocabulary). The int8 ONNX forms are exported and
quantised as the deployment makes them (encoder.export) and weighed by their files: ONNX Runtime's dynamic
quantisation keeps biases and norms in float32 and may leave a matrix unquantised, so no formula stands in for the
file. Exporting costs seconds per candidate, so the ONNX forms are weighed only when the rule asks for size (`--cost
size_mb` or `--max-size-mb`) and ONNX Runtime is installed.
"""

from __future__ import annotations

import copy
import tempfile
from collections.abc import Iterable
from pathlib import Path

from tokenizers import Tokenizer

from depthfinder.encoder.coded import CODED, coded_file
from depthfinder.encoder.serving import Network
from depthfinder.encoder.vocabulary import prunable, prune

MIB = 2**20
# Each form's name, as the cost table and the deployment call it.
TORCH, TORCH_PRUNED, INT8, INT8_PRUNED = "torch", "torch-pruned", "onnx-int8", "onnx-int8-pruned"
INT8_CODED = CODED


def weights_mb(network: Network) -> float:
    """The size of a network's parameters as it holds them, MiB."""
    return sum(p.numel() * p.element_size() for p in network.parameters()) / MIB


def form_sizes(network: Network, tokenizer: Tokenizer, train_texts: Iterable[str], onnx: bool = False,
               min_count: int = 1, limit_mb: float | None = None) -> dict[str, float]:
    """MiB of each form the network could ship in: torch, torch with the vocabulary pruned to `train_texts` (tokens
    used `min_count` times or more; WordPiece only), and with `onnx` their int8 ONNX files and the int8 file with the
    embedding rows `train_texts` never use coded (encoder.coded, as finely as the size limit `limit_mb` allows; its
    size is its shapes', so it is weighed unfitted). The network is not changed (the forms are made from a CPU
    copy)."""
    network, train_texts = copy.deepcopy(network).cpu().eval(), list(train_texts)
    forms = {TORCH: network}
    if prunable(tokenizer, network) is None:
        forms[TORCH_PRUNED] = prune(network, tokenizer, train_texts, min_count)[0]
    sizes = {name: weights_mb(form) for name, form in forms.items()}
    if onnx and _has_onnxruntime():
        sizes |= _int8_sizes(forms, tokenizer, train_texts, limit_mb)
    return sizes


def _int8_sizes(forms: dict[str, Network], tokenizer: Tokenizer, train_texts: list[str], limit_mb: float | None
                ) -> dict[str, float]:
    """The int8 ONNX file of each torch form and the coded one, weighed and deleted."""
    from depthfinder.encoder.export import export_onnx, quantize

    names = {TORCH: INT8, TORCH_PRUNED: INT8_PRUNED}
    sizes = {}
    with tempfile.TemporaryDirectory(prefix="depthfinder-size-") as folder:
        for name, form in forms.items():
            fp32 = export_onnx(form, Path(folder) / f"{name}.onnx")
            sizes[names[name]] = quantize(fp32, Path(folder) / f"{name}-int8.onnx").stat().st_size / MIB
        coded = coded_file(forms[TORCH], tokenizer, train_texts, Path(folder) / "coded-int8.onnx", limit_mb, fit=False)
        sizes[INT8_CODED] = coded[2].stat().st_size / MIB
    return sizes


def _has_onnxruntime() -> bool:
    try:
        import onnxruntime  # noqa: F401 (the extra that makes ONNX forms)
    except ImportError:
        return False
    return True


def smallest(sizes: dict[str, float]) -> float | None:
    """The size of the smallest form, MiB; None when none was weighed."""
    return min(sizes.values()) if sizes else None
