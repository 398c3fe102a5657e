"""The chosen model as it will run: torch fp32, ONNX fp32 and int8 ONNX on the real data, at batch 1 and 32.

Two `depthfinder run`s, each in its own folder, with one depth so that the model is fixed: the scratch family at
depth 2 on `sms_spam.csv`, and all-MiniLM-L6-v2's bottom 4 layers (pretrained, the type's own head, so that the
model is also a Hugging Face folder) on `uci_sentiment_sentences.csv` (bench/pretrained_depth.py says where the
checkpoint comes from). The run itself measures every variant on its test split (encoder/deployment.py): test
macro-F1, latency p50/p95 of a forward at batch 1 and 32 on the test texts, size, and whether it ships (within
the rule's tolerance, 0.01, of torch). Printed per run: a table of the variants. Last line:
`RESULT int8_speedup_b1=<scratch>,<pretrained> int8_f1_drop=<...> int8_shipped=<...> onnx_speedup_b1=<...>`
(speed-ups: torch's p50 at batch 1 over the variant's; drops: torch's test macro-F1 minus the variant's).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from bench.common import DATA, add_cache_argument, minilm, run_depthfinder

RUNS = {
    "scratch depth 2, sms_spam.csv": ("sms_spam.csv", "2", []),
    "MiniLM depth 4 (head), uci_sentiment_sentences.csv": ("uci_sentiment_sentences.csv", "4", ["pretrained"]),
}


def table(name: str, deployment: dict) -> list[str]:
    torch_p50 = deployment["variants"][0]["latency_ms"]["b1_p50"]
    lines = [f"\n{name}\n", "| variant | test macro-F1 | b1 p50 ms | b1 p95 ms | b32 p50 ms | b32 p95 ms | MiB | "
             "speed-up b1 | shipped |", "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for v in deployment["variants"]:
        ms = v["latency_ms"]
        lines.append(f"| {v['name']} | {v['metrics']['macro_f1']:.3f} | {ms['b1_p50']:.2f} | {ms['b1_p95']:.2f} | "
                     f"{ms['b32_p50']:.2f} | {ms['b32_p95']:.2f} | {v['size_mb']:.1f} | "
                     f"{torch_p50 / ms['b1_p50']:.2f}x | {'yes' if v['shipped'] else 'no'} |")
    lines.append(f"\n{deployment['sentence']}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_cache_argument(parser)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    args = parser.parse_args(argv)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    results = {}
    with tempfile.TemporaryDirectory() as scratch_space:
        for index, (name, (data, depth, family)) in enumerate(RUNS.items()):
            options = ["--pretrained", str(minilm(args.cache)), "--pretrained-pooling", "head"] if family else []
            folder = Path(scratch_space) / str(index)
            folder.mkdir()
            summary = run_depthfinder(["--data", str(DATA / data)], depth, folder, *options)["summary"]
            results[name] = summary["deployment"]
            print("\n".join(table(name, results[name])), flush=True)

    def each(variant: str, value) -> str:
        """`value(torch, variant)` of every run, comma-separated."""
        return ",".join(value(deployment["variants"][0], deployment_variant(deployment, variant))
                        for deployment in results.values())

    def speedup(torch_model: dict, variant: dict) -> str:
        return f"{torch_model['latency_ms']['b1_p50'] / variant['latency_ms']['b1_p50']:.2f}"

    def drop(torch_model: dict, variant: dict) -> str:
        return f"{torch_model['metrics']['macro_f1'] - variant['metrics']['macro_f1']:.4f}"

    print("RESULT " + " ".join([
        f"int8_speedup_b1={each('onnx-int8', speedup)}", f"int8_f1_drop={each('onnx-int8', drop)}",
        "int8_shipped=" + each("onnx-int8", lambda _, variant: str(variant["shipped"]).lower()),
        f"onnx_speedup_b1={each('onnx', speedup)}",
    ]))
    return 0


def deployment_variant(deployment: dict, name: str) -> dict:
    return next(variant for variant in deployment["variants"] if variant["name"] == name)


if __name__ == "__main__":
    sys.exit(main())
