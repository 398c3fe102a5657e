"""Does a student beat its plain twin? The distillation recipe measured at the encoder, without the flow around it.

For each file and seed: the rows cut once (stratified, by the seed) into `--train-rows` train, `--val-rows`
validation and every other row as test (the truth: thousands of rows, never used to decide); a teacher (the deepest
depth, `--teacher-depth`) and a plain twin of every cheaper depth trained on the labels (encoder.training, the family's
recipe, early-stopped on validation); then each cheaper depth trained again as a student of the teacher on the
distillation loss (sweep.distill.temperature and alpha's defaults, the teacher's logits on the train rows), two
ways, the product's two settings of `sweep.distill.start`:

- init: from the twin's initialisation (same family, depth and seed), the loss from the first step, the recipe's
  budget;
- twin: from the trained twin's weights, at half the recipe's peak learning rate, early-stopped on validation with
  the twin's own weights counted as its first state (a student no taught epoch improved keeps them: `kept`);

and, as the control that says what the teacher added, `more`: no student, the twin trained on from its weights for as
long again on the labels alone, the same way (half the peak rate, its weights its first state). A twin-started
student that beats its twin but not `more` bought its gain with epochs, not with its teacher.

Printed per file, seed and depth: the test macro-F1 of the teacher, the twin and each student, and each student's
gain over its twin; then per file and recipe the mean gain, the worst and how many students fell below their twin by
more than the tolerance (0.01). The goal: students beat their twins by at least +0.01 on test on average,
none below by more than the tolerance, on at least two files, one with 5 or more classes.

Files: `sms_spam.csv` (2 classes) and `uci6`, the UCI sentences labelled by source and sentiment (Amazon, IMDb, Yelp x
0/1: 6 classes, the shipped file's rows in their source order; CC BY 4.0, data/README.md). `--pretrained DIR` is the
MiniLM folder of bench/pretrained_depth.py (omitted: the scratch family, small, to develop the script). The training
runs wherever torch finds an accelerator (`--accelerator`), so the same script measures on a GPU machine.

Last line: `RESULT <file>_<recipe>_mean_gain=... <file>_<recipe>_worst=... <file>_<recipe>_losses=... ...`.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
METRIC = "macro_f1"
TOLERANCE = 0.01
RECIPES = ("init", "twin", "more")  # more: no student, the control (module docstring)


def table(name: str, data: Path) -> pd.DataFrame:
    """`text` and `label` of a file; `uci6`: the UCI sentences labelled by source and sentiment (6 classes)."""
    if name == "uci6":
        frame = pd.read_csv(data / "uci_sentiment_sentences.csv")
        source = np.repeat(["amazon", "imdb", "yelp"], 1000)[: len(frame)]
        return frame.assign(label=[f"{s}-{label}" for s, label in zip(source, frame["label"], strict=True)])
    return pd.read_csv(data / name)


def cut(frame: pd.DataFrame, train_rows: int, val_rows: int, seed: int) -> pd.DataFrame:
    """The rows with a `split` column: stratified train and validation rows of the sizes asked, the rest test."""
    from sklearn.model_selection import train_test_split

    frame = frame.drop_duplicates("text").reset_index(drop=True).astype({"label": str, "text": str})
    rest, train = train_test_split(frame.index, test_size=train_rows, stratify=frame["label"], random_state=seed)
    test, val = train_test_split(rest, test_size=val_rows, stratify=frame.loc[rest, "label"], random_state=seed)
    split = pd.Series("test", index=frame.index)
    split[train], split[val] = "train", "val"
    return frame.assign(split=split)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", default="uci6,sms_spam.csv")
    parser.add_argument("--data", type=Path, default=ROOT / "data")
    parser.add_argument("--pretrained", type=Path, default=None)
    parser.add_argument("--depths", default="1,2,3", help="the students' depths (each with its plain twin)")
    parser.add_argument("--teacher-depth", type=int, default=6)
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--train-rows", type=int, default=1500)
    parser.add_argument("--val-rows", type=int, default=300)
    parser.add_argument("--accelerator", default="auto")
    parser.add_argument("--concurrent", type=int, default=1,
                        help="invocations of this script at once on this machine: each trains on its share of "
                        "the cores")
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="student-recipe-"))
    depths = [int(d) for d in args.depths.split(",")]
    fields = []
    for name in args.files.split(","):
        gains = {recipe: [] for recipe in RECIPES}
        kept = 0
        for seed in (int(s) for s in args.seeds.split(",")):
            frame = cut(table(name, args.data), args.train_rows, args.val_rows, seed)
            found = measure(frame, depths, args.teacher_depth, seed, args, work / f"{Path(name).stem}-{seed}")
            print(f"{name} seed {seed} ({frame['label'].nunique()} classes; {(frame['split'] == 'test').sum():,} test "
                  f"rows): teacher depth {args.teacher_depth} test {METRIC} {found['teacher']:.3f}")
            for depth in depths:
                plain = found["plain", depth]
                line = f"  depth {depth}: plain {plain:.3f}"
                for recipe in RECIPES:
                    student, kept_twin = found[recipe, depth]
                    gains[recipe].append(student - plain)
                    kept += kept_twin and recipe == "twin"
                    line += f", {recipe} {student:.3f} ({student - plain:+.3f}{', kept' if kept_twin else ''})"
                print(line, flush=True)
        stem = Path(name).stem
        for recipe, values in gains.items():
            losses = sum(gain < -TOLERANCE for gain in values)
            print(f"{name} {recipe}: mean gain {statistics.fmean(values):+.4f}, worst {min(values):+.4f}, "
                  f"{losses} of {len(values)} below their twin by more than {TOLERANCE}")
            fields.append(f"{stem}_{recipe}_mean_gain={statistics.fmean(values):.4f} "
                          f"{stem}_{recipe}_worst={min(values):.4f} {stem}_{recipe}_losses={losses}")
        added = [twin - more for twin, more in zip(gains["twin"], gains["more"], strict=True)]
        print(f"{name}: the teacher added {statistics.fmean(added):+.4f} on average over the twin trained on as long "
              f"on the labels alone (twin - more; worst {min(added):+.4f}); {kept} twin-started students kept their "
              "twin's weights")
        fields.append(f"{stem}_kept={kept} {stem}_teacher_added={statistics.fmean(added):.4f}")
    print("RESULT " + " ".join(fields))
    return 0


def measure(frame: pd.DataFrame, depths: list[int], teacher_depth: int, seed: int, args: argparse.Namespace,
            folder: Path) -> dict:
    """Test macro-F1 of the teacher, each plain twin and each student by recipe (with whether it kept its twin);
    each model trained once into `folder` and read back on a rerun."""
    from depthfinder.encoder.bundle import save_bundle
    from depthfinder.encoder.config import ModelConfig, TrainConfig
    from depthfinder.encoder.distillation import SoftLabels, teacher_logits, train_texts
    from depthfinder.encoder.families import open_families
    from depthfinder.encoder.module import RESTART_PEAK
    from depthfinder.encoder.serving import WEIGHTS_FILE, load_tokenizer
    from depthfinder.encoder.training import TrainingData, TrainingSetup, train_candidate

    model = ModelConfig(pretrained=[str(args.pretrained)]) if args.pretrained else ModelConfig(
        d_model=64, n_heads=4, d_ff=128, vocab_size=4000, max_len=64)
    (family,) = open_families(["pretrained" if args.pretrained else "scratch"], model)
    table_path = folder / "table.parquet"
    folder.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(table_path)
    tokenizer = load_tokenizer(family.tokenizer(table_path, f"bench-{seed}", model, folder))
    recipe = family.recipe(TrainConfig(seed=seed, accelerator=args.accelerator))
    labels = sorted(frame["label"].unique())

    def train(depth: int, where: str, **student) -> tuple[float, bool, Path]:
        """(test macro-F1, whether it kept the weights it started from, its bundle), trained once and kept."""
        out = folder / where
        if (out / "result.json").is_file():
            kept = json.loads((out / "result.json").read_text())
            return kept["test"], kept["kept"], out / "bundle"
        if (out / "bundle").is_dir():  # an earlier version of this script: its bundle, measured again
            start = student.get("start_from")
            test, kept = _test_metric(out / "bundle", frame), start is not None and filecmp.cmp(
                out / "bundle" / WEIGHTS_FILE, Path(start) / WEIGHTS_FILE, shallow=False)
        else:
            data = TrainingData(frame, labels, tokenizer, soft_labels=student.pop("soft_labels", None))
            trained = train_candidate(data, depth, model, student.pop("train", recipe),
                                      TrainingSetup(out, progress=False, concurrent=args.concurrent), family=family,
                                      **student)
            save_bundle(out / "bundle", trained.network, tokenizer, labels)
            test, kept = trained.test_metrics[METRIC], trained.kept_start
        (out / "result.json").write_text(json.dumps({"test": test, "kept": kept}))
        return test, kept, out / "bundle"

    found = {}
    found["teacher"], _, teacher_bundle = train(teacher_depth, "teacher")
    logits = teacher_logits(teacher_bundle, f"teacher-{seed}", train_texts(frame), "train", folder)
    soft = SoftLabels(logits=logits, temperature=2.0, alpha=0.5)
    half = recipe.model_copy(update={"learning_rate": recipe.learning_rate * RESTART_PEAK})  # as tasks.train does
    for depth in depths:
        found["plain", depth], _, plain_bundle = train(depth, f"plain-{depth}")
        found["init", depth] = train(depth, f"init-{depth}", soft_labels=soft)[:2]
        found["twin", depth] = train(depth, f"twin-{depth}", soft_labels=soft, start_from=plain_bundle, train=half)[:2]
        found["more", depth] = train(depth, f"more-{depth}", start_from=plain_bundle, train=half)[:2]
    return found


def _test_metric(bundle: Path, frame: pd.DataFrame) -> float:
    """A saved model's test macro-F1 on `frame`'s test rows, as served."""
    from depthfinder.encoder.serving import load_bundle
    from depthfinder.evidence.metrics import classification_metrics

    test = frame[frame["split"] == "test"]
    return classification_metrics(test["label"].tolist(), load_bundle(bundle).predict(test["text"].tolist()))[METRIC]


if __name__ == "__main__":
    sys.exit(main())
