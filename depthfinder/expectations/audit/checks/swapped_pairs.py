"""`swapped_pairs`: a pair (A, B) whose swap (B, A) is in the table too: across splits a leak, within one a conflict."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from depthfinder.expectations.audit.checks.base import KEY_COLUMN, Check, CheckPlan, texts_of, to_jsonable
from depthfinder.expectations.audit.config import AuditConfig
from depthfinder.expectations.audit.pairs import KEY_SEPARATOR, PAIR_COLUMN, SIDE_KEY, SIDE_USABLE

MAX_MATCHES = 20
# Which copy of a swapped pair is the example: the one the model is evaluated on.
EVALUATION_FIRST = {"test": 0, "val": 1, "train": 2}


def swaps(table: pd.DataFrame) -> pd.DataFrame:
    """Every (row, swap) of rows whose pairs are each other's swap: (A, B) and (B, A), both sides usable and A != B
    after normalisation; with both rows' split and label (`_swap` for the swap's)."""
    first, second = table[SIDE_KEY["text"]], table[SIDE_KEY[PAIR_COLUMN]]
    candidate = (table[SIDE_USABLE["text"]] & table[SIDE_USABLE[PAIR_COLUMN]] & (first != second)).to_numpy(dtype=bool)
    rows = pd.DataFrame({
        "index": table.index, "key": table[KEY_COLUMN], "swapped": second.str.cat(first, sep=KEY_SEPARATOR),
        "split": table["split"].astype("str"), "label": table["label"].astype("str"),
    })[candidate]
    return rows.merge(rows, left_on="swapped", right_on="key", suffixes=("", "_swap"))


class SwappedPairsCheck(Check):
    """Rows whose pair (A, B) is also in the table as (B, A).

    A cross-encoder reads (B, A) as nearly the same example as (A, B): a swap in another
    split is a leak (error), whatever the labels. Within one split a swap with the same
    label is harmless (augmentation of a symmetric task); with another label it is a
    warning: wrong for a symmetric label (paraphrase, duplicate), possible for NLI (A entails
    B without B entailing A). A pair whose sides are equal is nobody's swap. Sides are
    compared normalised, as `cross_split_duplicates` compares texts.
    """

    name = "swapped_pairs"
    category = "leakage"
    severity = "error"
    description = "a pair (A, B) whose swap (B, A) is in another split (error) or in its split with another label"
    evidence = ("swaps", "swap_splits", "swap_labels")
    requires = ("text", PAIR_COLUMN, "split", "label")

    def plan(self, table: pd.DataFrame, config: AuditConfig) -> CheckPlan:
        """One row per table row: whether its swap is in another split, and in its split with another label."""
        import great_expectations.expectations as gxe

        self._swaps = swaps(table)
        across = self._swaps[self._swaps["split"] != self._swaps["split_swap"]]
        conflicting = self._swaps[
            (self._swaps["split"] == self._swaps["split_swap"]) & (self._swaps["label"] != self._swaps["label_swap"])
        ]
        frame = pd.DataFrame({
            "swap_in_other_split": table.index.isin(across["index"]).astype("int8"),
            "swap_with_other_label": table.index.isin(conflicting["index"]).astype("int8"),
        }, index=table.index)
        observed = {
            "rows_with_a_swap": int(self._swaps["index"].nunique()),
            "swap_in_other_split": int(across["index"].nunique()),
            "swap_with_other_label": int(conflicting["index"].nunique()),
        }
        expectations = [
            gxe.ExpectColumnValuesToBeBetween(
                column="swap_in_other_split", max_value=0,
                **self.gx("error", "a pair and its swap are one example: the model is evaluated on a training pair",
                          **observed),
            ),
            gxe.ExpectColumnValuesToBeBetween(
                column="swap_with_other_label", max_value=0,
                **self.gx("warning", "a pair and its swap with two labels: wrong unless the label has a direction",
                          **observed),
            ),
        ]
        return CheckPlan(frame=frame, expectations=expectations, observed=observed)

    def examples(self, table: pd.DataFrame, plan: CheckPlan, failing: list[Any], limit: int) -> list[dict[str, Any]]:
        """One example per swapped pair, its evaluation-side row first, with its swaps' rows, splits and labels."""
        rank = table.loc[failing, "split"].map(EVALUATION_FIRST).fillna(len(EVALUATION_FIRST)).to_numpy()
        examples, seen = [], set()
        for index in [failing[i] for i in np.argsort(rank, kind="stable")]:
            row = table.loc[index]
            if row[KEY_COLUMN] in seen:
                continue
            mine = self._swaps[self._swaps["index"] == index]
            seen.update([row[KEY_COLUMN], *mine["key_swap"]])
            examples.append(to_jsonable({
                "row": row["row"], **texts_of(row), "split": row["split"], "label": row["label"],
                "swaps": table.loc[mine["index_swap"], "row"].tolist()[:MAX_MATCHES],
                "swap_splits": sorted(set(mine["split_swap"])), "swap_labels": sorted(set(mine["label_swap"])),
            }))
            if len(examples) >= limit:
                break
        return examples
