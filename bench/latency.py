"""The latencies a run shipped, next to a quiet re-measurement of the same models by the same harness.

A run's summary (`--summary PATH`, with the bundles and ONNX files it names still on disk; without it, a small
`depthfinder run` on the built-in `topics` dataset at depths 1 and 2 in a scratch folder) holds two kinds of
latency: the cost table's (each candidate's torch network at batch 1 on a synthetic input of its median train
length, measured after it trained) and the deployable forms' (torch, ONNX, int8 ONNX of the chosen model at batch 1
on the test texts). Both come from encoder.latency's interleaved rounds. Here each is measured again, all the
candidates' networks in one set of rounds and the forms in another, with `--rounds` rounds (more than a run uses),
and printed beside what was shipped. A shipped figure more than encoder.latency.PLAUSIBLE_RATIO away from the quiet
one was measured on a busy machine. Last line:
`RESULT candidates=<n> worst_cost_ratio=<shipped/quiet, farthest from 1> forms=<n> worst_form_ratio=<...>
int8_speedup_shipped=<torch/int8 p50> int8_speedup_quiet=<...> noisy=<the run's deployment said noisy: 0|1>`
(ratios without units; latencies in ms).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from bench.common import run_depthfinder

# The run made when no summary is given: the built-in topics, small, a few epochs.
SMALL_RUN = "data: {dataset: topics, dataset_rows: 800}\ntrain: {max_epochs: 3}\n"


def cost_latencies(candidates: list[dict], rounds: int) -> dict[str, float]:
    """Each candidate's torch network at batch 1 on the cost table's input, all in the same rounds; ms by name."""
    import torch

    from depthfinder.encoder.cost import _example_batch
    from depthfinder.encoder.latency import interleaved
    from depthfinder.encoder.serving import load_bundle

    forwards = {}
    for candidate in candidates:
        network = load_bundle(Path(candidate["bundle"])).network.eval()
        batch = _example_batch(network, 1, _length(candidate, network), torch.device("cpu"))
        forwards[_name(candidate)] = lambda _, network=network, batch=batch: network(*batch)
    with torch.inference_mode():
        return {name: latency.p50 for name, latency in interleaved(forwards, rounds).items()}


def _length(candidate: dict, network) -> int:
    """The example length the cost table used: the one whose FLOPs it counted (found by counting again)."""
    import torch

    from depthfinder.encoder.cost import _example_batch, _forward_flops

    for length in range(1, network.cfg.max_len + 1):
        batch = _example_batch(network, 1, length, torch.device("cpu"))
        if _forward_flops(network, batch) >= candidate["cost"]["flops_per_example"]:
            return length
    return network.cfg.max_len


def _name(candidate: dict) -> str:
    return f"{candidate['family']} depth {candidate['depth']} seed {candidate['seed']}"


def form_latencies(summary: dict, texts: list[str], rounds: int) -> dict[str, float]:
    """The chosen model's forms at batch 1 on the test texts, all in the same rounds; ms by form."""
    from depthfinder.encoder.deployment import _timed
    from depthfinder.encoder.export import OnnxNetwork
    from depthfinder.encoder.serving import TextClassifier, load_bundle

    chosen = next(c for c in summary["candidates"] if c["mlflow_run_id"] == _chosen_run(summary))
    model = load_bundle(Path(chosen["bundle"]))
    classifiers = {"torch": TextClassifier(model.network, model.tokenizer, model.labels)}
    for variant in summary["deployment"]["variants"]:
        if variant.get("file") and Path(variant["file"]).exists():
            classifiers[variant["name"]] = TextClassifier(OnnxNetwork(Path(variant["file"]), model.network.cfg),
                                                          model.tokenizer, model.labels)
    return {name: latency.p50 for name, latency in _timed(classifiers, texts, 1, None, rounds).latencies.items()}


def _chosen_run(summary: dict) -> str:
    chosen = [c for c in summary["candidates"] if (c["family"], c["depth"]) == (
        summary["rule"]["selected_family"], summary["selected_depth"]) and c["status"] in ("trained", "cached")]
    return max(chosen, key=lambda c: c["metrics"][summary["rule"]["metric"]])["mlflow_run_id"]


def ratio_text(shipped: float, quiet: float) -> str:
    return f"{shipped / quiet:.2f}" if quiet else "-"


def farthest(ratios: list[float]) -> float:
    """The ratio farthest from 1 (either way)."""
    return max(ratios, key=lambda r: max(r, 1 / r)) if ratios else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--summary", type=Path, help="a run's --summary-json (default: make a small run)")
    parser.add_argument("--test-texts", type=Path, help="the test texts, one per line (default: the run's own)")
    parser.add_argument("--rounds", type=int, default=21, help="rounds of the quiet re-measurement")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        if args.summary:
            summary = json.loads(args.summary.read_text())
        else:
            (config := Path(scratch) / "small.yaml").write_text(SMALL_RUN)
            summary = run_depthfinder(["--config", str(config)], "1,2", Path(scratch))["summary"]
        return report(summary, _texts(summary, args.test_texts), args.rounds)


def _texts(summary: dict, path: Path | None) -> list[str]:
    """The test texts the forms were measured on (the run's prepared table), or the file given."""
    if path is not None:
        return [line for line in path.read_text().splitlines() if line.strip()]
    import pandas as pd

    tables = list(Path(summary["candidates"][0]["bundle"]).parents[2].glob("data/*.parquet"))  # workdir/data
    prepared = max(tables, key=lambda path: path.stat().st_mtime, default=None)
    if prepared is None:
        raise SystemExit("the run's prepared table is gone: pass --test-texts FILE")
    frame = pd.read_parquet(prepared, columns=["text", "split"])
    return frame.loc[frame["split"] == "test", "text"].tolist()


def report(summary: dict, texts: list[str], rounds: int) -> int:
    """Print the two tables and the RESULT line."""
    usable = [c for c in summary["candidates"] if c["status"] in ("trained", "cached") and c.get("bundle")]
    quiet = cost_latencies(usable, rounds)
    print("| candidate | MFLOPs/ex | shipped p50 ms | quiet p50 ms | shipped / quiet |\n|---|---:|---:|---:|---:|")
    cost_ratios = []
    for c in usable:
        shipped, again = c["cost"]["latency_ms_p50"], quiet[_name(c)]
        cost_ratios.append(shipped / again)
        print(f"| {_name(c)} | {c['cost']['flops_per_example'] / 1e6:.2f} | {shipped:.3f} | {again:.3f} | "
              f"{ratio_text(shipped, again)} |")
    deployment = summary.get("deployment") or {"variants": [], "latency_noisy": None}
    forms = form_latencies(summary, texts, rounds) if deployment["variants"] else {}
    print("\n| form | shipped b1 p50 ms | quiet b1 p50 ms | shipped / quiet |\n|---|---:|---:|---:|")
    form_ratios = []
    for variant in deployment["variants"]:
        if variant["name"] not in forms:
            continue
        shipped, again = variant["latency_ms"]["b1_p50"], forms[variant["name"]]
        form_ratios.append(shipped / again)
        print(f"| {variant['name']} | {shipped:.3f} | {again:.3f} | {ratio_text(shipped, again)} |")
    shipped_int8 = {v["name"]: v["latency_ms"]["b1_p50"] for v in deployment["variants"]}
    speedups = [f"{table['torch'] / table['onnx-int8']:.2f}" if "onnx-int8" in table else "-"
                for table in (shipped_int8, forms)]
    print("RESULT " + " ".join([
        f"candidates={len(usable)}", f"worst_cost_ratio={farthest(cost_ratios):.2f}", f"forms={len(form_ratios)}",
        f"worst_form_ratio={farthest(form_ratios):.2f}", f"int8_speedup_shipped={speedups[0]}",
        f"int8_speedup_quiet={speedups[1]}", f"noisy={int(bool(deployment.get('latency_noisy')))}",
    ]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
