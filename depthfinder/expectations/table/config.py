"""Where the labelled table comes from and how it is split."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator


class DataConfig(BaseModel):
    """Where the labelled table comes from and how it is split."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    path: Path | None = Field(
        None, description="CSV, Parquet or JSONL file with one row per example.",
        json_schema_extra={"flag": "--data", "one_of": "source"},
    )
    dataset: str | None = Field(
        None, description="A built-in dataset (see `depthfinder datasets`), used when no path is given.",
        json_schema_extra={"flag": "--dataset", "one_of": "source"},
    )
    dataset_rows: int = Field(
        3000, strict=True, ge=20, le=1_000_000, description="Rows generated for a built-in dataset."
    )
    text_col: str = Field("text", description="Column holding the text.", json_schema_extra={"flag": "--text-col"})
    label_col: str = Field("label", description="Column holding the label.", json_schema_extra={"flag": "--label-col"})
    split_col: str | None = Field(
        None, description="Column holding train/val/test; made by depthfinder when absent.",
        json_schema_extra={"flag": "--split-col"},
    )
    val_fraction: float = Field(0.1, gt=0, lt=0.5, description="Share of groups assigned to validation.")
    test_fraction: float = Field(0.1, gt=0, lt=0.5, description="Share of groups assigned to test.")
    seed: int = Field(1, strict=True, ge=0, le=2**32 - 1, description="Seed of the split and of a built-in dataset.")
    group_near_duplicates: bool = Field(
        True,
        description="Key each row's split by a MinHash of its text, so near-duplicates usually share a split "
        "(exact duplicates always do; an old row never changes split as data grows); false: exact duplicates only.",
    )

    @model_validator(mode="after")
    def _one_source(self) -> DataConfig:
        if (self.path is None) == (self.dataset is None):
            raise ValueError("give exactly one of a data path (--data) or a built-in dataset (--dataset)")
        return self
