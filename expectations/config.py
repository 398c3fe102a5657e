"""Settings for the data (where it comes from, how it is split) and for the audit."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator


class DataConfig(BaseModel):
    """Where the labelled table comes from and how it is split."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: Path | None = Field(None, description="CSV, Parquet or JSONL file with one row per example.")
    dataset: str | None = Field(
        None, description="A built-in dataset (see `depthfinder datasets`), used when no path is given."
    )
    dataset_rows: int = Field(3000, ge=20, description="Rows generated for a built-in dataset.")
    text_col: str = Field("text", description="Column holding the text.")
    label_col: str = Field("label", description="Column holding the label.")
    split_col: str | None = Field(None, description="Column holding train/val/test; made by depthfinder when absent.")
    val_fraction: float = Field(0.1, gt=0, lt=0.5, description="Share of groups assigned to validation.")
    test_fraction: float = Field(0.1, gt=0, lt=0.5, description="Share of groups assigned to test.")
    seed: int = Field(1, description="Seed of the split and of a built-in dataset.")

    @model_validator(mode="after")
    def _one_source(self) -> DataConfig:
        if (self.path is None) == (self.dataset is None):
            raise ValueError("give exactly one of a data path (--data) or a built-in dataset (--dataset)")
        return self


class AuditConfig(BaseModel):
    """Thresholds of the data audit and what blocks training."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    strict: bool = Field(False, description="Warnings block training too.")
    max_empty_text_fraction: float = Field(
        0.01,
        ge=0,
        le=1,
        description="Empty texts above this share of rows block training; below it they warn and are dropped.",
    )
    max_imbalance_ratio: float = Field(
        10.0, gt=1, description="Majority/minority ratio above which class imbalance is reported."
    )
    min_class_rows: int = Field(
        10, ge=1, description="Rows a class needs in total to be learnable; fewer blocks training."
    )
    examples: int = Field(5, ge=0, le=100, description="Example rows kept as evidence per check.")
