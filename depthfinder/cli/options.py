"""The commands' own options, besides the run's settings: declared like them, one flag per field (cli/flags.py)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from depthfinder.flows.config import RunConfig
from depthfinder.flows.deploy import NIGHTLY_CRON, NIGHTLY_TIMEZONE

# Each export format: the artifact of a depthfinder model that holds it (the sentence-transformers folder is written
# from the bundle, so every version has it that can), and what to say when it has none.
SENTENCE_TRANSFORMERS = "sentence-transformers"
EXPORT_FORMATS = {
    "hf": ("hf", "no Hugging Face folder: only a pretrained model trained with model.pretrained_pooling head is one "
           "(or tokens, for token labels); "
           "one pooled by mean or first token (the default) is a sentence-transformers folder"),
    SENTENCE_TRANSFORMERS: ("bundle", "no bundle"),
    "onnx": ("onnx", "no ONNX variants: it was registered without onnxruntime, or before depthfinder made them"),
    "bundle": ("bundle", "no bundle"),
}
ExportFormat = Literal[tuple(EXPORT_FORMATS)]  # type: ignore[valid-type]


class Options(BaseModel):
    """A command's options: never validated as a whole (argparse parses them), only declared."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class ConfigFile(Options):
    config: Path | None = Field(
        None, description=f"YAML file with sections {', '.join(RunConfig.model_fields)}.",
        json_schema_extra={"flag": "--config"},
    )


class RunOptions(Options):
    summary_json: Path | None = Field(
        None, description="Write what the run decided to this file.", json_schema_extra={"flag": "--summary-json"}
    )
    force: bool = Field(
        False, description="Retrain whatever the comparison with the champion says: the same data and settings, or "
        "a stop.", json_schema_extra={"flag": "--force"},
    )


class AuditOptions(Options):
    report_json: Path | None = Field(
        None, description="Write the audit report to this file.", json_schema_extra={"flag": "--report-json"}
    )
    data_docs: Path | None = Field(
        None, description="Build the Great Expectations Data Docs (HTML) in this folder.",
        json_schema_extra={"flag": "--data-docs"},
    )


class DeployOptions(Options):
    cron: str = Field(NIGHTLY_CRON, description="Cron schedule of the retrain.", json_schema_extra={"flag": "--cron"})
    timezone: str = Field(
        NIGHTLY_TIMEZONE, description="IANA time zone of the schedule.", json_schema_extra={"flag": "--timezone"}
    )


class ModelUri(Options):
    model: str = Field(
        description="Model URI, e.g. models:/depthfinder@champion.", json_schema_extra={"flag": "--model"}
    )


class PredictOptions(ModelUri):
    text: list[str] | None = Field(
        None, description="A text to label (repeatable).",
        json_schema_extra={"flag": "--text", "one_of": "texts", "group_required": True},
    )
    data: Path | None = Field(
        None, description="File whose text column to label.",
        json_schema_extra={"flag": "--data", "one_of": "texts", "group_required": True},
    )
    pair: list[str] | None = Field(
        None, description="For a model of pairs: the second text of each --text, in their order (repeatable).",
        json_schema_extra={"flag": "--pair"},
    )
    pair_col: str | None = Field(
        None, description="For a model of pairs: the column of --data holding each pair's second text.",
        json_schema_extra={"flag": "--pair-col"},
    )


class ExportOptions(ModelUri):
    to: Path = Field(description="Folder to write the files into (new, or empty).", json_schema_extra={"flag": "--to"})
    format: ExportFormat = Field(
        "hf", description="hf: the Hugging Face folder (pretrained, head or tokens pooling); sentence-transformers: "
        "the sentence-transformers folder (pretrained, mean or first-token pooling); onnx: the ONNX variants that "
        "shipped and their measurements; bundle: depthfinder's own.", json_schema_extra={"flag": "--format"},
    )


class HistoryOptions(Options):
    at: datetime | None = Field(
        None, description="Say which version was champion at this time, e.g. 2026-11-24T02:00 (UTC unless an offset "
        "is given).", json_schema_extra={"flag": "--at"},
    )


class RollbackOptions(Options):
    reason: str = Field("by hand", description="Why, for the history.", json_schema_extra={"flag": "--reason"})
