"""Every depth 1..L: the grid of separate fine-tunes against the search strategy (a screen and a few confirmations).

For each real dataset, two `depthfinder run`s with all-MiniLM-L6-v2 (bench/pretrained_depth.py says where it
comes from), each in its own folder: `--depths 1,...,6 --halving off` (every depth fine-tuned on its own, the
grid) and `--strategy search` (one fine-tune of depth 6 with a probe on each layer, then separate fine-tunes of
the depths the screen points to). Printed per dataset and depth: the grid's validation and test macro-F1, the
search's (confirmed, or the screen's probe), the chosen depth of each, and the compute of each as a multiple of
the one full-depth fine-tune: training seconds, and training FLOPs (FLOPs per example x epochs, summed over
the candidates trained, over the depth-6 candidate's). Last line:
`RESULT same_choice=<per dataset and seed> cost_vs_full=<search, seconds> cost_vs_grid=<search over grid, seconds>
flops_vs_full=<search, FLOPs> mean_flops_vs_full=<over every search>` (same_choice: the same depth, or one the grid's
rule calls tied with it).

`--seeds 1,2,3` compares each seed's grid with that seed's search (`--seeds s`: the screen is the grid's depth-6
fine-tune of seed s to the last digit). Each table also gives, for every depth below 6, the half-width of the paired
interval against depth 6 on the validation rows (the rule's 90%) of the screen's probe and of the grid's separate
fine-tune: the search stops before any confirmation when even the narrowest probe's interval is wider than the
tolerance (selection.search.unresolvable), on the argument that a probe, sharing depth 6's lower layers,
agrees with it more than a separate fine-tune does; the two columns check that argument.

`--grid-from FOLDER` takes the grid from an earlier `--halving off` run of depths 1-6 instead of training it
again: FOLDER/<dataset>/summary.json, e.g. bench/tolerance_risk.py's work folder, whose runs train every depth
with several seeds; the grid is its candidates of the seed compared (a one-seed run's, the seed being 1 by
default) and its choice is the rule's on them. Its training seconds are those of that run (on a busy machine,
not comparable); its FLOPs are. `--work FOLDER` keeps each run in FOLDER/<dataset>/<strategy>-seed-<s> (instead
of a temporary folder), and a run whose summary.json is there is read, not run again.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from bench.common import DATA, DATASETS, add_cache_argument, minilm, run_depthfinder

LAYERS = 6


def compute(summary: dict) -> tuple[float, float]:
    """Training seconds and training FLOPs (per example x epochs) of every candidate a run trained."""
    trained = [c for c in summary["candidates"] if c["status"] == "trained" and c["cost"]]
    return (sum(c["cost"]["train_seconds"] for c in trained),
            sum(c["cost"]["flops_per_example"] * c["epochs"] for c in trained))


def full(summary: dict) -> tuple[float, float]:
    """The same of the depth-L candidate alone: one full-depth fine-tune."""
    deepest = next(c for c in summary["candidates"] if c["depth"] == LAYERS and c["status"] == "trained")
    return deepest["cost"]["train_seconds"], deepest["cost"]["flops_per_example"] * deepest["epochs"]


def grid_ties(grid: dict, depth: int) -> bool:
    """Whether the grid's own rule let `depth` ship in its best depth's place: the verdict its decision carries (an
    earlier summary's judged on read)."""
    from depthfinder.selection.decision import Decision

    scores = {score.depth: score for score in Decision.from_dict(grid["rule"]).scores}
    return depth in scores and scores[depth].may_ship


def grid_from(summary_path: Path, seed: int) -> dict:
    """The one-seed grid inside an earlier every-depth run: its candidates of `seed` and the rule's choice on them."""
    from depthfinder.selection.candidate import Candidate
    from depthfinder.selection.rule import choose_depth
    from depthfinder.selection.settings import SelectionRule

    summary = json.loads(summary_path.read_text())
    # A cached candidate was trained by the run that first made it; its recorded cost is that training's.
    candidates = [{**c, "status": "trained"} for c in summary["candidates"]
                  if c["seed"] == seed and c["status"] in ("trained", "cached")]
    if sorted(c["depth"] for c in candidates) != list(range(1, LAYERS + 1)):
        raise SystemExit(f"{summary_path}: not every depth 1-{LAYERS} trained with seed {seed}")
    decision = choose_depth([Candidate.from_dict(c) for c in candidates], SelectionRule())
    return {"candidates": candidates, "selected_depth": decision.selected_depth, "rule": decision.to_dict()}


def half_widths(candidates: list[dict]) -> dict[int, float]:
    """Each depth's half-width of the paired interval against depth L on the validation rows (the rule's 90%), from
    the candidates' saved predictions (depth L's among them)."""
    from depthfinder.evidence.bootstrap import compare_to_best
    from depthfinder.selection.candidate import Candidate
    from depthfinder.selection.predictions import load_predictions
    from depthfinder.selection.settings import SelectionRule

    found = [Candidate.from_dict(c) for c in candidates]
    predictions = load_predictions(found)
    if isinstance(predictions, str):
        return {}
    arms = {(c.family, c.depth): [c.seed] for c in found}
    deepest = next(arm for arm in arms if arm[1] == LAYERS)
    intervals = compare_to_best(predictions, arms, deepest, "macro_f1", SelectionRule().confidence)
    return {depth: interval.half_width for (_, depth), interval in intervals.items() if depth != LAYERS}


def table(name: str, grid: dict, search: dict) -> list[str]:
    rows = [f"\n{name}\n", "| depth | grid val | grid test | search | search val | search test | probe ± | grid ± |",
            "|---:|---:|---:|---|---:|---:|---:|---:|"]
    found = {c["depth"]: c for c in search["candidates"]}
    screen = next(c for c in search["candidates"] if c["depth"] == LAYERS)
    probe = half_widths([screen, *screen["screen"]])
    separate = half_widths(grid["candidates"])
    for c in sorted(grid["candidates"], key=lambda c: c["depth"]):
        other = found.get(c["depth"], {})
        how = "confirmed" if other.get("status") == "trained" else other.get("status", "-")
        rows.append(f"| {c['depth']}{' (grid chose)' if c['depth'] == grid['selected_depth'] else ''} | "
                    f"{c['metrics']['macro_f1']:.3f} | {c['test_metrics']['macro_f1']:.3f} | "
                    f"{how}{' (chosen)' if c['depth'] == search['selected_depth'] else ''} | "
                    f"{other.get('metrics', {}).get('macro_f1', float('nan')):.3f} | "
                    f"{other.get('test_metrics', {}).get('macro_f1', float('nan')):.3f} | "
                    f"{probe.get(c['depth'], float('nan')):.3f} | {separate.get(c['depth'], float('nan')):.3f} |")
    return rows


def run(name: str, strategy: str, seed: int, folder: Path, checkpoint: str) -> dict:
    """One run of `strategy` on the dataset with `seed`, in `folder` (read back when it finished there before)."""
    if (folder / "summary.json").is_file():
        return json.loads((folder / "summary.json").read_text())
    folder.mkdir(parents=True, exist_ok=True)
    depths = ",".join(map(str, range(1, LAYERS + 1))) if strategy == "grid" else ""
    options = ["--halving", "off"] if strategy == "grid" else ["--strategy", "search"]
    return run_depthfinder(["--data", str(DATA / name)], depths, folder, "--pretrained", checkpoint,
                           "--seeds", str(seed), *options)["summary"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_cache_argument(parser)
    parser.add_argument("--datasets", default=",".join(DATASETS), help="files under DEPTHFINDER_DATA")
    parser.add_argument("--grid-from", type=Path, help="read each grid from FOLDER/<dataset>/summary.json")
    parser.add_argument("--work", type=Path, help="keep the runs in FOLDER/<dataset>/<strategy>-seed-<s>; reuse "
                        "finished ones")
    parser.add_argument("--seeds", default="1", help="compare each seed's grid and search")
    args = parser.parse_args(argv)
    checkpoint = str(minilm(args.cache))
    same, vs_full, vs_grid, flops = [], [], [], []
    with tempfile.TemporaryDirectory() as scratch_space:
        for name in args.datasets.split(","):
            for seed in map(int, args.seeds.split(",")):
                folder = (args.work or Path(scratch_space)) / name
                grid = (grid_from(args.grid_from / name / "summary.json", seed) if args.grid_from
                        else run(name, "grid", seed, folder / f"grid-seed-{seed}", checkpoint))
                search = run(name, "search", seed, folder / f"search-seed-{seed}", checkpoint)
                print("\n".join(table(f"{name}, seed {seed}", grid, search)), flush=True)
                chosen = search["selected_depth"]
                same.append("yes" if chosen == grid["selected_depth"] else "tied" if grid_ties(grid, chosen) else "no")
                (grid_seconds, _), (search_seconds, search_flops) = compute(grid), compute(search)
                full_seconds, full_flops = full(grid)
                vs_full.append(search_seconds / full_seconds)
                vs_grid.append(search_seconds / grid_seconds)
                flops.append(search_flops / full_flops)
                print(f"\ngrid chose {grid['selected_depth']} in {grid_seconds:.0f} s of training "
                      f"({grid_seconds / full_seconds:.2f}x one full fine-tune); search chose {chosen} in "
                      f"{search_seconds:.0f} s ({vs_full[-1]:.2f}x; FLOPs {flops[-1]:.2f}x); "
                      f"{search['search'][0]['steps']}\ngrid: {grid['rule']['reason']}\nsearch: "
                      f"{search['rule']['reason']}", flush=True)
    print(f"\nRESULT same_choice={','.join(same)} cost_vs_full={','.join(f'{v:.2f}' for v in vs_full)} "
          f"cost_vs_grid={','.join(f'{v:.2f}' for v in vs_grid)} flops_vs_full={','.join(f'{v:.2f}' for v in flops)} "
          f"mean_flops_vs_full={sum(flops) / len(flops):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
