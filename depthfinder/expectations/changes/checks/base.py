"""What a change check is: an audit check over the comparison table that also says whether it retrains."""

from __future__ import annotations

from typing import Any, ClassVar

import pandas as pd

from depthfinder.expectations.audit.checks.base import Check, CheckPlan, to_jsonable
from depthfinder.expectations.changes.compare import Comparison


class ChangeCheck(Check):
    """An audit check (same GX validation, severities, report and Data Docs) of what changed since the champion.

    `plan` gets the comparison table (expectations/changes/compare.py) and the Comparison.
    A failed error-level expectation stops the night; a failed warning retrains when
    `retrains`, and is only reported otherwise.
    """

    severity = "warning"
    retrains: ClassVar[bool] = True

    @classmethod
    def headline(cls, observed: dict[str, Any]) -> str:
        if "not_judged" in observed:
            return f"not judged: {observed['not_judged']}"
        return super().headline(observed)

    def plan(self, table: pd.DataFrame, comparison: Comparison) -> CheckPlan:  # type: ignore[override]
        raise NotImplementedError

    @staticmethod
    def not_judged(why: str) -> CheckPlan:
        """A plan with nothing to validate (it passes), and why the measure was not taken."""
        return CheckPlan(frame=pd.DataFrame({"judged": [0]}), expectations=[], observed={"not_judged": why})

    @staticmethod
    def figures(values: dict[str, float]) -> pd.DataFrame:
        """A one-row derived frame of figures for GX to validate."""
        return pd.DataFrame({name: [value] for name, value in values.items()})


def frame_examples(plan: CheckPlan, failing: list[Any], limit: int) -> list[dict[str, Any]]:
    """The first `limit` failing rows of the derived frame itself (classes, not table rows)."""
    return [to_jsonable(record) for record in plan.frame.loc[failing[:limit]].to_dict(orient="records")]


def share(part: int, whole: int) -> float:
    """`part / whole`, 0 for an empty whole, rounded for the report."""
    return round(part / whole, 6) if whole else 0.0
