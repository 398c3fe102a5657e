"""A model an edge device can hold: all-MiniLM-L6-v2 at depths 1-3, each form's size, test macro-F1 and latency.

For each real file (`sms_spam.csv`, `uci_sentiment_sentences.csv`), one `depthfinder run` fine-tunes the bottom 1, 2
and 3 layers of all-MiniLM-L6-v2 (bench/pretrained_depth.py says where the checkpoint comes from) with its
defaults, `--max-size-mb` (default 8) and no cross-fitting (the forms are this bench's subject, not the choice).
Then, for every depth, the deployment gate (encoder/deployment.py) is run twice on the same test split: without the
train and validation texts (torch, ONNX and int8 ONNX of the full vocabulary) and with them, as the product runs it
(the vocabulary pruned to them; when the gate ships it, the ONNX forms are made from it, else the int8 form with the
rows they never use coded, encoder.coded). Among `--datasets`, `uci6` is the UCI file labelled by source and
sentiment (6 classes: bench/student_recipe.py) and `docstrings` 2,000 first paragraphs of docstrings in the numpy,
pandas, torch, mlflow and prefect wheels labelled by package (5 classes, BSD-3 and Apache-2.0 text; its test split
holds identifiers its train split never saw), each written beside the runs.
Printed per file and depth: each form's size (MiB of its weights or file), test macro-F1 with its 90 % bootstrap
interval, its difference from the full torch model with the paired interval, batch-1 p50 latency and whether the
gate ships it; then, at depth 2, the tokens kept and the test macro-F1 of the pruned torch model by count threshold
(`--min-counts`). Last line:
`RESULT d2_shipped_mib=<per file> d2_goal=<per file: yes when the smallest form shipped at depth 2 is at most 8 MiB>
d2_int8_pruned_mib=<...> d2_int8_pruned_f1_drop=<...> d2_coded_mib=<...> d2_coded_f1_drop=<...>
chosen_depths=<...>`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from bench.common import DATA, DATASETS, add_cache_argument, docstrings_file, minilm, run_depthfinder

GOAL_MIB = 8.0
METRIC, MARGIN, CONFIDENCE = "macro_f1", 0.01, 0.9


def splits(path: Path) -> dict[str, tuple[list[str], list[str]]]:
    """The file's texts and labels by split, as a run splits it (the same stable split)."""
    from depthfinder.expectations.table.config import DataConfig
    from depthfinder.tasks.data import prepare_table

    table = prepare_table(DataConfig(path=path)).table
    return {name: (part["text"].tolist(), part["label"].tolist())
            for name, part in table.groupby("split")}


def forms(bundle: Path, data: dict, folder: Path, limit_mb: float) -> list[dict]:
    """Every form of one depth's model, each measured on the test split by the deployment gate (the coded one coded
    as finely as `limit_mb` allows, as the run codes it)."""
    from depthfinder.encoder.deployment import Gate, Shrinking, measure_deployment
    from depthfinder.encoder.serving import load_bundle

    model = load_bundle(bundle)
    texts, truths = data["test"]
    rows = []
    for pruned in (False, True):
        shrinking = Shrinking([*data["train"][0], *data["val"][0]] if pruned else None, limit_mb=limit_mb)
        deployment = measure_deployment(model, texts, truths, Gate(METRIC, MARGIN, CONFIDENCE), folder / str(pruned),
                                        shrinking)
        for variant in deployment.variants:
            if pruned and not (variant.pruned or variant.name == "onnx-int8-coded"):
                continue  # each form once: the full ones from the first pass, the pruned and coded from the second
            rows.append({"form": variant.name, "pruned": variant.pruned, "mib": variant.size_mb,
                         "f1": variant.metrics[METRIC], "low": variant.metric_low, "high": variant.metric_high,
                         "vs": variant.vs_torch, "p50": variant.latency_ms["b1_p50"], "shipped": variant.shipped,
                         "tokens": deployment.pruning.kept if variant.pruned else model.tokenizer.get_vocab_size()})
    return rows


def thresholds(bundle: Path, data: dict, min_counts: list[int]) -> list[str]:
    """Tokens kept and the pruned torch model's test macro-F1 (and its difference from torch) by count threshold."""
    from depthfinder.encoder.serving import TextClassifier, load_bundle
    from depthfinder.encoder.vocabulary import kept_ids, prune_network, prune_tokenizer, token_counts
    from depthfinder.evidence.bootstrap import paired_interval
    from depthfinder.evidence.metrics import classification_metrics

    model = load_bundle(bundle)
    texts, truths = data["test"]
    reference = model.predict(texts)
    counts = token_counts(model.tokenizer, data["train"][0])
    lines = ["| min count | tokens kept | of | torch MiB | test macro-F1 | vs torch [90 % paired] |",
             "|---|---:|---:|---:|---:|---|"]
    for min_count in min_counts:
        kept = kept_ids(model.tokenizer, counts, min_count)
        network, tokenizer = prune_network(model.network, kept), prune_tokenizer(model.tokenizer, kept)
        pruned = TextClassifier(network, tokenizer, model.labels)
        predicted = pruned.predict(texts)
        interval = paired_interval(truths, predicted, reference, METRIC, CONFIDENCE)
        mib = sum(p.numel() * p.element_size() for p in pruned.network.parameters()) / 2**20
        lines.append(f"| {min_count} | {len(kept):,} | {model.tokenizer.get_vocab_size():,} | {mib:.1f} | "
                     f"{classification_metrics(truths, predicted)[METRIC]:.3f} | {interval.text()} |")
    return lines


def table(name: str, depth: int, rows: list[dict]) -> list[str]:
    lines = [f"\n{name}, MiniLM depth {depth}",
             "| form | vocabulary | MiB | test macro-F1 [90 %] | vs torch [90 % paired] | b1 p50 ms | shipped |",
             "|---|---|---:|---|---|---:|---|"]
    for row in rows:
        kind = "pruned" if row["pruned"] else "full, unused rows coded" if row["form"] == "onnx-int8-coded" else "full"
        vocabulary = f"{kind} ({row['tokens']:,})"
        interval = f" [{row['low']:.3f}, {row['high']:.3f}]" if row["low"] is not None else ""
        lines.append(f"| {row['form']} | {vocabulary} | {row['mib']:.2f} | {row['f1']:.3f}{interval} | "
                     f"{row['vs'].text() if row['vs'] else '-'} | {row['p50']:.2f} | "
                     f"{'yes' if row['shipped'] else 'no'} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_cache_argument(parser)
    parser.add_argument("--datasets", default=",".join(DATASETS), help="files under DEPTHFINDER_DATA")
    parser.add_argument("--depths", default="1,2,3")
    parser.add_argument("--max-size-mb", type=float, default=GOAL_MIB)
    parser.add_argument("--min-counts", default="1,2,3,5,10", help="count thresholds measured at depth 2")
    parser.add_argument("--work", type=Path, default=None, help="keep the runs here (default: a temporary folder)")
    args = parser.parse_args(argv)
    from depthfinder.encoder.verdict import UnmetLimit

    checkpoint = minilm(args.cache)
    fields: dict[str, list[str]] = {key: [] for key in ("d2_shipped_mib", "d2_goal", "d2_int8_pruned_mib",
                                                         "d2_int8_pruned_f1_drop", "d2_coded_mib", "d2_coded_f1_drop",
                                                         "chosen_depths")}
    with tempfile.TemporaryDirectory() as scratch_space:
        root = args.work or Path(scratch_space)
        for name in args.datasets.split(","):
            folder = root / name
            folder.mkdir(parents=True, exist_ok=True)
            path = _file(name, folder)
            run = run_depthfinder(["--data", str(path)], args.depths, folder, "--pretrained", str(checkpoint),
                                  "--max-size-mb", f"{args.max_size_mb:g}", "--crossfit", "off", exits=(0, 3))
            summary = run["summary"]
            reason = summary["rule"]["reason"] if summary["rule"] else "the rule had no depth within the limits"
            print(f"\n{name}: chose depth {run['depth']} in {run['seconds']:.0f} s; {reason}")
            print(f"deployment: {summary['deployment']['sentence']}" if summary["deployment"] else
                  f"outcome (exit 3): {UnmetLimit.model_validate(summary['unmet']).sentence()}", flush=True)
            fields["chosen_depths"].append(str(run["depth"]))
            data = splits(path)
            for candidate in sorted(summary["candidates"], key=lambda c: c["depth"]):
                if not candidate.get("bundle"):
                    continue
                rows = forms(Path(candidate["bundle"]), data, folder / f"forms-{candidate['depth']}", args.max_size_mb)
                print("\n".join(table(name, candidate["depth"], rows)), flush=True)
                print(f"cost table sizes_mb: {candidate['cost']['sizes_mb']}")
                if candidate["depth"] == 2:
                    _goal(rows, fields)
                    print("\n".join(thresholds(Path(candidate["bundle"]), data,
                                               [int(n) for n in args.min_counts.split(",")])), flush=True)
    print(f"\ndatasets: {args.datasets}")
    print("RESULT " + " ".join(f"{key}={','.join(values)}" for key, values in fields.items()))
    return 0


def _file(name: str, folder: Path) -> Path:
    """The data file of `name`: under DEPTHFINDER_DATA, or written into `folder`: `uci6` (without the texts that
    carry two of its labels: the same review under two sources, which the audit blocks as conflicting labels) or
    `docstrings` (bench.common.docstrings_file: a vocabulary broader than the shared files')."""
    if name == "uci6":
        from bench.student_recipe import table as named_table
        from depthfinder.expectations.table.normalize import text_keys

        frame = named_table("uci6", DATA)
        keys = text_keys(frame["text"])
        conflicting = keys.map(frame.groupby(keys)["label"].nunique()) > 1  # one review, two sources: the audit blocks
        path = folder / "uci6.csv"
        frame[~conflicting].to_csv(path, index=False)
        print(f"uci6: {int(conflicting.sum())} rows whose text carries two labels left out", flush=True)
        return path
    if name == "docstrings":
        return docstrings_file(folder / "docstrings.csv")
    if not (DATA / name).is_file():
        raise SystemExit(f"no {DATA / name}: set DEPTHFINDER_DATA (docs/benchmarks.md)")
    return DATA / name


def _goal(rows: list[dict], fields: dict[str, list[str]]) -> None:
    """Depth 2's smallest shipped form against the goal, and its int8 pruned form's size and loss."""
    shipped = min((row for row in rows if row["shipped"]), key=lambda row: row["mib"])
    fields["d2_shipped_mib"].append(f"{shipped['mib']:.2f}")
    fields["d2_goal"].append("yes" if shipped["mib"] <= GOAL_MIB else "no")
    int8 = next((row for row in rows if row["form"] == "onnx-int8" and row["pruned"]), None)
    torch_f1 = next(row["f1"] for row in rows if row["form"] == "torch")
    fields["d2_int8_pruned_mib"].append(f"{int8['mib']:.2f}" if int8 else "-")
    fields["d2_int8_pruned_f1_drop"].append(f"{torch_f1 - int8['f1']:.4f}" if int8 else "-")
    coded = next((row for row in rows if row["form"] == "onnx-int8-coded"), None)
    fields["d2_coded_mib"].append(f"{coded['mib']:.2f}" if coded else "-")
    fields["d2_coded_f1_drop"].append(f"{torch_f1 - coded['f1']:.4f}" if coded else "-")


if __name__ == "__main__":
    sys.exit(main())
