"""Where the labelled table comes from and how it is split."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from depthfinder.expectations.table.shape import Task


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
    task: Task = Field(
        "classify", description="The task's shape: `classify` (one text, one label) or `pairs` (two texts, the "
        "pair's label: --text-col and --pair-col, read as one sequence as a cross-encoder reads them) or `tokens` "
        "(a tag per token: a CoNLL file, or a table of token and tag lists, --tokens-col and --tags-col; BIO or "
        "BIOES).",
        json_schema_extra={"flag": "--task"},
    )
    text_col: str = Field("text", description="Column holding the text (of a pair: the first).",
                          json_schema_extra={"flag": "--text-col"})
    pair_col: str = Field("pair", description="Column holding a pair's second text (--task pairs).",
                          json_schema_extra={"flag": "--pair-col"})
    tokens_col: str = Field("tokens", description="Column holding each sentence's list of tokens (--task tokens; a "
                            "CoNLL file's are read as such).", json_schema_extra={"flag": "--tokens-col"})
    tags_col: str = Field("tags", description="Column holding each sentence's list of tags, one per token (--task "
                          "tokens).", json_schema_extra={"flag": "--tags-col"})
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
        from depthfinder.expectations.table.datasets import DATASETS

        builtin = DATASETS.get(self.dataset or "")
        if builtin is not None and builtin.task != self.task:
            raise ValueError(f"dataset {self.dataset!r} holds {builtin.task} examples: pass --task {builtin.task}")
        return self
