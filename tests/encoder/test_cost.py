from __future__ import annotations

import pytest

from depthfinder.encoder.cost import measure_cost
from depthfinder.encoder.model import EncoderClassifier, EncoderConfig

KEYS = {"params", "params_without_embeddings", "flops_per_example", "latency_ms_p50", "latency_ms_p95",
        "throughput_per_s", "peak_memory_mb"}


def tiny_network(depth: int) -> EncoderClassifier:
    cfg = EncoderConfig(vocab_size=200, n_classes=3, depth=depth, d_model=32, n_heads=2, d_ff=64, max_len=64)
    return EncoderClassifier(cfg)


def quick_cost(network: EncoderClassifier, length: int, batch: int = 8) -> dict[str, float]:
    return measure_cost(network, length, latency_repeats=5, throughput_batch=batch)


def matmul_flops(depth: int, length: int, d_model: int = 32, d_ff: int = 64, n_classes: int = 3) -> int:
    """2 * multiply-adds of the projections, the MLP, attention (T x T) and the head."""
    per_block = 2 * length * d_model * (3 * d_model + d_model + 2 * d_ff) + 2 * 2 * length * length * d_model
    return depth * per_block + 2 * d_model * n_classes


def test_cost_reports_every_key_and_the_network_parameter_counts() -> None:
    network = tiny_network(2)
    cost = quick_cost(network, 16)
    assert set(cost) == KEYS
    assert cost["params"] == network.num_params()
    assert cost["params_without_embeddings"] == network.num_params(embeddings=False)
    assert cost["latency_ms_p95"] >= cost["latency_ms_p50"] > 0
    assert cost["throughput_per_s"] > 0
    assert cost["peak_memory_mb"] * 2**20 > 4 * network.num_params()


def test_flops_count_attention_and_grow_with_depth_and_length() -> None:
    flops = {(depth, length): quick_cost(tiny_network(depth), length)["flops_per_example"]
             for depth, length in [(1, 16), (2, 16), (4, 16), (2, 48)]}
    assert flops[(1, 16)] < flops[(2, 16)] < flops[(4, 16)]
    assert flops[(2, 16)] < flops[(2, 48)]
    assert all(value == matmul_flops(depth, length) for (depth, length), value in flops.items())


def test_peak_memory_grows_with_the_batch_and_modes_are_restored() -> None:
    network = tiny_network(2).train()
    small, large = quick_cost(network, 32, batch=4), quick_cost(network, 32, batch=64)
    assert large["peak_memory_mb"] > small["peak_memory_mb"]
    assert network.training


def test_lengths_the_network_cannot_take_are_refused() -> None:
    with pytest.raises(ValueError, match="example_length"):
        quick_cost(tiny_network(1), 65)
