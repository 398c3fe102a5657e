"""`empty_text`: empty or whitespace-only texts and texts without a single letter or digit."""

from __future__ import annotations

import pandas as pd

from expectations.checks.base import GX_SEVERITY, USABLE_COLUMN, Check, CheckPlan
from expectations.config import AuditConfig


class EmptyTextCheck(Check):
    """Rows with no usable token: an error above `max_empty_text_fraction` of rows, else a warning.

    Two expectations over the same column carry the two severities: a critical one
    with `mostly = 1 - max_empty_text_fraction` (fails only above the threshold) and a
    warning one with `mostly = 1` (fails on any empty text). The check's reported
    severity is the most severe one that failed.
    """

    name = "empty_text"
    category = "text"
    severity = "error"
    description = "empty or whitespace-only texts, or texts with no letter or digit"
    requires = ("text",)

    def plan(self, table: pd.DataFrame, config: AuditConfig) -> CheckPlan:
        """One row per table row: 1 when the text has a letter or digit, else 0."""
        import great_expectations.expectations as gxe

        usable = table[USABLE_COLUMN].to_numpy().astype("int8")
        frame = pd.DataFrame({"has_usable_token": usable}, index=table.index)
        share = float(1 - usable.mean()) if len(usable) else 0.0
        evidence = {"fraction": round(share, 6), "max_fraction": config.max_empty_text_fraction}
        expectations = [
            gxe.ExpectColumnValuesToBeBetween(
                column="has_usable_token", min_value=1, mostly=1 - config.max_empty_text_fraction,
                severity=GX_SEVERITY["error"],
                meta=self.meta("too many texts without a usable token to train on", **evidence),
            ),
            gxe.ExpectColumnValuesToBeBetween(
                column="has_usable_token", min_value=1, severity=GX_SEVERITY["warning"],
                meta=self.meta("texts without a usable token teach nothing", **evidence),
            ),
        ]
        observed = {"max_fraction": config.max_empty_text_fraction}
        return CheckPlan(frame=frame, expectations=expectations, observed=observed)
