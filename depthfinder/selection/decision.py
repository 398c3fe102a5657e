"""The record of a decision: each depth's score and the rule's verdict on it against the best, and what the rule
chose and why (`Decision`, the summary's `rule` object).

Each depth's verdict (`DepthScore.verdict`: best, within, unsettled, beyond, worse) is judged once, by `judge`, where
the decision is made (selection.rule.choose_depth); the sentence (selection.reasons), the plots, the terminal, the
Prefect artifact and the model card read it and never judge again.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    computed_field,
    field_validator,
    model_serializer,
    model_validator,
)

from depthfinder.encoder.config import FAMILY_DESCRIPTION, FamilyName
from depthfinder.evidence.bootstrap import Interval
from depthfinder.evidence.disagreement import PoolBound
from depthfinder.evidence.margin import shown_worse, within
from depthfinder.runtime.records import Record
from depthfinder.selection.candidate import CostName, arm_label
from depthfinder.selection.settings import Metric, RuleName, SelectionRule

# What the rule's criterion says of a depth against the best (judge): the best itself; shown within the tolerance
# (it may ship in the best's place); its mean beyond the tolerance (it cannot ship, whatever its interval); its
# interval wholly below -tolerance (shown worse); or neither shown within nor beyond: the rows cannot tell.
# selection.reasons.VERDICT_WORDS says each in words.
Verdict = Literal["best", "within", "unsettled", "beyond", "worse"]
# What a depth was compared with the best on: the validation split's rows, every train and validation row predicted
# out of fold by cross-fitting (selection.crossfit), or a pool of unlabelled texts (selection.pool).
Evidence = Literal["validation", "out-of-fold", "unlabeled"]


class DepthScore(Record):
    """One depth's quality over its seeds (mean and standard error) and its mean cost."""

    depth: int = Field(description="Encoder blocks.")
    family: FamilyName = Field("scratch", description=FAMILY_DESCRIPTION)
    mean: float = Field(description="Mean validation metric over its seeds.")
    std_error: float = Field(description="Standard error of that mean (0 with one seed).")
    seeds: int = Field(description="Seeds trained.")
    cost: float = Field(description="Mean cost, by the rule's cost.")
    vs_best: Interval | None = Field(
        None, description="Its metric minus the best depth's, with the paired bootstrap interval; none without "
        "saved predictions."
    )
    not_converged: bool = Field(False, description="A seed of it was still improving when its budget ended.")
    compared_on: Evidence = Field(
        "validation", description="The rows its interval against the best was measured on: validation, or "
        "out-of-fold (cross-fitting's predictions of the train and validation rows, selection.crossfit); its "
        "verdict's mean criterion is then the out-of-fold difference too; or unlabeled (a pool of unlabelled "
        "texts bounds how much worse it can be: `vs_best` holds the labelled rows' difference and the pool's bounds, "
        "selection.pool)."
    )
    pool: PoolBound | None = Field(
        None, description="How it stands against the best on the unlabelled texts (sweep.pool), for a depth the "
        "labelled rows could not settle: its disagreement with the best and the bound that puts on the difference."
    )
    verdict: Verdict | None = Field(
        None, description="The rule's criterion on it against the best, judged once where the decision is made: best, "
        "within (shown within the tolerance: it may ship), unsettled (mean within, not shown within: the rows cannot "
        "tell), beyond (mean more than the tolerance below the best's) or worse (its interval wholly below "
        "-tolerance: shown worse). Summaries written before it are judged when read."
    )

    @property
    def may_ship(self) -> bool:
        """Whether the rule lets it ship in the best's place."""
        return self.verdict in ("best", "within")


class Decision(Record):
    """The summary's `rule` object: the settings it chose by, what it chose, and why in one sentence."""

    settings: SelectionRule = Field(
        exclude=True, description="The rule it chose by: its settings that choose a depth, those its JSON form "
        "writes, each a key of its own (`name` is the rule's `rule`); the other decisions' margins, recorded with "
        "those decisions, stand at their defaults here. `choose_depth(candidates, decision.settings)` replays it."
    )
    reason: str = Field(description="The decision in one sentence, with its numbers.")
    selected_depth: int = Field(description="The chosen depth.")
    selected_family: FamilyName = Field(
        "scratch", description="The chosen depth's family: scratch, or the chosen checkpoint's name."
    )
    best_depth: int = Field(
        description="The depth with the best mean validation metric; with every depth cross-fitted (crossfit: all), "
        "the best mean out-of-fold metric."
    )
    best_family: FamilyName = Field("scratch", description="Its family.")
    evidence: str = Field(
        "", description="How depths were compared: the paired bootstrap and its size, or why means only."
    )
    validation_rows: int | None = Field(
        None, description="Validation rows the paired bootstrap compared the depths on; none by means only."
    )
    out_of_fold_rows: int | None = Field(
        None, description="Train and validation rows cross-fitting predicted out of fold, on which the depths it "
        "cross-fitted were compared (their scores' compared_on); none when it did not run."
    )
    folds: int | None = Field(None, description="Folds of that cross-fitting.")
    unlabeled_rows: int | None = Field(
        None, description="Unlabelled texts (sweep.pool.unlabeled) the depths the labelled rows could not settle were "
        "bounded on; none without a pool, or when no depth needed it."
    )
    labelled_texts: int | None = Field(
        None, description="Of those, the texts whose labels were given (sweep.pool.labels): evidence, never training."
    )
    rows_to_label: int | None = Field(
        None, description="Texts of the pool whose labels could settle a cheaper depth the pool could not bound "
        "within the tolerance (written to rows_to_label.csv in the run's folder); none when nothing is left."
    )
    rows_to_resolve: int | None = Field(
        None, description="About how many labelled rows (validation, or out-of-fold where cross-fitting compared it) "
        "would make the interval of the cheaper depth the rows could "
        "not settle (not shown within the tolerance, not shown beyond it) as narrow as the tolerance (widths shrink "
        "as 1/sqrt(rows)); none when nothing was unsettled."
    )
    pareto_front: list[int] = Field(description="Depths no other depth beats on both quality and cost.")
    pareto_families: list[FamilyName] = Field([], description="The family of each depth of the Pareto front.")
    scores: list[DepthScore] = Field(
        description="Per eligible depth: mean metric, standard error, seeds, mean cost and the rule's verdict."
    )

    # The settings, as the JSON form writes them (and reads them back: _read_back).
    @computed_field(description="The rule: tolerance, ratio or pareto.")
    @property
    def name(self) -> RuleName:
        return self.settings.rule

    @computed_field(description="Validation metric it chose by.")
    @property
    def metric(self) -> Metric:
        return self.settings.metric

    @computed_field(description="Configured tolerance, the one applied.")
    @property
    def tolerance(self) -> float:
        return self.settings.tolerance

    @computed_field(description="Cost it minimised.")
    @property
    def cost(self) -> CostName:
        return self.settings.cost

    @computed_field(description="Configured confidence of the intervals (null: means only).")
    @property
    def confidence(self) -> float | None:
        return self.settings.confidence

    @computed_field(description="Exponent of the cost in the ratio rule.")
    @property
    def alpha(self) -> float:
        return self.settings.alpha

    @computed_field(description="Hard limit on p50 latency, if set.")
    @property
    def max_latency_ms(self) -> float | None:
        return self.settings.max_latency_ms

    @computed_field(description="Hard limit on parameters, if set.")
    @property
    def max_params(self) -> int | None:
        return self.settings.max_params

    @model_serializer(mode="wrap")
    def _settings_first(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The settings' keys first, as summaries have always begun: `{"name": "tolerance", "metric": ...}`."""
        written = handler(self)
        return {**{key: written.pop(key) for key in type(self).model_computed_fields if key in written}, **written}

    @field_validator("settings")
    @classmethod
    def _written(cls, settings: SelectionRule) -> SelectionRule:
        """Only the settings the JSON form writes, as a SelectionRule (not the SweepConfig a run passes), so that a
        decision read back is the decision written."""
        return SelectionRule(**settings.model_dump(include={_field(key) for key in cls.model_computed_fields}))

    @model_validator(mode="before")
    @classmethod
    def _read_back(cls, values: object) -> object:
        """A decision from its JSON form, which writes the settings as keys of its own (flows.older reads the forms
        earlier versions wrote)."""
        if not isinstance(values, dict) or "settings" in values:
            return values
        settings = {_field(key): values[key] for key in cls.model_computed_fields if key in values}
        rest = {key: value for key, value in values.items() if key not in cls.model_computed_fields}
        return {**rest, "settings": settings}

    @property
    def selected_label(self) -> str:
        """`depth 2`, or `pretrained depth 2`."""
        return arm_label(self.selected_family, self.selected_depth)

    @property
    def best_label(self) -> str:
        return arm_label(self.best_family, self.best_depth)


def _field(key: str) -> str:
    """The SelectionRule setting behind a key of a decision's JSON form: `name` is the rule's `rule`."""
    return "rule" if key == "name" else key


def score_of(decision: Decision, family: str, depth: int) -> DepthScore:
    """The decision's score of (family, depth)."""
    return next(s for s in decision.scores if (s.family, s.depth) == (family, depth))


def ties(score: DepthScore, best: DepthScore, tolerance: float) -> bool:
    """Whether a depth may ship in the best's place (evidence.margin.within): its mean no more than the
    tolerance below the best's, and, with the paired bootstrap, the lower end of its interval too."""
    lower = score.vs_best.low if score.vs_best is not None else None
    return within(difference_from_best(score, best), tolerance, lower)


def difference_from_best(score: DepthScore, best: DepthScore) -> float:
    """Its mean minus the best's on the labelled rows it was compared on: the validation means, or the out-of-fold
    ones (a depth bounded on unlabelled texts keeps its labelled rows' difference in vs_best)."""
    if score.compared_on != "validation" and score.vs_best is not None:
        return score.vs_best.difference
    return score.mean - best.mean


def judge(score: DepthScore, best: DepthScore, tolerance: float) -> Verdict:
    """The rule's verdict on a depth against the best, by evidence.margin's predicates: within when it
    ties (it may ship); worse when its interval's upper end is below −tolerance; beyond when its mean is more than
    the tolerance below the best's (it cannot ship, though the rows do not show it worse); unsettled otherwise."""
    if (score.family, score.depth) == (best.family, best.depth):
        return "best"
    if ties(score, best, tolerance):
        return "within"
    if score.vs_best is not None and shown_worse(score.vs_best.high, tolerance):
        return "worse"
    return "unsettled" if within(difference_from_best(score, best), tolerance) else "beyond"
