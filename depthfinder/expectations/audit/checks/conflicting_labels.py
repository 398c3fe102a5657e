"""`conflicting_labels`: the same normalised text with two or more different labels (noise)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from depthfinder.expectations.audit.checks.base import KEY_COLUMN, CheckPlan, OnePerTextCheck, to_jsonable

MAX_MATCHES = 20


class ConflictingLabelsCheck(OnePerTextCheck):
    """Rows whose normalised text also appears with another label: one of them is wrong.

    Texts without a letter or digit are left to `empty_text` (they carry no label signal).
    """

    name = "conflicting_labels"
    category = "noise"
    severity = "error"
    description = "the same normalised text with different labels: at least one label is wrong"
    evidence = ("matches",)
    column = "label"
    derived = "labels_of_text"
    why = "a text cannot have two true labels"
    groups_key = "conflicting_texts"
    requires = ("text", "label")

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
