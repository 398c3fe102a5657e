"""`cross_split_duplicates`: the same normalised text in two or more splits (leakage)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from depthfinder.expectations.audit.checks.base import KEY_COLUMN, CheckPlan, OnePerTextCheck, texts_of, to_jsonable

MAX_MATCHES = 20
# Which copy of a leaking text is the example: the one the model is evaluated on.
EVALUATION_FIRST = {"test": 0, "val": 1, "train": 2}


class CrossSplitDuplicatesCheck(OnePerTextCheck):
    """Rows whose text, after normalising case, whitespace and punctuation, is also in another split.

    Texts without a letter or digit are left to `empty_text`: "" in train and "..." in
    test are not a leak worth blocking on. In a pairs table the text is the whole pair (both
    sides, in order); a pair whose swap is in another split is `swapped_pairs`' business.
    """

    name = "cross_split_duplicates"
    category = "leakage"
    severity = "error"
    description = "the same normalised text in two or more splits: the model is evaluated on training rows"
    evidence = ("matches",)
    column = "split"
    derived = "splits_of_text"
    why = "a text seen in training must not be evaluated again"
    groups_key = "leaking_texts"
    requires = ("text", "split")

    def examples(self, table: pd.DataFrame, plan: CheckPlan, failing: list[Any], limit: int) -> list[dict[str, Any]]:
        """One example per leaking text: its evaluation-side row, matched to its copies in other splits."""
        rows = table.loc[failing]
        examples = []
        for _, group in rows.groupby(KEY_COLUMN, sort=False):
            leaked = group.iloc[int(group["split"].map(EVALUATION_FIRST).fillna(len(EVALUATION_FIRST)).argmin())]
            others = group[group["split"] != leaked["split"]]
            examples.append(to_jsonable({
                "row": leaked["row"], **texts_of(leaked), "split": leaked["split"],
                "matches": others["row"].tolist()[:MAX_MATCHES],
                "match_splits": sorted(set(others["split"])),
            }))
            if len(examples) >= limit:
                break
        return examples
