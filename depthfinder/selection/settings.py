"""The rule's settings: how to choose among depths, and the margin of every other decision judged by
evidence.margin. One object, declared here once; the flows' SweepConfig extends it with the sweep's own settings."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from depthfinder.selection.candidate import CostName

RuleName = Literal["tolerance", "ratio", "pareto"]
# Of a label per text (classify, pairs), then of token labels (entity-level F1 by seqeval, micro and macro over types).
Metric = Literal["macro_f1", "balanced_accuracy", "accuracy", "entity_f1", "entity_macro_f1"]


class SelectionRule(BaseModel):
    """How to choose among depths: the rule, its metric and cost, the hard limits, and the margins of the other
    decisions made on the way to the chosen depth and of it.

    One object, passed whole to the rule, to the strategies, successive halving and the search (which rank and
    compare by it, keep late bloomers by `halving_margin` and call a curve still rising by `convergence_gain`), to
    the deployment gate (which ships a variant by its metric, confidence and `deployment_margin`) and to promotion
    (which compares champion and challenger by its metric, confidence and `promotion_margin`). Each decision has a
    margin of its own, so loosening one loosens no other; every one is judged by evidence.margin.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    rule: RuleName = Field(
        "tolerance", description="tolerance: cheapest within tolerance of the best; ratio: max metric/cost^alpha; "
        "pareto: tolerance on the Pareto front.",
        json_schema_extra={"flag": "--rule"},
    )
    metric: Metric = Field(
        "macro_f1", description="Validation metric the rule chooses by: macro_f1, balanced_accuracy or accuracy of a "
        "label per text (--task classify, pairs); entity_f1 (micro, seqeval's strict F1) or entity_macro_f1 of token "
        "labels (--task tokens, whose default is entity_f1).",
        json_schema_extra={"flag": "--metric"},
    )
    tolerance: float = Field(
        0.01, ge=0, description="Quality a cheaper depth may give up against the best (the depth rule; the search's "
        "screen and confirmations judge by it too).",
        json_schema_extra={"flag": "--tolerance"},
    )
    confidence: float | None = Field(
        0.9, gt=0, lt=1,
        description="Confidence of the paired bootstrap interval of (depth - best) on the validation rows; a cheaper "
        "depth ties with the best when its mean and the interval's lower end are both at least -tolerance (the rows "
        "show it within). null = compare the means only.",
        json_schema_extra={"flag": "--confidence"},
    )
    promotion_margin: float = Field(
        0.01, ge=0, description="How much worse than the champion a challenger may be and still replace it: it is "
        "refused only when the test rows show it worse by more than this (the upper end of its paired interval below "
        "-promotion_margin; with confidence null, its mean)."
    )
    deployment_margin: float = Field(
        0.01, ge=0, description="Quality an ONNX or int8 ONNX variant may lose against the torch model and still ship "
        "with the version: its test mean, and the lower end of its paired interval, at least -deployment_margin. "
        "The model with its vocabulary pruned is judged the same way."
    )
    vocabulary_min_count: int = Field(
        1, ge=1, description="How often a token must occur in the train split for the pruned vocabulary to keep it "
        "(special tokens and single characters always are): 1 keeps every token training saw.",
        json_schema_extra={"flag": "--vocabulary-min-count"},
    )
    halving_margin: float = Field(
        0.01, ge=0,
        description="How far below the weakest kept depth a depth outside a halving rung's better half may be "
        "projected (its best plus its gain over the last patience epochs once more) and still be kept, as a late "
        "bloomer.",
    )
    convergence_gain: float = Field(
        0.01, ge=0,
        description="A candidate whose best of the last patience epochs beats its best before them by more than this "
        "was still rising when its budget ended (not_converged; sweep.extend extends it).",
    )
    alpha: float = Field(0.1, gt=0, description="Exponent of the cost in the ratio rule.")
    cost: CostName = Field(
        "flops_per_example", description="Cost the rule minimises among depths within tolerance.",
        json_schema_extra={"flag": "--cost"},
    )
    max_latency_ms: float | None = Field(
        None, gt=0, description="Hard limit on p50 latency at batch 1.",
        json_schema_extra={"flag": "--max-latency-ms"},
    )
    max_params: int | None = Field(
        None, strict=True, gt=0, description="Hard limit on parameter count.",
        json_schema_extra={"flag": "--max-params"},
    )
    max_size_mb: float | None = Field(
        None, gt=0, description="Hard limit on the size of the smallest form a depth could ship in (its cost size_mb, "
        "MiB: torch or int8 ONNX, its vocabulary pruned or not).",
        json_schema_extra={"flag": "--max-size-mb"},
    )


    @property
    def asks_size(self) -> bool:
        """Whether the rule chooses or limits by size: then every form's size is weighed, int8 ONNX ones too."""
        return self.cost == "size_mb" or self.max_size_mb is not None


class SweepPart(BaseModel):
    """One part of the sweep's settings. Given a bare value instead of a mapping (`crossfit: off` in YAML, a flow
    parameter), the value is its first setting."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _bare_value(cls, values: object) -> object:
        return values if isinstance(values, dict | BaseModel) else {next(iter(cls.model_fields)): values}
