"""What a candidate costs to run: size, FLOPs, CPU latency, throughput and peak memory."""

from __future__ import annotations

import copy
import logging
import tempfile
import time
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import FlopCounterMode

if TYPE_CHECKING:
    from depthfinder.encoder.latency import Latency
    from depthfinder.encoder.model import EncoderClassifier

MIB = 2**20
THROUGHPUT_MAX_RUNS = 5
THROUGHPUT_MIN_SECONDS = 0.25
Batch = tuple[torch.Tensor, torch.Tensor]  # (input_ids (B, T), attention_mask (B, T))


def measure_cost(
    network: EncoderClassifier, example_length: int, *, latency_repeats: int = 7, throughput_batch: int = 64,
    onnx: bool = False,
) -> dict[str, float]:
    """Measure the cost of one network on inputs of `example_length` real tokens.

    Args:
        network: the classifier; it is left on its device, in its train/eval mode.
        example_length: tokens per example, e.g. the median train length ([CLS] included).
        latency_repeats: timed batch-1 forwards per round of the latency harness (encoder.latency).
        throughput_batch: examples per batch for throughput and peak memory.
        onnx: also time the network as it ships to ONNX Runtime (int8, encoder.deployment), in the same
            rounds as torch.

    Returns:
        `params` and `params_without_embeddings` (token and position embeddings excluded);
        `flops_per_example`: FLOPs of one batch-1 forward, counted by torch's FlopCounterMode
        with the math attention kernel (the fused CPU kernel is invisible to the counter);
        `latency_ms_p50`, `latency_ms_p95`: batch-1 forward on CPU, the deployment target,
        under inference mode after warm-up, with torch's current thread count, by the one latency harness
        (encoder.latency: rounds, the median of their medians); with `onnx`, `onnx_latency_ms_p50` too,
        measured in the same rounds;
        `throughput_per_s`: examples per second at `throughput_batch` after a warm-up forward, under
        inference mode; `peak_memory_mb`:
        parameters + buffers + inputs + the peak of tensors alive during one forward at
        that batch, both on the network's own device. On CUDA the peak comes from
        `torch.cuda.max_memory_allocated`; on CPU from tracking every tensor storage the
        forward's operators return, so scratch buffers internal to a kernel are not counted.
    """
    if not 1 <= example_length <= network.cfg.max_len:
        raise ValueError(f"example_length must be in [1, {network.cfg.max_len}], got {example_length}")
    if latency_repeats < 1 or throughput_batch < 1:
        raise ValueError(
            f"latency_repeats and throughput_batch must be >= 1, got {latency_repeats} and {throughput_batch}"
        )
    device = next(network.parameters()).device
    cpu_network = network if device.type == "cpu" else copy.deepcopy(network).cpu()
    was_training = network.training
    network.eval()
    cpu_network.eval()
    try:
        with torch.inference_mode():
            single = _example_batch(network, 1, example_length, torch.device("cpu"))
            latency = _latencies(cpu_network, single, latency_repeats, onnx)
            batch = _example_batch(network, throughput_batch, example_length, device)
            peak_bytes = _peak_forward_bytes(network, batch)
            throughput = throughput_batch / _median_forward_seconds(network, batch)
        flops = _forward_flops(cpu_network, single)
    finally:
        network.train(was_training)
    return {
        "params": float(network.num_params()),
        "params_without_embeddings": float(network.num_params(embeddings=False)),
        "flops_per_example": float(flops),
        "latency_ms_p50": latency["torch"].p50,
        "latency_ms_p95": latency["torch"].p95,
        "throughput_per_s": throughput,
        "peak_memory_mb": peak_bytes / MIB,
        **({"onnx_latency_ms_p50": latency["onnx-int8"].p50} if onnx else {}),
    }


def _latencies(network: EncoderClassifier, single: Batch, repeats: int, onnx: bool) -> dict[str, Latency]:
    """The batch-1 latency of the torch network (and of its int8 ONNX form, in the same rounds)."""
    from depthfinder.encoder.latency import measure

    forwards = {"torch": lambda _: network(*single)}
    if not onnx:
        return measure(forwards, "torch", repeats=repeats).latencies
    from depthfinder.encoder.export import OnnxNetwork, export_onnx, quantize

    with tempfile.TemporaryDirectory(prefix="depthfinder-onnx-") as folder:
        int8 = quantize(export_onnx(network, Path(folder) / "model.onnx"), Path(folder) / "model-int8.onnx")
        session = OnnxNetwork(int8, network.cfg)
        measured = measure(forwards | {"onnx-int8": lambda _: session(*single)}, "torch", repeats=repeats)
    if measured.noisy:
        logging.getLogger(__name__).warning("the int8 ONNX latency may be off: %s", measured.noisy)
    return measured.latencies


def _example_batch(network: EncoderClassifier, batch_size: int, length: int, device: torch.device) -> Batch:
    """Random non-pad token ids (fixed seed) and an all-True mask, (B, T) each."""
    generator = torch.Generator().manual_seed(0)
    input_ids = torch.randint(1, network.cfg.vocab_size, (batch_size, length), generator=generator)
    return input_ids.to(device), torch.ones(batch_size, length, dtype=torch.bool, device=device)


def _forward_flops(network: EncoderClassifier, batch: Batch) -> int:
    """FLOPs of one forward, attention through the math kernel so that it is counted (under no_grad: the
    counter's module tracker fails on some architectures' outputs in inference mode, DeBERTa's among them)."""
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), counter:
        network(*batch)
    return counter.get_total_flops()


def _median_forward_seconds(network: EncoderClassifier, batch: Batch) -> float:
    """Median time of a few forwards after one untimed warm-up (at least two, more while under a quarter second)."""
    device = batch[0].device
    network(*batch)
    times: list[float] = []
    while len(times) < 2 or (len(times) < THROUGHPUT_MAX_RUNS and sum(times) < THROUGHPUT_MIN_SECONDS):
        _synchronize(device)
        started = time.perf_counter()
        network(*batch)
        _synchronize(device)
        times.append(time.perf_counter() - started)
    return float(np.median(times))


def _peak_forward_bytes(network: EncoderClassifier, batch: Batch) -> float:
    """Bytes of parameters, buffers and inputs plus the peak extra bytes of one forward."""
    device = batch[0].device
    tensors = (*network.parameters(), *network.buffers(), *batch)
    resident = sum(t.untyped_storage().nbytes() for t in tensors)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        before = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        network(*batch)
        torch.cuda.synchronize(device)
        return resident + torch.cuda.max_memory_allocated(device) - before
    with _LiveStorageBytes(ignore=tensors) as tracker:
        network(*batch)
    return resident + tracker.peak


def _synchronize(device: torch.device) -> None:
    """Wait for queued CUDA work, so wall-clock time covers it."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class _LiveStorageBytes(TorchDispatchMode):
    """Peak bytes of the tensor storages created by operators while the mode is active.

    Storages of the `ignore` tensors (parameters, inputs) are never counted, so views of
    them (a transposed weight) do not look like new memory.
    """

    def __init__(self, ignore: tuple[torch.Tensor, ...] = ()) -> None:
        super().__init__()
        self.live = 0
        self.peak = 0
        self._ignored = {t.untyped_storage().data_ptr() for t in ignore}
        self._storages: dict[int, weakref.ref] = {}

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        for tensor in tree_leaves(out):
            if isinstance(tensor, torch.Tensor):
                self._track(tensor.untyped_storage())
        return out

    def _track(self, storage: torch.UntypedStorage) -> None:
        """Count a storage once, until it is freed."""
        key, nbytes = storage.data_ptr(), storage.nbytes()
        if nbytes == 0 or key in self._storages or key in self._ignored:
            return
        self.live += nbytes
        self.peak = max(self.peak, self.live)
        self._storages[key] = weakref.ref(storage, lambda _, key=key, nbytes=nbytes: self._release(key, nbytes))

    def _release(self, key: int, nbytes: int) -> None:
        """Forget a freed storage."""
        self.live -= nbytes
        self._storages.pop(key, None)
