"""Thresholds of the data audit, what blocks training, and which rows to drop first."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from depthfinder.expectations.table.near_duplicates import DEFAULT_THRESHOLD

# What `audit.drop` can remove before the audit runs (each is counted in the report).
DropKind = Literal["conflicts", "empty", "leaks"]


class AuditConfig(BaseModel):
    """Thresholds of the data audit, what blocks training, and which rows to drop first."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    strict: bool = Field(False, description="Warnings block training too.", json_schema_extra={"flag": "--strict"})
    drop: list[DropKind] = Field(
        [],
        description="Rows to drop before the audit and training, counted in the report: conflicts (texts "
        "with two labels), empty (texts without a letter or digit), leaks (val/test rows whose text or "
        "near-duplicate is in an earlier split).",
        # A switch per kind, each adding its kind to the list.
        json_schema_extra={"flag": "--drop-{}", "each": {
            "conflicts": "Drop rows whose text also appears with another label before the audit (counted).",
            "empty": "Drop rows whose text has no letter or digit before the audit (counted).",
            "leaks": "Drop val/test rows whose text or a near-copy is in an earlier split before the audit (counted).",
        }},
    )
    max_empty_text_fraction: float = Field(
        0.01,
        ge=0,
        le=1,
        description="Empty texts above this share of rows block training; below it they warn (drop them with "
        "--drop-empty).",
    )
    max_length_ratio: float = Field(
        20.0, gt=1, description="Texts longer than this many times the median length (and 500 characters) warn."
    )
    near_duplicate_threshold: float = Field(
        DEFAULT_THRESHOLD, gt=0, le=1,
        description="Estimated Jaccard similarity (character 5-grams) at which two texts are near-duplicates.",
    )
    max_near_duplicate_fraction: float = Field(
        0.05, ge=0, le=1,
        description="Share of val+test rows with a near-duplicate in another split above which training is "
        "blocked; below it they warn.",
    )
    label_token_min_purity: float = Field(
        0.99, gt=0.5, le=1, description="Share of a token's rows in one class for it to give the label away."
    )
    label_token_min_coverage: float = Field(
        0.5, gt=0, le=1,
        description="Share of that class's rows a token must appear in to give the label away (a label's own "
        "name: half of this).",
    )
    label_token_min_rows: int = Field(20, strict=True, ge=2, description="Rows a giveaway token must appear in.")
    giveaway_min_lift: float = Field(
        0.5, gt=0, le=1,
        description="How far a column alone must close the gap from the majority baseline to perfect accuracy "
        "((accuracy - baseline) / (1 - baseline)) to give the label away.",
    )
    ignore_columns: list[str] = Field(
        [], description="Columns label_giveaway_columns does not test (known, legitimate metadata)."
    )
    label_noise_warn_fraction: float = Field(
        0.02, ge=0, le=1, description="Estimated share of mislabelled rows above which the audit warns."
    )
    max_label_noise_fraction: float = Field(
        0.3, ge=0, le=1, description="Estimated share of mislabelled rows above which training is blocked."
    )
    noise_max_rows: int = Field(
        20_000, strict=True, ge=100, description="Confident learning runs on a random sample of this many rows at most."
    )
    max_imbalance_ratio: float = Field(
        10.0, gt=1, description="Majority/minority ratio above which class imbalance is reported."
    )
    min_class_rows: int = Field(
        10, strict=True, ge=1, description="Rows a class needs in total to be learnable; fewer blocks training."
    )
    examples: int = Field(5, strict=True, ge=0, le=100, description="Example rows kept as evidence per check.")
