"""What changed, on the real files: do the measures tell the same world from another task, and what do they cost?

For each real file (`DEPTHFINDER_DATA`, docs/benchmarks.md) the champion's table is one
part of it and tonight's table another, in these scenarios (no model is trained, so the
champion's decay is not measured here; tests/flows/test_changes.py covers it):
- `random half -> all`: the rows in a random order, the first half then all of them (the same world);
- `file half -> all`: the same in file order (whatever order the file's sources come in);
- `+ 2 % relabelled` / `+ 10 % relabelled`: the whole file, with that share of labels flipped;
- `+ other file`: the whole file, then the other file's rows appended (another task);
- `60 % -> + 40 % + 800 other`: the champion's table is 60 % of the file; tonight's adds the other 40 %
  and 800 rows of the other file labelled as the file's most common class (a block of another task,
  diluted by in-domain rows: the pooled AUC stays low, the foreign rows are counted row by row).
And the promotion case: six scratch models (depth 1, the default recipe) trained on the same
split of `sms_spam.csv` with seeds 1..6; every ordered pair is judged as challenger against
champion, by the paired bootstrap (promoted unless shown worse by more than the tolerance
0.01) and by the rule before it (refused when its test macro-F1 is more than 0.01 below).
Printed per scenario: rows then and now, added, relabelled, the label mix's PSI, the drift
AUC, the length KS distance, the policy's decision (nightly settings) and the seconds the
comparison took (comparison table + GX validations). Last line:
`RESULT same_world_auc=... other_task_auc=... decisions=... foreign_found=... foreign_planted=...
refused_bootstrap=... refused_margin=...` (AUCs: the largest same-world and the smallest other-task
value; decisions in scenario order, per file; foreign rows found and planted in the diluted scenario,
per file; the share of same-data challengers each rule refuses).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from bench.common import print_table
from bench.depth_curves import REAL, SHARED

DILUTED = "60 % -> + 40 % + 800 other"
SCENARIOS = ("random half -> all", "file half -> all", "+ 2 % relabelled", "+ 10 % relabelled", "+ other file",
             DILUTED)
PLANTED = 800
SAME_WORLD = SCENARIOS[:2]


def prepared(table: pd.DataFrame) -> pd.DataFrame:
    """The table as a run prepares it: text and label as strings, a row number, the stable split."""
    from depthfinder.expectations.table.split import assign_splits

    table = table.reset_index(drop=True).astype({"text": "str", "label": "str"})
    return assign_splits(table.assign(row=np.arange(len(table))), 0.1, 0.1, 1, True)


def scenario_tables(name: str, whole: pd.DataFrame, other: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(champion's table, tonight's table) of one scenario."""
    shuffled = whole.sample(frac=1, random_state=0)
    if name == "random half -> all":
        return shuffled.iloc[: len(whole) // 2], shuffled
    if name == "file half -> all":
        return whole.iloc[: len(whole) // 2], whole
    if name.endswith("relabelled"):
        share = float(name.split()[1]) / 100
        flipped = whole.copy()
        rows = flipped.sample(frac=share, random_state=1).index
        labels = sorted(whole["label"].unique())
        flipped.loc[rows, "label"] = flipped.loc[rows, "label"].map(lambda label: labels[1 - labels.index(label)])
        return whole, flipped
    if name == DILUTED:
        cut = int(len(shuffled) * 0.6)
        block = other.sample(n=PLANTED, random_state=2).assign(label=whole["label"].mode()[0])
        return shuffled.iloc[:cut], pd.concat([shuffled, block])
    return whole, pd.concat([whole, other])


def judge(champion: pd.DataFrame, tonight: pd.DataFrame) -> tuple[object, float]:
    """The what-changed report under the nightly settings, and its seconds."""
    from depthfinder.expectations.changes.compare import Comparison, comparison_table
    from depthfinder.expectations.changes.config import ChangesConfig
    from depthfinder.expectations.changes.judge import judge_changes

    started = time.perf_counter()
    table = comparison_table(prepared(champion), prepared(tonight))
    report = judge_changes(table, Comparison(ChangesConfig(skip_minor=True), "1"))
    return report, time.perf_counter() - started


def main() -> None:
    files = {name: pd.read_csv(SHARED / name)[["text", "label"]].astype("str") for name in REAL
             if (SHARED / name).is_file()}
    if len(files) < 2:
        print(f"the real files are absent from {SHARED}; set DEPTHFINDER_DATA (docs/benchmarks.md)")
        return
    judge(*scenario_tables(SCENARIOS[0], *list(files.values())[:2]))  # GX import and warm-up, not timed below
    rows, same, other, decisions, found = [], [], [], [], []
    for name, whole in files.items():
        others = pd.concat([table for other_name, table in files.items() if other_name != name])
        for scenario in SCENARIOS:
            champion, tonight = scenario_tables(scenario, whole, others)
            report, seconds = judge(champion, tonight)
            auc = report.drift_auc
            (same if scenario in SAME_WORLD else other if scenario == "+ other file" else []).append(auc)
            decisions.append(report.policy.decision)
            if scenario == DILUTED:
                found.append(str(report.foreign_rows))
            psi = f"{report.label_shift.psi:.3f}" if report.label_shift else "-"
            rows.append([name, scenario, report.rows_before, report.rows_now, report.rows_added, report.relabelled,
                         psi, "-" if auc is None else f"{auc:.3f}",
                         "-" if report.length_shift is None else f"{report.length_shift:.3f}",
                         "-" if report.foreign_rows is None else report.foreign_rows,
                         report.policy.decision, f"{seconds:.2f}"])
    print_table(["file", "scenario", "rows then", "rows now", "added", "relabelled", "label PSI", "drift AUC",
                  "length KS", "foreign rows", "decision", "seconds"], rows)
    bootstrap, margin = promotion_case(files["sms_spam.csv"])
    print(f"\nRESULT same_world_auc={max(same):.3f} other_task_auc={min(other):.3f} decisions={','.join(decisions)} "
          f"foreign_found={','.join(found)} foreign_planted={PLANTED} refused_bootstrap={bootstrap:.2f} "
          f"refused_margin={margin:.2f}")


def promotion_case(table: pd.DataFrame, seeds: int = 6) -> tuple[float, float]:
    """Six models of the same data and recipe, seeds apart: the share of (challenger, champion) pairs that the
    paired bootstrap refuses, and that the fixed margin refused; a table of each model's test macro-F1."""
    import tempfile

    from depthfinder.encoder.config import ModelConfig, TrainConfig
    from depthfinder.encoder.serving import TextClassifier
    from depthfinder.encoder.tokenizer import train_tokenizer
    from depthfinder.encoder.training import TrainingData, TrainingSetup, train_candidate
    from depthfinder.evidence.metrics import classification_metrics
    from depthfinder.selection.promotion import should_promote
    from depthfinder.selection.settings import SelectionRule

    frame = prepared(table)
    labels = sorted(frame["label"].unique())
    test = frame[frame["split"] == "test"]
    truths = test["text"].tolist(), test["label"].tolist()
    predictions = {}

    with tempfile.TemporaryDirectory() as folder:
        tokenizer = train_tokenizer(frame.loc[frame["split"] == "train", "text"], ModelConfig().vocab_size)
        for seed in range(1, seeds + 1):
            trained = train_candidate(TrainingData(frame, labels, tokenizer, class_weights=True), 1, ModelConfig(),
                                      TrainConfig(seed=seed), TrainingSetup(Path(folder) / str(seed), progress=False))
            predictions[seed] = TextClassifier(trained.network, tokenizer, labels).predict(truths[0])
    rule = SelectionRule(promotion_margin=0.01)
    f1 = {seed: classification_metrics(truths[1], said)["macro_f1"] for seed, said in predictions.items()}
    pairs = [(a, b) for a in predictions for b in predictions if a != b]
    bootstrap = [not should_promote(truths[1], predictions[a], predictions[b], rule).promoted for a, b in pairs]
    margin = [f1[a] < f1[b] - rule.promotion_margin for a, b in pairs]
    print_table(["seed", "test macro-F1"], [[seed, f"{value:.3f}"] for seed, value in f1.items()])
    print(f"{len(pairs)} same-data pairs: the paired bootstrap refuses {sum(bootstrap)}, the fixed margin refused "
          f"{sum(margin)}")
    return sum(bootstrap) / len(pairs), sum(margin) / len(pairs)


if __name__ == "__main__":
    main()
