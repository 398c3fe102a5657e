"""Distillation against plain training, depth by depth: what a student of the best candidate buys.

For each data source and seed, one `depthfinder run --distill on --halving off` (every depth trained plainly, then
every depth cheaper than the best trained again as a student of the best, from the same initialisation): printed per
depth, the plain and the distilled test macro-F1 and their difference, and the validation half-width of each one's
paired interval against the best (does a student, agreeing with its teacher on more rows, narrow it?). The run's rule
chose among plain and distilled candidates together; the table says whether it shipped a student, and whether the
plain arms alone would have shipped a cheaper depth than the best.

Last line: `RESULT runs=<n> students=<n> mean_test_gain=<distilled - plain, over every student> wins=<students above
their twin on test> losses_beyond_tolerance=<students below their twin by more than the tolerance on test>
narrower=<students whose interval against the best is narrower than their twin's> shipped_student=<runs that shipped a
student> cheaper_than_plain=<runs whose shipped depth is cheaper than the plain-only rule's>
half_cost_students=<students of at most half the best's cost> student_within=<of those, within the tolerance of the
best on test> twin_within=<their plain twins within it>` (numbers without units; the goal: student_within >
twin_within).

A scratch known-depth problem runs in minutes: `python -m bench.distillation --dataset nested-ops-2 --rows 2000
--seeds 1,2,3`; the real files take `--data data/uci_sentiment_sentences.csv` (and `--pretrained DIR`, the MiniLM
folder of bench/pretrained_depth.py). `--pool 0.5` holds half of `--data`'s rows out as unlabelled texts
(`--unlabeled`) and `--distill-unlabeled 0|1` says whether students are also taught on them; run both into the same
`--work` and the second retrains only the students. docs/benchmarks.md has the tables.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bench.common import run_depthfinder

METRIC = "macro_f1"
AUDIT = "audit: {strict: false, max_label_noise_fraction: 1.0, max_near_duplicate_fraction: 1.0}\n"


def students_of(summary: dict) -> list[tuple[dict, dict]]:
    """Each student with its plain twin (same base family, depth and seed)."""
    from depthfinder.selection.candidate import base_family

    plain = {(c["family"], c["depth"], c["seed"]): c for c in summary["candidates"]
             if c["teacher"] is None and c["status"] in ("trained", "cached")}
    return [(c, plain[base_family(c["family"]), c["depth"], c["seed"]]) for c in summary["candidates"]
            if c.get("teacher") and c["status"] in ("trained", "cached")
            and (base_family(c["family"]), c["depth"], c["seed"]) in plain]


def half_width(summary: dict, family: str, depth: int) -> float | None:
    """The half-width of an arm's paired interval against the best on the validation rows, as the rule judged it; None
    for the best itself."""
    rule = summary["rule"]
    if (family, depth) == (rule["best_family"], rule["best_depth"]):
        return None
    score = next((s for s in rule["scores"] if (s["family"], s["depth"]) == (family, depth)), None)
    interval = score and score.get("vs_best")
    return None if not interval else (interval["high"] - interval["low"]) / 2


def plain_decision(summary: dict):
    """The rule's decision among the plain candidates alone: what it ships without students, and the teacher (their
    best)."""
    from depthfinder.selection.candidate import Candidate
    from depthfinder.selection.decision import Decision
    from depthfinder.selection.rule import choose_depth

    plain = [Candidate.from_dict(c) for c in summary["candidates"] if c.get("teacher") is None]
    return choose_depth(plain, Decision.from_dict(summary["rule"]).settings)


def main() -> None:
    from depthfinder.selection.candidate import arm_label

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="nested-ops-2")
    parser.add_argument("--data", type=Path, default=None, help="a CSV instead of a built-in dataset")
    parser.add_argument("--rows", type=int, default=2000, help="rows of a built-in dataset")
    parser.add_argument("--depths", default="1,2,4")
    parser.add_argument("--seeds", default="1")
    parser.add_argument("--pretrained", default=None)
    parser.add_argument("--work", type=Path, default=None,
                        help="reused: a second recipe in the same folder retrains only the students")
    parser.add_argument("--temperature", type=float, default=None, help="sweep.distill.temperature (default: its own)")
    parser.add_argument("--alpha", type=float, default=None, help="sweep.distill.alpha (default: its own)")
    parser.add_argument("--start", choices=("twin", "init"), default=None,
                        help="sweep.distill.start: a student from its trained twin or its initialisation (default: "
                        "its own); both into the same --work: the second retrains only the students")
    parser.add_argument("--pool", type=float, default=0.0,
                        help="share of --data's rows held out as unlabelled texts (--unlabeled), labels dropped")
    parser.add_argument("--distill-unlabeled", type=float, default=None,
                        help="sweep.distill.unlabeled: pool texts taught on per train row (default: its own)")
    args = parser.parse_args()
    source = ["--data", str(args.data)] if args.data else ["--dataset", args.dataset]
    work = args.work or Path(tempfile.mkdtemp(prefix="distillation-"))
    pool = []
    if args.pool:
        if not args.data:
            raise SystemExit("--pool carves unlabelled texts from --data")
        source, pool = carve_pool(args.data, args.pool, work)
    pairs, runs, shipped, cheaper, tolerance = [], 0, 0, 0, 0.01
    halves = []  # (student within the tolerance of the best on test, its twin within) for students of <= half FLOPs
    for seed in args.seeds.split(","):
        folder = work / f"seed-{seed}"
        folder.mkdir(parents=True, exist_ok=True)
        options = ["--seeds", seed, "--distill", "on", "--halving", "off", "--crossfit", "off", "--force", *pool,
                   *(["--pretrained", args.pretrained] if args.pretrained else [])]
        # The known-depth problems are noisy by construction (a digit buried three levels deep): the audit is told so.
        rows = "" if args.data else f"data: {{dataset_rows: {args.rows}}}\n"
        recipe = {"temperature": args.temperature, "alpha": args.alpha, "unlabeled": args.distill_unlabeled,
                  "start": args.start}
        recipe = ", ".join(f"{key}: {value}" for key, value in recipe.items() if value is not None)
        (folder / "bench.yaml").write_text(f"{rows}{AUDIT}" + (f"sweep: {{distill: {{{recipe}}}}}\n" if recipe else ""))
        options += ["--config", str(folder / "bench.yaml")]
        summary = run_depthfinder(source, args.depths, folder, *options)["summary"]
        runs += 1
        rule = summary["rule"]
        tolerance = rule["tolerance"]
        alone = plain_decision(summary)
        plain = (alone.selected_family, alone.selected_depth)
        shipped += summary["rule"]["selected_family"] != plain[0]
        cheaper += _cost(summary, (rule["selected_family"], rule["selected_depth"])) < _cost(summary, plain)
        print(f"seed {seed}: best {arm_label(rule['best_family'], rule['best_depth'])}; ships "
              f"{arm_label(rule['selected_family'], rule['selected_depth'])} (plain alone: {arm_label(*plain)})")
        best = (alone.best_family, alone.best_depth)  # the teacher's arm, even where a student beat it
        best_test = next(c["test_metrics"][METRIC] for c in summary["candidates"]
                         if (c["family"], c["depth"]) == best and c["status"] in ("trained", "cached"))
        print(f"  {'depth':>5}  {'plain test':>10}  {'distilled':>10}  {'gain':>7}  {'plain ±':>8}  {'student ±':>9}"
              f"  (the teacher's arm's test {best_test:.3f})")
        for student, twin in students_of(summary):
            gain = student["test_metrics"][METRIC] - twin["test_metrics"][METRIC]
            if _cost(summary, (twin["family"], twin["depth"])) <= _cost(summary, best) / 2:
                halves.append((student["test_metrics"][METRIC] >= best_test - tolerance,
                               twin["test_metrics"][METRIC] >= best_test - tolerance))
            widths = (half_width(summary, twin["family"], twin["depth"]),
                      half_width(summary, student["family"], student["depth"]))
            pairs.append((gain, *widths))
            shown = [f"{w:8.3f}" if w is not None else f"{'-':>8}" for w in widths]
            print(f"  {student['depth']:>5}  {twin['test_metrics'][METRIC]:10.3f}  "
                  f"{student['test_metrics'][METRIC]:10.3f}  {gain:+7.3f}  {shown[0]}  {shown[1]:>9}")
    gains = [gain for gain, _, _ in pairs]
    narrower = sum(1 for _, plain_w, student_w in pairs if None not in (plain_w, student_w) and student_w < plain_w)
    print(f"RESULT runs={runs} students={len(pairs)} mean_test_gain={sum(gains) / max(1, len(gains)):.4f} "
          f"wins={sum(g > 0 for g in gains)} losses_beyond_tolerance={sum(g < -tolerance for g in gains)} "
          f"narrower={narrower} shipped_student={shipped} cheaper_than_plain={cheaper} "
          f"half_cost_students={len(halves)} student_within={sum(s for s, _ in halves)} "
          f"twin_within={sum(t for _, t in halves)}")


def carve_pool(data: Path, share: float, work: Path) -> tuple[list[str], list[str]]:
    """`data` cut once (a fixed draw) into labelled rows and unlabelled texts (`share` of the rows, labels dropped):
    the run's source and its `--unlabeled` option."""
    import pandas as pd

    frame = pd.read_csv(data).sample(frac=1.0, random_state=0)
    held = int(round(share * len(frame)))
    work.mkdir(parents=True, exist_ok=True)
    frame.iloc[held:].to_csv(work / "labelled.csv", index=False)
    frame.iloc[:held][["text"]].to_csv(work / "unlabeled.csv", index=False)
    print(f"{data.name}: {len(frame) - held} labelled rows, {held} unlabelled texts")
    return ["--data", str(work / "labelled.csv")], ["--unlabeled", str(work / "unlabeled.csv")]


def _cost(summary: dict, arm: tuple[str, int]) -> float:
    """An arm's cost by the rule's cost, as the rule judged it."""
    return next(s["cost"] for s in summary["rule"]["scores"] if (s["family"], s["depth"]) == arm)


if __name__ == "__main__":
    main()
