"""Unlabelled texts as evidence: a cheaper depth the labelled rows cannot settle, shown within the tolerance by how
little it disagrees with the best (evidence.disagreement), or the few texts whose labels would settle it.

A pool (sweep.pool) is texts from the same source as the labelled rows, without labels: each depth to settle and
the best predict it, and a depth whose mean was within the tolerance on the labelled rows but whose interval was not
(unsettled) is shown within when the pool's bound of how much worse it can be is within the tolerance. Where the
bound is not, the texts on which it and the best disagree are the only ones whose labels can move the decision: they
are written to label (rows_to_label), the depth that needs the fewest first, and labels given for them on the next
run (sweep.pool.labels) tighten the bound; they never reach training.

The labelled rows' verdicts stand: the pool is asked only about depths they left unsettled, so a depth they show
worse, or whose mean is beyond the tolerance, never ships on it. Asking a second kind of evidence after the first
adds at most its own one-sided error to the rule's (docs/selection.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import Field, model_validator

from depthfinder.evidence.bootstrap import Arm
from depthfinder.evidence.disagreement import UNLABELLED, PoolBound, pool_bound, worst_per_row
from depthfinder.evidence.margin import within
from depthfinder.runtime.records import Record
from depthfinder.selection.candidate import arm_label
from depthfinder.selection.decision import Decision, DepthScore, difference_from_best
from depthfinder.selection.settings import SelectionRule, SweepPart

# The file the texts to label are written to, in the run's folder (the sentence names it).
ROWS_TO_LABEL = "rows_to_label.csv"


class PoolConfig(SweepPart):
    """Texts without labels from the labelled rows' source, and labels given later for some (sweep.pool)."""

    unlabeled: Path | None = Field(
        None, description="Texts from the same source as the labelled rows, without labels (any format --data takes, "
        "texts in --text-col; for --task pairs, pairs in --text-col and --pair-col): a cheaper depth the labelled "
        "rows cannot settle is shown within the tolerance when the share of these texts on which it disagrees with "
        "the best bounds its difference within it; where it does not, the texts whose labels would settle it are "
        "written to rows_to_label.csv in the run's folder, with the data's column names (docs/selection.md). Never "
        "trained on; texts also in the labelled table are left out (a pair: one sharing a text with a validation or "
        "test pair, or copying a train pair).",
        json_schema_extra={"flag": "--unlabeled"},
    )
    labels: Path | None = Field(
        None, description="Labels for some of the unlabelled texts (rows_to_label.csv once filled in, or any file with "
        "the input columns and --label-col): they tighten the bound, as evidence only; nothing is trained on them or "
        "retrained for them. Needs --unlabeled.",
        json_schema_extra={"flag": "--labels"},
    )
    rows: int = Field(
        20_000, strict=True, ge=100, le=1_000_000,
        description="Most unlabelled texts each depth to settle predicts (a fixed sample of a larger file).",
    )

    @model_validator(mode="after")
    def _labels_need_texts(self) -> PoolConfig:
        if self.labels is not None and self.unlabeled is None:
            raise ValueError("--labels needs --unlabeled: the labels are for texts of the unlabelled pool")
        return self


class PoolUse(Record):
    """What the run made of its unlabelled texts (the summary's `pool`): the pool audited like a split, then cut
    between the students' teaching and the evidence."""

    texts: int = Field(description="Texts in the file of unlabelled texts.")
    of_held_out: int = Field(
        description="Of them, copies or near-copies (the audit's near-duplicate measure after its normalisation) of a "
        "validation or test text: left out, never taught on and never evidence."
    )
    of_train: int = Field(description="Copies or near-copies of train texts (and of no evaluation text): left out.")
    used: int = Field(description="New texts used (a fixed sample of at most sweep.pool.rows of them).")
    taught: int = Field(0, description="Of those, taught to students with the teacher's soft labels: not evidence.")
    labelled: int = Field(0, description="Of the evidence, texts given a label (sweep.pool.labels).")
    evidence: bool = Field(True, description="Whether the texts not taught are evidence for the rule: not for a tagger "
                           "(the disagreement bound is one of a label per text), whose pool teaches alone.")

    def sentence(self) -> str:
        """`Unlabelled pool: 900 texts; left out 312 copies or near-copies of validation or test texts (never taught
        on, never evidence) and 36 of train texts; 552 new texts used, 276 taught to students, 276 as evidence.`
        A tagger's: `...; 552 new texts, 276 taught to students (a tagger's pool teaches; it is no evidence).`"""
        left = [f"{self.of_held_out:,} copies or near-copies of validation or test texts (never taught on, never "
                "evidence)" if self.of_held_out else "", f"{self.of_train:,} of train texts" if self.of_train else ""]
        left_out = f"; left out {' and '.join(filter(None, left))}" if any(left) else ""
        if not self.evidence:
            taught = f"{self.taught:,} taught to students" if self.taught else "none taught, no student trained"
            return (f"Unlabelled pool: {self.texts:,} texts{left_out}; {self.used:,} new texts, {taught} (a tagger's "
                    "pool teaches; it is no evidence).")
        use = (f", {self.taught:,} taught to students, {self.used - self.taught:,} as evidence" if self.taught
               else " as evidence")
        return f"Unlabelled pool: {self.texts:,} texts{left_out}; {self.used:,} new texts used{use}."


@dataclass(frozen=True)
class Pool:
    """The pool's predicted class ids per (family, depth, seed), the labels given for some of its texts (UNLABELLED
    elsewhere), and each class's share among the labelled rows (a lower bound of it), by class id."""

    predicted: dict[tuple[str, int, int], np.ndarray]
    true: np.ndarray
    class_shares: np.ndarray

    @property
    def rows(self) -> int:
        return len(self.true)

    @property
    def labelled(self) -> int:
        return int((self.true != UNLABELLED).sum())

    def seeds(self, arm: Arm) -> list[np.ndarray]:
        """`arm`'s predictions, one per seed (none when it did not predict the pool)."""
        return [classes for (family, depth, _), classes in sorted(self.predicted.items(), key=lambda item: item[0])
                if (family, depth) == arm]


def arms_to_bound(decision: Decision) -> list[Arm]:
    """The depths to predict the pool: the cheaper ones than the chosen depth that the labelled rows left unsettled,
    and the best; none when no cheaper depth is unsettled (or the rule compares no intervals)."""
    if decision.settings.rule == "ratio" or decision.settings.confidence is None or decision.validation_rows is None:
        return []
    chosen = next(s for s in decision.scores
                  if (s.family, s.depth) == (decision.selected_family, decision.selected_depth))
    settle = [(s.family, s.depth) for s in decision.scores if s.cost < chosen.cost and s.verdict == "unsettled"]
    return [(decision.best_family, decision.best_depth), *settle] if settle else []


def on_pool(scores: dict[Arm, DepthScore], best: Arm, rule: SelectionRule, pool: Pool) -> dict[Arm, DepthScore]:
    """The scores with each depth the labelled rows left unsettled bounded on the pool (its `pool`), and compared on
    it (`compared_on` unlabeled, `vs_best` the pool's bounds) where the bound shows it within the tolerance."""
    updated = dict(scores)
    for arm, score in scores.items():
        if arm == best or score.verdict != "unsettled" or not pool.seeds(arm) or not pool.seeds(best):
            continue
        bound = pool_bound(pool.seeds(best), pool.seeds(arm), rule.metric, pool.class_shares, rule.confidence,
                           pool.true)
        difference = difference_from_best(score, scores[best])
        update = {"pool": bound}
        if within(difference, rule.tolerance, -bound.worse_by_at_most):
            update |= {"compared_on": "unlabeled", "vs_best": bound.interval(difference)}
        updated[arm] = score.model_copy(update=update)
    return updated


def rows_to_label(scores: list[DepthScore], best: Arm, chosen: Arm, pool: Pool, metric: str) -> list[int]:
    """The pool's rows whose labels could settle a cheaper depth than the chosen one that the pool could not bound
    within the tolerance: where it and the best disagree (any seeds) and no label is given, the depth with the fewest
    first, each depth's rows by how much they can weigh in the bound (the largest first); none when nothing is
    left to settle."""
    cost = next(s.cost for s in scores if (s.family, s.depth) == chosen)
    groups = []
    for score in scores:
        arm = (score.family, score.depth)
        if score.pool is None or score.compared_on == "unlabeled" or score.cost >= cost:
            continue
        weight = np.mean([worst_per_row(b, o, pool.true, metric, pool.class_shares)
                          for b in pool.seeds(best) for o in pool.seeds(arm)], axis=0)
        rows = np.flatnonzero((weight > 0) & (pool.true == UNLABELLED))
        groups.append(rows[np.argsort(-weight[rows], kind="stable")].tolist())
    ordered, seen = [], set()
    for rows in sorted(groups, key=len):
        ordered += [row for row in rows if row not in seen]
        seen.update(rows)
    return ordered


def label_clause(arm: Arm, bound: PoolBound, tolerance: float, metric: str, to_label: int, label) -> str:
    """`on 8,000 unlabelled texts depth 3 disagrees with the best on 2.1% [1.8%, 2.4%], which bounds its macro_f1
    only to 0.031 below (tolerance 0.01): label the 168 texts of rows_to_label.csv ...`."""
    head = (f"on {bound.rows:,} unlabelled texts {label(arm)} disagrees with the best on {bound.disagreement:.1%} "
            f"[{bound.disagreement_low:.1%}, {bound.disagreement_high:.1%}], which bounds its {metric} only to "
            f"{bound.worse_by_at_most:.3f} below (tolerance {tolerance:.3g})")  # not within: the bound is positive
    if not to_label:
        return head
    return (f"{head}: label the {to_label:,} texts of {ROWS_TO_LABEL} (where the cheaper depths disagree with the "
            f"best, the fewest first) and run again with --labels {ROWS_TO_LABEL}")


def pool_sentence(decision: Decision, to_label: str | None) -> str | None:
    """`Unlabelled texts: 2,600, 1,968 labelled; depth 1 disagreement 75.7% [74.3%, 77.0%] with the best, at most
    0.770 below (shown within); texts to label: PATH (41)`; None when no depth was bounded on them."""
    bounded = [s for s in decision.scores if s.pool is not None]
    if not bounded:
        return None
    named = len({s.family for s in decision.scores}) > 1
    depths = "; ".join(
        f"{arm_label(s.family, s.depth, named)} {s.pool.share_text()} with the best, {decision.metric} "
        f"{s.pool.bound_text()} ({'shown within' if s.compared_on == 'unlabeled' else 'not within'} the tolerance)"
        for s in bounded)
    labelled = f", {decision.labelled_texts:,} labelled" if decision.labelled_texts else ""
    asked = f"; texts to label: {to_label} ({decision.rows_to_label:,})" if to_label and decision.rows_to_label else ""
    return f"Unlabelled texts: {decision.unlabeled_rows:,}{labelled}; {depths}{asked}."
