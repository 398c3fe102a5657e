"""Cross-fitting: evidence beyond the validation split, when its rows cannot settle a cheaper depth.

A cheaper depth's difference from the best is carried only by the rows on which the two disagree, and a validation
split of a few hundred rows holds a few dozen: its interval is wider than the tolerance, and the best ships although
the cheaper depth may be as good. The train rows are most of the labelled rows and serve as no evidence. Cross-fitting
makes them serve: the train and validation rows are cut into K folds (stratified by label, scikit-learn's
StratifiedKFold), and each depth to be settled, and the best, is trained K times, each time on all but one fold
(early-stopped on the validation rows among them), and predicts the fold it never saw. Every train and validation row
then has an out-of-fold prediction of every such depth, and the rule's paired bootstrap and its non-inferiority
predicate (evidence.margin.within) judge on all of them: the interval narrows as 1/sqrt(rows). The test rows are never
in a fold. The shipped model is the sweep's, trained as before at the chosen depth: the folds' models only measure.

What it answers is "does a depth trained this way on this much data stay within the tolerance of the best?", the
question the rule asks; each out-of-fold prediction comes from a model trained on (K-1)/K of the rows, and a depth
still converging on fewer rows is understated more than one that has converged (docs/selection.md: it can err
either way). The rows' resampling holds the row noise and, a row being predicted by one
fold's model, part of the folds'; seeds are resampled as in the sweep.

Its cost is K trainings per depth; `sweep.crossfit.budget` bounds it (a multiple of the sweep's own training time,
estimated from each candidate's): the best always, then (crossfit: auto) every depth the validation rows do not show
worse, those cheaper than their choice first. A validation mean beyond the tolerance by chance keeps no depth out:
the rows that decide are the same for every depth, and when they hold every depth the best is chosen on them too
(docs/benchmarks.md: what each path buys and spends).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field, field_validator

from depthfinder.encoder.config import FamilyName, yaml_switch
from depthfinder.evidence.bootstrap import Arm, Predictions
from depthfinder.runtime.files import written_whole
from depthfinder.runtime.records import Record
from depthfinder.selection.candidate import Candidate, arm_label, teacher_of
from depthfinder.selection.decision import Decision
from depthfinder.selection.settings import SweepPart

CrossFitMode = Literal["auto", "on", "all", "off"]
# The seed of the folds: the same rows in the same fold on every run, so a stopped cross-fit resumes its folds.
FOLD_SEED = 20261203


class CrossfitConfig(SweepPart):
    """Cross-fitting: depths judged on rows no model of theirs saw (sweep.crossfit)."""

    mode: CrossFitMode = Field(
        "auto",
        description="Cross-fitting, so that no depth is judged by a chance validation mean: depths trained again on "
        "`folds` folds of the train and validation rows, so that every one of those rows is predicted by a "
        "model that never saw it, and the rule judges on all of them (never on test rows); the shipped model is the "
        "sweep's. auto = every depth the validation rows do not show worse than the tolerance, and the best is the one "
        "best on the out-of-fold rows when the budget pays for all of them (the depths cheaper than the validation "
        "rows' choice first); on = only the cheaper depths than the choice not shown worse, the best stays the "
        "validation rows'; all = every depth, shown worse or not; within `budget` in each case "
        "(docs/selection.md, docs/benchmarks.md: what each buys).",
        json_schema_extra={"flag": "--crossfit"},
    )
    folds: int = Field(
        5, strict=True, ge=2, le=20,
        description="Folds of cross-fitting: each depth cross-fitted trains this many times, on all but one fold; "
        "fewer, down to 3, where `budget` cannot pay for the best and the first depth to settle.",
    )
    budget: float = Field(
        3.0, ge=0,
        description="Training time cross-fitting may spend, as a multiple of the sweep's own (estimated from each "
        "candidate's train time): the best first, then the depths cheaper than the validation rows' choice, cheapest "
        "first; fewer folds (down to 3) where that pays for every depth (4 folds of every depth: 3x); 0 = none.",
        json_schema_extra={"flag": "--crossfit-budget"},
    )

    _switch = field_validator("mode", mode="before")(yaml_switch)


@dataclass(frozen=True)
class OutOfFold:
    """The out-of-fold predictions of the depths cross-fitted (the best among them), over the train and validation
    rows, keyed (family, depth, seed), how many folds made them, and whether the best is chosen on them."""

    predictions: Predictions
    folds: int
    chooses_best: bool = False  # every depth judged cross-fitted (judges_every_depth): the best is chosen here


class CrossFit(Record):
    """What cross-fitting did (the summary's `crossfit`): which depths it trained on folds, on how many rows, and
    what it spent against its budget; or why it did not run."""

    ran: bool = Field(description="Whether out-of-fold predictions were made and the rule judged on them.")
    reason: str = Field(description="Why it ran, or why not, in one sentence.")
    folds: int = Field(description="Folds of the train and validation rows.")
    rows: int = Field(0, description="Train and validation rows predicted out of fold (the evidence's rows).")
    depths: list[int] = Field([], description="Depths cross-fitted, the best among them.")
    families: list[FamilyName] = Field([], description="The family of each of those depths.")
    left_out: list[str] = Field([], description="Depths the budget left out (the validation rows judge them).")
    estimated_seconds: float = Field(0.0, description="Training time it was estimated to take, s.")
    budget_seconds: float = Field(0.0, description="Training time it was allowed: sweep.crossfit.budget x the sweep's.")
    seconds: float = Field(0.0, description="Training time its folds took, s (reused folds: their first training).")
    chooses_best: bool = Field(
        False, description="Every depth was cross-fitted (crossfit: all) and the best was chosen on the out-of-fold "
        "rows, not the validation rows."
    )
    predictions: str | None = Field(
        None, description="File (.npz) of the out-of-fold predictions the rule judged on: `choose_depth(summary."
        "candidates, summary.rule.settings, summary.crossfit.evidence())` replays the decision."
    )

    def evidence(self) -> OutOfFold | None:
        """The out-of-fold predictions it made, read back from `predictions` (None when it did not run)."""
        if not self.ran or not self.predictions:
            return None
        return load_out_of_fold(self.predictions, self.folds, self.chooses_best)

    def sentence(self) -> str:
        """`Cross-fitting: depths 1, 2 and 6 on 5 folds of 2,700 train and validation rows, 41 s of training
        (budget 120 s)`, or why it did not run."""
        if not self.ran:
            return f"Cross-fitting: {self.reason}."
        named = ", ".join(arm_label(f, d, named=len(set(self.families)) > 1 or f != "scratch")
                          for f, d in zip(self.families, self.depths, strict=True))
        left = f"; left out by the budget: {', '.join(self.left_out)}" if self.left_out else ""
        return (f"Cross-fitting: {named} on {self.folds} folds of {self.rows:,} train and validation rows, "
                f"{self.seconds:.0f} s of training (budget {self.budget_seconds:.0f} s){left}.")


@dataclass(frozen=True)
class CrossFitPlan:
    """The depths to cross-fit (the best first), those the budget leaves out, and the estimate against it."""

    folds: int
    arms: list[Arm]
    left_out: list[Arm]
    estimated_seconds: float
    budget_seconds: float
    wanted_seconds: float  # what the best and every depth to settle would take


def arms_to_settle(decision: Decision, mode: CrossFitMode) -> list[Arm]:
    """The depths besides the best that out-of-fold rows should judge, in the order the budget pays for them.

    auto (the default): every depth the validation rows do not show worse than the tolerance, so that no depth is
    kept out of the judging by a chance validation mean, and the best too is then chosen on the out-of-fold rows
    (`chooses_best`) when the budget pays for all of them; first the depths cheaper than the validation rows'
    choice (cheapest first: each could change the decision), then the costlier ones (they can change only which
    depth is best). on: the cheaper depths than the choice not shown worse (unsettled first), the best stays the
    validation rows'. all: every depth, shown worse or not, cheapest first. off, the ratio rule or no intervals:
    none."""
    if mode == "off" or decision.settings.rule == "ratio" or decision.settings.confidence is None:
        return []
    best = (decision.best_family, decision.best_depth)
    others = [s for s in decision.scores if (s.family, s.depth) != best]
    if mode == "all":
        return [(s.family, s.depth) for s in sorted(others, key=lambda s: (s.cost, s.depth))]
    chosen = next(s for s in decision.scores
                  if (s.family, s.depth) == (decision.selected_family, decision.selected_depth))
    if mode == "on":
        cheaper = [s for s in others if s.cost < chosen.cost and s.verdict in ("unsettled", "beyond")]
        ordered = sorted(cheaper, key=lambda s: (s.verdict != "unsettled", s.cost, s.depth))
    else:  # auto
        judged = [s for s in others if s.verdict != "worse"]
        ordered = sorted(judged, key=lambda s: (s.cost >= chosen.cost, s.cost, s.depth))
    return [(s.family, s.depth) for s in ordered]


def judges_every_depth(mode: CrossFitMode, decision: Decision, arms: list[Arm]) -> bool:
    """Whether out-of-fold predictions of `arms` (the best among them) choose the best too: with auto, when they
    hold every depth the validation rows did not show worse; with all, every depth."""
    if mode not in ("auto", "all"):
        return False
    wanted = {(s.family, s.depth) for s in decision.scores
              if (mode == "all" or s.verdict != "worse") and teacher_of(s.family) is None}  # students: not folded
    return wanted <= set(arms)


def plan_cross_fit(
    settle: list[Arm], best: Arm, candidates: list[Candidate], folds: int, budget: float
) -> CrossFitPlan:
    """The folds, the best and as many of the depths to `settle` (in their order) as `budget` times the sweep's
    training time allows, each estimated at (folds - 1) times its own training (a fold trains on (folds - 1)/folds
    of the rows, folds times). Fewer folds, down to MIN_FOLDS, where `folds` cannot pay for the best and the first
    depth to settle (a sweep of two depths: cross-fitting both on 5 folds costs 4x the sweep, on 4 folds 3x); with
    even those over the budget, none. The most folds that pay for every depth to settle win over more folds that
    leave one out: a depth left out is judged on other rows than the rest."""
    plans = [_plan(settle, best, candidates, k, budget) for k in range(folds, min(MIN_FOLDS, folds) - 1, -1)]
    return next((plan for plan in plans if plan.arms and not plan.left_out),
                next((plan for plan in plans if plan.arms), plans[0]))


# The fewest folds cross-fitting takes: each model then trains on two thirds of the rows.
MIN_FOLDS = 3


def _plan(settle: list[Arm], best: Arm, candidates: list[Candidate], folds: int, budget: float) -> CrossFitPlan:
    sweep_seconds = sum(c.cost.train_seconds for c in candidates if c.cost and c.cost.train_seconds)
    allowed = budget * sweep_seconds
    costs = {arm: (folds - 1) * sum(c.cost.train_seconds for c in candidates
                                    if c.usable and (c.family, c.depth) == arm and c.cost and c.cost.train_seconds)
             for arm in [best, *settle]}
    arms, left_out, estimate = [], [], 0.0
    for arm, cost in costs.items():
        if estimate + cost <= allowed * (1 + 1e-9) and (arm == best or arms):  # 3 x 4 folds: 3x, exactly
            arms.append(arm)
            estimate += cost
        else:
            left_out.append(arm)
    if arms == [best]:  # the best alone settles nothing
        arms, left_out = [], [best, *settle]
    return CrossFitPlan(folds=folds, arms=arms, left_out=[a for a in left_out if a != best],
                        estimated_seconds=estimate, budget_seconds=allowed, wanted_seconds=sum(costs.values()))


def assign_folds(labels: Sequence[str], folds: int) -> np.ndarray:
    """Each row's fold (0 .. folds-1), stratified by label (scikit-learn's StratifiedKFold, shuffled with a fixed
    seed: the same rows in the same fold on every run). A class with fewer rows than folds is spread as far as it
    goes; where no label has as many rows as folds (a token table's, whose label is a sentence's tags, nearly each its
    own), unstratified (KFold, the same seed)."""
    from sklearn.model_selection import KFold, StratifiedKFold

    labels = np.asarray([str(label) for label in labels])
    if len(labels) < folds:
        raise ValueError(f"cross-fitting needs at least {folds} train and validation rows, got {len(labels)}")
    assigned = np.empty(len(labels), dtype=np.int32)
    if np.unique(labels, return_counts=True)[1].max() < folds:  # nothing to stratify (a token table's labellings)
        splitter = KFold(n_splits=folds, shuffle=True, random_state=FOLD_SEED)
    else:
        splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=FOLD_SEED)
    with warnings.catch_warnings():  # "The least populated class in y has only 2 members": spread as it goes
        warnings.simplefilter("ignore", UserWarning)
        for fold, (_, held_out) in enumerate(splitter.split(np.zeros(len(labels)), labels)):
            assigned[held_out] = fold
    return assigned


def out_of_fold(fold_ids: np.ndarray, held_out: dict[tuple[str, int, int], list[Predictions]]) -> Predictions:
    """Every row's out-of-fold prediction per (family, depth, seed), from each fold's predictions of the rows it held
    out (in the rows' order within the fold): the rows in their order, each predicted by the model that never saw it.

    Raises:
        ValueError: when a fold's rows or true classes are not those `fold_ids` gives it.
    """
    some_fold = next(iter(held_out.values()))[0]  # a row's shape: a class id, or a sentence's entity counts
    true = np.full((len(fold_ids), *some_fold.true.shape[1:]), -1, dtype=np.int32)
    predicted = {}
    for key, folds in held_out.items():
        classes = np.full((len(fold_ids), *folds[0].predicted[key].shape[1:]), -1, dtype=np.int32)
        for fold, saved in enumerate(folds):
            rows = np.flatnonzero(fold_ids == fold)
            if len(rows) != saved.rows:
                raise ValueError(f"fold {fold + 1} of {key} predicted {saved.rows} rows, not its {len(rows)}")
            if (true[rows] >= 0).all() and not np.array_equal(true[rows], saved.true):
                raise ValueError(f"fold {fold + 1} of {key} was held out on other rows than the other depths'")
            true[rows] = saved.true
            classes[rows] = saved.predicted[key]
        predicted[key] = classes
    return Predictions(true, predicted)


def save_out_of_fold(path: Path, evidence: OutOfFold) -> Path:
    """Write out-of-fold predictions to `path` (.npz, atomically): the true classes, each (family, depth, seed)'s
    predicted ones, and the keys as JSON."""
    keys = list(evidence.predictions.predicted)
    with written_whole(path) as partial, partial.open("wb") as file:
        np.savez(file, true=evidence.predictions.true, keys=np.array(json.dumps(keys)),
                 **{f"predicted_{i}": evidence.predictions.predicted[key] for i, key in enumerate(keys)})
    return path


def load_out_of_fold(path: str | Path, folds: int, chooses_best: bool = False) -> OutOfFold:
    """Out-of-fold predictions written by save_out_of_fold."""
    with np.load(path, allow_pickle=False) as saved:
        keys = [tuple(key) for key in json.loads(str(saved["keys"]))]
        predicted = {key: saved[f"predicted_{i}"] for i, key in enumerate(keys)}
        return OutOfFold(Predictions(saved["true"], predicted), folds, chooses_best)
