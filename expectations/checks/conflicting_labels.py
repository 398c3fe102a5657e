"""`conflicting_labels`: the same normalised text with two or more different labels (noise)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from expectations.checks.base import GX_SEVERITY, KEY_COLUMN, USABLE_COLUMN, Check, CheckPlan, to_jsonable
from expectations.config import AuditConfig

MAX_MATCHES = 20


class ConflictingLabelsCheck(Check):
    """Rows whose normalised text also appears with another label: one of them is wrong.

    Texts without a letter or digit are left to `empty_text` (they carry no label signal).
    """

    name = "conflicting_labels"
    category = "noise"
    severity = "error"
    description = "the same normalised text with different labels: at least one label is wrong"
    requires = ("text", "label")

    def plan(self, table: pd.DataFrame, config: AuditConfig) -> CheckPlan:
        """One row per table row: how many distinct labels its normalised text carries."""
        import great_expectations.expectations as gxe

        usable = table[table[USABLE_COLUMN]]  # texts without a letter or digit: see empty_text
        labels_of_text = (
            usable.groupby(KEY_COLUMN, sort=False)["label"].transform("nunique").reindex(table.index, fill_value=1)
        )
        frame = pd.DataFrame({"labels_of_text": labels_of_text.to_numpy()}, index=table.index)
        groups = int(table.loc[labels_of_text > 1, KEY_COLUMN].nunique())
        expectation = gxe.ExpectColumnValuesToBeBetween(
            column="labels_of_text", max_value=1, severity=GX_SEVERITY[self.severity],
            meta=self.meta("a text cannot have two true labels", conflicting_texts=groups),
        )
        return CheckPlan(frame=frame, expectations=[expectation], observed={"groups": groups})

    def examples(self, table: pd.DataFrame, plan: CheckPlan, failing: list[Any], limit: int) -> list[dict[str, Any]]:
        """One example per conflicting text, with the rows that carry another label and those labels."""
        rows = table.loc[failing]
        examples = []
        for _, group in rows.groupby(KEY_COLUMN, sort=False):
            first = group.iloc[0]
            others = group.loc[group["label"] != first["label"]]
            example = {"row": first["row"], "text": first["text"], "label": first["label"]}
            if "split" in group.columns:
                example["split"] = first["split"]
            example["matches"] = others["row"].tolist()[:MAX_MATCHES]
            example["match_labels"] = others["label"].tolist()[:MAX_MATCHES]
            examples.append(to_jsonable(example))
            if len(examples) >= limit:
                break
        return examples
