"""`cross_split_duplicates`: the same normalised text in two or more splits (leakage)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from expectations.checks.base import GX_SEVERITY, KEY_COLUMN, USABLE_COLUMN, Check, CheckPlan, to_jsonable
from expectations.config import AuditConfig

MAX_MATCHES = 20
# Which copy of a leaking text is the example: the one the model is evaluated on.
EVALUATION_FIRST = {"test": 0, "val": 1, "train": 2}


class CrossSplitDuplicatesCheck(Check):
    """Rows whose text, after normalising case, whitespace and punctuation, is also in another split.

    Texts without a letter or digit are left to `empty_text`: "" in train and "..." in
    test are not a leak worth blocking on.
    """

    name = "cross_split_duplicates"
    category = "leakage"
    severity = "error"
    description = "the same normalised text in two or more splits: the model is evaluated on training rows"
    requires = ("text", "split")

    def plan(self, table: pd.DataFrame, config: AuditConfig) -> CheckPlan:
        """One row per table row: how many splits its normalised text appears in."""
        import great_expectations.expectations as gxe

        usable = table[table[USABLE_COLUMN]]  # texts without a letter or digit: see empty_text
        splits_of_text = (
            usable.groupby(KEY_COLUMN, sort=False)["split"].transform("nunique").reindex(table.index, fill_value=1)
        )
        frame = pd.DataFrame({"splits_of_text": splits_of_text.to_numpy()}, index=table.index)
        groups = int(table.loc[splits_of_text > 1, KEY_COLUMN].nunique())
        expectation = gxe.ExpectColumnValuesToBeBetween(
            column="splits_of_text", max_value=1, severity=GX_SEVERITY[self.severity],
            meta=self.meta("a text seen in training must not be evaluated again", leaking_texts=groups),
        )
        return CheckPlan(frame=frame, expectations=[expectation], observed={"groups": groups})

    def examples(self, table: pd.DataFrame, plan: CheckPlan, failing: list[Any], limit: int) -> list[dict[str, Any]]:
        """One example per leaking text: its evaluation-side row, matched to its copies in other splits."""
        rows = table.loc[failing]
        examples = []
        for _, group in rows.groupby(KEY_COLUMN, sort=False):
            leaked = group.iloc[int(group["split"].map(EVALUATION_FIRST).fillna(len(EVALUATION_FIRST)).argmin())]
            others = group[group["split"] != leaked["split"]]
            examples.append(to_jsonable({
                "row": leaked["row"], "text": leaked["text"], "split": leaked["split"],
                "matches": others["row"].tolist()[:MAX_MATCHES],
                "match_splits": sorted(set(others["split"])),
            }))
            if len(examples) >= limit:
                break
        return examples
