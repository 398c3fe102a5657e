"""`conflicting_labels`: the same normalised text with two or more different labels (noise)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from depthfinder.expectations.audit.checks.base import KEY_COLUMN, CheckPlan, OnePerTextCheck, texts_of, to_jsonable

MAX_MATCHES = 20


class ConflictingLabelsCheck(OnePerTextCheck):
    """Rows whose normalised text also appears with another label: one of them is wrong.

    Texts without a letter or digit are left to `empty_text` (they carry no label signal). In a
    pairs table the text is the whole pair, in order: (A, B) and (B, A) may rightly differ (A
    entails B, B does not entail A); `swapped_pairs` reports such swaps within a split.
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
            example = {"row": first["row"], **texts_of(first), "label": first["label"]}
            if "split" in group.columns:
                example["split"] = first["split"]
            example["matches"] = others["row"].tolist()[:MAX_MATCHES]
            example["match_labels"] = others["label"].tolist()[:MAX_MATCHES]
            examples.append(to_jsonable(example))
            if len(examples) >= limit:
                break
        return examples
