"""Records of the registry that cross layers: a registered version, and what registering one decided (how the
challenger fared against the champion is selection.promotion.Judgement)."""

from __future__ import annotations

from pydantic import Field

from depthfinder.encoder.config import FAMILY_DESCRIPTION
from depthfinder.evidence.bootstrap import Interval
from depthfinder.runtime.records import Record
from depthfinder.selection.promotion import RowsApart


class ModelVersionRef(Record):
    """A registered model version."""

    name: str = Field(description="Registered model name.")
    version: str = Field(description="Its version.")
    uri: str = Field(description="models:/NAME/VERSION.")
    family: str | None = Field(None, description=FAMILY_DESCRIPTION)
    depth: int | None = Field(None, description="Its depth.")
    size_mb: float | None = Field(
        None, description="Size of the saved model it serves (the layers it uses; its vocabulary pruned when the "
        "deployment gate shipped that), MiB."
    )
    inputs: list[str] = Field(["text"], description="The columns it reads one example from: text, or text and pair.")
    outputs: list[str] = Field(
        ["label", "confidence", "proba_<label>"], description="The columns it answers with: label, confidence and "
        "one probability per class, or, for a model of token labels, tags (each word's, joined by spaces) and spans "
        "(its entities: text, type, start, end)."
    )


class KnownVersion(Record):
    """A version that an alias points at, found by the fingerprint of what it was trained on."""

    alias: str
    version: str
    depth: str | None = None


class Registration(Record):
    """What registering a chosen candidate decided."""

    model: ModelVersionRef
    promoted: bool
    promotion: str = Field(description="Why it was promoted or not, in a phrase.")
    champion_version: str
    challenger_test_metrics: dict[str, float]
    champion_test_metrics: dict[str, float] | None = None
    comparison: Interval | None = Field(None, description="Challenger minus champion, with its interval.")
    promotion_margin: float | None = Field(
        None, description="The promotion margin it was judged by (sweep.promotion_margin); none without a champion."
    )
    promotion_rows: int | None = Field(None, description="Test rows promotion judged on.")
    rows_apart: list[RowsApart] = Field([], description="Test rows it did not judge on, with both models' scores.")
