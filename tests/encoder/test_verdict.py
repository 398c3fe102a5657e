"""The size limit's verdict names the form that tells the user the most: what could ship, or how far off the limit
every form is."""

from __future__ import annotations

from depthfinder.encoder.verdict import TriedDepth, UnmetLimit


def _tried(depth: str, sizes: dict[str, float], passed: list[str]) -> TriedDepth:
    return TriedDepth(depth=depth, sizes_mb=sizes, passed_mb={form: sizes[form] for form in passed},
                      over=[f"size_mb {min(sizes.values())} > max_size_mb"])


def test_every_form_over_the_limit_names_the_smallest_of_all_passed_or_not() -> None:
    """Depth 1's int8 form is the smallest of all but lost on the validation rows; depth 2's passed. Both are over
    0.05, so the smallest of all says how far the limit is."""
    tried = [_tried("depth 1", {"torch": 0.21, "onnx-int8-pruned": 0.093}, ["torch"]),
             _tried("depth 2", {"torch": 0.34, "onnx-int8-pruned": 0.164}, ["torch", "onnx-int8-pruned"])]

    sentence = UnmetLimit(limit_mb=0.05, tried=tried).sentence()

    assert sentence.startswith("no form within max_size_mb 0.05: the smallest, depth 1's onnx-int8-pruned, weighs "
                               "0.09 MiB, over the limit like every form of every depth"), sentence


def test_a_form_within_the_limit_refused_names_the_smallest_that_passed_and_what_was_left_out() -> None:
    """Depth 1's int8 form is within 0.095 but lost on the validation rows: depth 2's could ship."""
    tried = [_tried("depth 1", {"torch": 0.21, "onnx-int8-pruned": 0.093}, ["torch"]),
             _tried("depth 2", {"torch": 0.34, "onnx-int8-pruned": 0.164}, ["torch", "onnx-int8-pruned"])]

    sentence = UnmetLimit(limit_mb=0.095, tried=tried).sentence()

    assert "the smallest, depth 2's onnx-int8-pruned, weighs 0.16 MiB, the smallest that passed" in sentence
    assert "it left out onnx-int8-pruned within the limit" in sentence
