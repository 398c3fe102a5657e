"""A frozen record with a JSON form: what crosses floors (candidates, decisions, reports, intervals) is one of these,
never a loose dict."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from typing_extensions import Self


class Record(BaseModel):
    """A frozen record with a JSON form."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON types (fields marked `exclude` left out)."""
        return self.model_dump(mode="json")

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> Self:
        """The record back from `to_dict`'s output (or the same keys from a JSON file)."""
        return cls.model_validate(values)
