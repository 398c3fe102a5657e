"""What changed, on the real files: do the measures tell the same world from another task, and what do they cost?

For each real file (`DEPTHFINDER_DATA`, docs/benchmarks.md) the champion's table is one
part of it and tonight's table another, in these scenarios (no model is trained, so the
champion's decay is not measured here; tests/flows/test_changes.py covers it):
- `random half -> all`: the rows in a random order, the first half then all of them (the same world);
- `file half -> all`: the same in file order (whatever order the file's sources come in);
- `+ 2 % relabelled` / `+ 10 % relabelled`: the whole file, with that share of labels flipped;
- `+ other file`: the whole file, then the other file's rows appended (another task).
Printed per scenario: rows then and now, added, relabelled, the label mix's PSI, the drift
AUC, the length KS distance, the policy's decision (nightly settings) and the seconds the
comparison took (comparison table + GX validations). Last line:
`RESULT same_world_auc=... other_task_auc=... decisions=...` (AUCs: the largest same-world
and the smallest other-task value; decisions in scenario order, per file).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from depth_curves import REAL, SHARED, _print_table  # noqa: E402

SCENARIOS = ("random half -> all", "file half -> all", "+ 2 % relabelled", "+ 10 % relabelled", "+ other file")
SAME_WORLD = SCENARIOS[:2]


def prepared(table: pd.DataFrame) -> pd.DataFrame:
    """The table as a run prepares it: text and label as strings, a row number, the stable split."""
    from expectations.table.split import assign_splits

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
    return whole, pd.concat([whole, other])


def judge(champion: pd.DataFrame, tonight: pd.DataFrame) -> tuple[object, float]:
    """The what-changed report under the nightly settings, and its seconds."""
    from expectations.changes.compare import Comparison, comparison_table
    from expectations.changes.config import ChangesConfig
    from expectations.changes.judge import judge_changes

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
    rows, same, other, decisions = [], [], [], []
    for name, whole in files.items():
        others = pd.concat([table for other_name, table in files.items() if other_name != name])
        for scenario in SCENARIOS:
            champion, tonight = scenario_tables(scenario, whole, others)
            report, seconds = judge(champion, tonight)
            auc = report.drift_auc
            (same if scenario in SAME_WORLD else other if scenario == "+ other file" else []).append(auc)
            decisions.append(report.policy.decision)
            psi = f"{report.label_shift.psi:.3f}" if report.label_shift else "-"
            rows.append([name, scenario, report.rows_before, report.rows_now, report.rows_added, report.relabelled,
                         psi, "-" if auc is None else f"{auc:.3f}",
                         "-" if report.length_shift is None else f"{report.length_shift:.3f}",
                         report.policy.decision, f"{seconds:.2f}"])
    _print_table(["file", "scenario", "rows then", "rows now", "added", "relabelled", "label PSI", "drift AUC",
                  "length KS", "decision", "seconds"], rows)
    print(f"\nRESULT same_world_auc={max(same):.3f} other_task_auc={min(other):.3f} decisions={','.join(decisions)}")


if __name__ == "__main__":
    main()
