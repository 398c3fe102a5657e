"""What earlier versions of depthfinder wrote, read as today's records: every reader of an older JSON form in one
place. A summary (`run --summary-json`, the MLflow parent run's summary.json) passes through `upgrade_summary` before
`RunSummary` validates it, the sweep's settings (a YAML file, a flow's parameters) through `upgrade_sweep` before
`SweepConfig` does; today's form passes unchanged."""

from __future__ import annotations

from pydantic import BaseModel

from depthfinder.selection.decision import DepthScore, judge


def upgrade_summary(values: object) -> object:
    """A summary's JSON form of this version or an earlier one, in this version's form: its decision
    (upgrade_decision) and its deployment (upgrade_deployment)."""
    if not isinstance(values, dict):
        return values
    upgraded = dict(values)
    if isinstance(values.get("rule"), dict):
        upgraded["rule"] = upgrade_decision(values["rule"])
    if isinstance(values.get("deployment"), dict):
        upgraded["deployment"] = upgrade_deployment(values["deployment"])
    return upgraded


def upgrade_decision(values: dict) -> dict:
    """A decision's JSON form of an earlier version: without `confidence` (written before the intervals: means
    only), with `effective_tolerance` (always the tolerance since the means over seeds stopped widening it), and
    without each depth's verdict (judged here by the tolerance it applied)."""
    if "settings" in values:
        return values
    upgraded = {key: value for key, value in values.items() if key != "effective_tolerance"}
    upgraded.setdefault("confidence", None)
    applied = values.get("effective_tolerance", values.get("tolerance", 0.0))
    return {**upgraded, **_fill_missing_verdicts(values, applied)}


def upgrade_deployment(values: dict) -> dict:
    """A deployment's JSON form written before the margin had its own name (it was `tolerance`)."""
    if "tolerance" in values and "margin" not in values:
        return {("margin" if key == "tolerance" else key): value for key, value in values.items()}
    return values


def _fill_missing_verdicts(values: dict, tolerance: float) -> dict:
    """`{"scores": ...}` with each depth the summary wrote without a verdict judged by `tolerance`; `{}` when none
    lacks one (or the best is missing: validation names what is wrong)."""
    if not values.get("scores"):
        return {}
    scores = [DepthScore.model_validate(score) for score in values["scores"]]
    if all(score.verdict is not None for score in scores):
        return {}
    arm = (values.get("best_family", "scratch"), values.get("best_depth"))
    best = next((score for score in scores if (score.family, score.depth) == arm), None)
    if best is None:
        return {}
    return {"scores": [score if score.verdict is not None else
                       score.model_copy(update={"verdict": judge(score, best, tolerance)}) for score in scores]}


# The sweep's settings an earlier version held flat, and where they are now (section, setting).
FLAT_SWEEP = {
    "crossfit_folds": ("crossfit", "folds"), "crossfit_budget": ("crossfit", "budget"),
    "distill_temperature": ("distill", "temperature"), "distill_alpha": ("distill", "alpha"),
    "distill_epochs": ("distill", "epochs"), "distill_start": ("distill", "start"),
    "distill_unlabeled": ("distill", "unlabeled"),
    "unlabeled": ("pool", "unlabeled"), "labels": ("pool", "labels"), "unlabeled_rows": ("pool", "rows"),
    "task_runner": ("runner", "kind"), "workers": ("runner", "workers"), "dask_address": ("runner", "dask_address"),
    "halving_epochs": ("halving", "epochs"), "extend_unconverged": ("extend", "unconverged"),
    "extend_epochs": ("extend", "epochs"),
}
# A part given as a bare value (`crossfit: off`, as every version wrote it) is its first setting.
BARE = {"crossfit": "mode", "distill": "mode", "pool": "unlabeled", "runner": "kind", "halving": "mode",
        "extend": "unconverged"}


def upgrade_sweep(values: object) -> tuple[object, list[str]]:
    """The sweep's settings with an earlier version's flat keys moved into their parts (`crossfit_folds: 3` ->
    `crossfit: {folds: 3}`), and the keys moved (`crossfit_folds -> crossfit.folds`); today's form passes
    unchanged but for bare parts written as mappings (`crossfit: off` -> `crossfit: {mode: off}`), so that a flag can
    be merged into them."""
    if not isinstance(values, dict):
        return values, []
    upgraded = {key: value for key, value in values.items() if key not in FLAT_SWEEP}
    for part, first in BARE.items():
        if part in upgraded and not isinstance(upgraded[part], dict | BaseModel):
            upgraded[part] = {first: upgraded[part]}
        elif isinstance(upgraded.get(part), BaseModel):
            upgraded[part] = upgraded[part].model_dump()
    moved = []
    for key, (part, setting) in FLAT_SWEEP.items():
        if key in values:
            upgraded[part] = {**upgraded.get(part, {}), setting: values[key]}
            moved.append(f"{key} -> {part}.{setting}")
    return upgraded, moved
