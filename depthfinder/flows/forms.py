"""The deployment forms: which form of the chosen depth ships (the gate, encoder.deployment, on the test split), the
check each candidate's forms pass on its validation rows under a size limit, and the verdict when no depth the rule
lets ship has a form within the hard limits."""

from __future__ import annotations

from pathlib import Path

from depthfinder.encoder.verdict import Deployment, TriedDepth, UnmetLimit
from depthfinder.flows.config import SweepConfig
from depthfinder.selection.candidate import Candidate, arm_label, base_family
from depthfinder.selection.decision import Decision
from depthfinder.selection.rule import limit_violations, limits_text
from depthfinder.tasks.data import PreparedData
from depthfinder.tasks.pool import PoolTexts
from depthfinder.tasks.registry import prepare_deployment
from depthfinder.tasks.train import FormCheck


def form_check(sweep: SweepConfig) -> FormCheck | None:
    """Under a size limit, the check each candidate's forms pass on its validation rows, so that the rule knows
    which depth can ship within the limit (the deployment gate judges the chosen depth's on the test split); None
    without one."""
    if sweep.max_size_mb is None:
        return None
    return FormCheck(metric=sweep.metric, margin=sweep.deployment_margin, limit_mb=sweep.max_size_mb)


def best_seed(candidates: list[Candidate], decision: Decision) -> Candidate:
    """The model that ships: the chosen (family, depth)'s best seed."""
    chosen = [c for c in candidates if c.usable and (c.family, c.depth) == (decision.selected_family,
                                                                           decision.selected_depth)]
    return max(chosen, key=lambda c: c.metrics[decision.metric])


def deploy_chosen(candidates: list[Candidate], decision: Decision, dataset: PreparedData, sweep: SweepConfig,
                  folder: Path, pool: PoolTexts | None = None) -> tuple[Candidate, Deployment, Decision]:
    """The model that ships, its deployable forms, and the decision: the chosen depth's, unless under a size limit
    (max_size_mb) the gate refused every form of it within the limit (the rule held it to its pruned size): then the
    next depth the rule lets ship whose shipped forms fit, the reason saying why; LimitUnmet, with every form tried,
    when none does (a verdict: nothing is registered)."""
    limit = sweep.max_size_mb
    arms = [(decision.selected_family, decision.selected_depth)]
    if limit is not None:
        arms += sorted(((s.family, s.depth) for s in decision.scores if s.may_ship and (s.family, s.depth) not in arms),
                       key=lambda arm: next(s.cost for s in decision.scores if (s.family, s.depth) == arm))
    refused, tried = [], []
    for family, depth in arms:
        at = decision.model_copy(update={"selected_family": family, "selected_depth": depth})
        chosen = best_seed(candidates, at)
        deployment = prepare_deployment(chosen, dataset, sweep, str(folder / "deployment"), pool)
        smallest = min(v.size_mb for v in deployment.variants if v.shipped)  # torch always ships
        if limit is None or smallest <= limit:
            why = "; ".join(refused)
            return chosen, deployment, at if not refused else at.model_copy(update={
                "reason": f"{decision.reason}; {at.selected_label} ships instead: {why}"})
        refused.append(f"{arm_label(family, depth)}'s smallest form the gate shipped weighs {smallest:.2f} MiB, over "
                       f"max_size_mb {limit:g}")
        tried.append(_tried(at.selected_label, chosen, deployment=deployment))
    raise LimitUnmet(UnmetLimit(limit_mb=limit, limits=limits_text(sweep), tried=tried))


def every_depth_over(candidates: list[Candidate], sweep: SweepConfig) -> UnmetLimit | None:
    """The verdict when every depth that trained exceeds a hard limit (max_size_mb, max_latency_ms, max_params) before
    the gate, so the rule could choose none: each depth's best seed's sizes and the limits it exceeds (a depth is out
    when any seed is, as the rule has it); None otherwise."""
    usable = [c for c in candidates if c.usable and not c.kept_twin]
    over = {(c.family, c.depth): why for c in usable if (why := limit_violations(c, sweep))}
    arms = sorted({(c.family, c.depth) for c in usable}, key=lambda arm: (arm[1], arm[0]))
    if not arms or any(arm not in over for arm in arms):
        return None
    named = {base_family(family) for family, _ in arms} != {"scratch"}
    best = {arm: max((c for c in usable if (c.family, c.depth) == arm), key=lambda c: c.metrics.get(sweep.metric, 0))
            for arm in arms}
    return UnmetLimit(limit_mb=sweep.max_size_mb, limits=limits_text(sweep), tried=[
        _tried(arm_label(*arm, named=named), best[arm], over=over[arm]) for arm in arms])


def _tried(label: str, candidate: Candidate, **verdict: object) -> TriedDepth:
    """A depth the verdict records under `label`: its candidate's weighed forms and those the gate passed on the
    validation rows, with what became of it (`over`, the limits it exceeds; or `deployment`, the test split's gate)."""
    cost = candidate.cost
    return TriedDepth(depth=label, sizes_mb=cost.sizes_mb if cost else {}, passed_mb=cost.passed_mb if cost else {},
                      **verdict)


class LimitUnmet(Exception):
    """No form the deployment gate ships meets the size limit, at any depth the rule lets ship: the verdict."""

    def __init__(self, verdict: UnmetLimit) -> None:
        super().__init__(verdict.sentence())
        self.verdict = verdict
