"""`empty_text`: empty or whitespace-only texts, texts without a letter or digit, and extreme lengths."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from depthfinder.expectations.audit.checks.base import PAIR_COLUMN, USABLE_COLUMN, Check, CheckPlan, to_jsonable
from depthfinder.expectations.audit.config import AuditConfig

# A text is a length outlier only when it is also longer than this: a dataset of
# one-word texts must not flag every sentence.
MIN_OUTLIER_CHARS = 500


class EmptyTextCheck(Check):
    """Rows with no usable token (error above `max_empty_text_fraction` of rows, else a
    warning), and texts of extreme length (warning).

    Two expectations over the same column carry the two severities of empty texts: a
    critical one with `mostly = 1 - max_empty_text_fraction` (fails only above the
    threshold) and a warning one with `mostly = 1` (fails on any empty text). A third,
    warning-level one flags texts longer than `max_length_ratio` times the median length
    (and MIN_OUTLIER_CHARS): they are truncated in training and dominate padding. The
    check's reported severity is the most severe one that failed.

    A pairs table's row is the pair: empty when neither side has a usable token (a missing
    second text is "", and a one-text row is still an example), long by both sides' length
    together (the cross-encoder reads them as one sequence).
    """

    name = "empty_text"
    category = "text"
    severity = "error"
    description = "empty or whitespace-only texts, texts with no letter or digit, and extreme length outliers"
    evidence = ("reason",)
    requires = ("text",)

    def plan(self, table: pd.DataFrame, config: AuditConfig) -> CheckPlan:
        """One row per table row: 1 when the text has a letter or digit, and 1 when it is extremely long."""
        import great_expectations.expectations as gxe

        usable = table[USABLE_COLUMN].to_numpy().astype("int8")
        lengths = _lengths(table)
        median = float(np.median(lengths[usable == 1])) if usable.any() else 0.0
        limit = max(config.max_length_ratio * median, MIN_OUTLIER_CHARS)
        long_text = (lengths > limit).astype("int8")
        frame = pd.DataFrame({"has_usable_token": usable, "long_text": long_text}, index=table.index)
        share = float(1 - usable.mean()) if len(usable) else 0.0
        evidence = {"fraction": round(share, 6), "max_fraction": config.max_empty_text_fraction}
        expectations = [
            gxe.ExpectColumnValuesToBeBetween(
                column="has_usable_token", min_value=1, mostly=1 - config.max_empty_text_fraction,
                **self.gx("error", "too many texts without a usable token to train on", **evidence),
            ),
            gxe.ExpectColumnValuesToBeBetween(
                column="has_usable_token", min_value=1,
                **self.gx("warning", "texts without a usable token teach nothing", **evidence),
            ),
            gxe.ExpectColumnValuesToBeBetween(
                column="long_text", max_value=0,
                **self.gx("warning", "extremely long texts are truncated and dominate padding",
                          median_chars=median, limit_chars=limit, long_texts=int(long_text.sum())),
            ),
        ]
        observed = {
            "max_fraction": config.max_empty_text_fraction,
            "empty_rows": int(len(usable) - usable.sum()),
            "long_rows": int(long_text.sum()),
            "median_chars": median,
            "max_chars": int(lengths.max()) if len(lengths) else 0,
            "long_text_limit_chars": round(limit, 1),
        }
        return CheckPlan(frame=frame, expectations=expectations, observed=observed)

    def examples(self, table: pd.DataFrame, plan: CheckPlan, failing: list[Any], limit: int) -> list[dict[str, Any]]:
        """Failing rows, empty ones first, each with why it failed (long texts shortened)."""
        frame = plan.frame.loc[failing]
        ordered = frame.index[np.argsort(frame["has_usable_token"].to_numpy(), kind="stable")][:limit]
        examples = []
        for index in ordered:
            row = table.loc[index]
            sides = {
                column: row[column] if isinstance(row[column], str) else ""
                for column in ("text", PAIR_COLUMN) if column in table.columns
            }
            example = {"row": row["row"], **{column: _shortened(text) for column, text in sides.items()}}
            example["chars"] = sum(len(text) for text in sides.values())
            for column in ("split", "label"):
                if column in table.columns:
                    example[column] = row[column]
            empty = not plan.frame.at[index, "has_usable_token"]
            example["reason"] = "no letter or digit" if empty else "extremely long"
            examples.append(to_jsonable(example))
        return examples


def _lengths(table: pd.DataFrame) -> np.ndarray:
    """Characters per row: its text's, or both sides' of a pair."""
    lengths = table["text"].str.len().fillna(0).to_numpy(dtype=np.int64)
    if PAIR_COLUMN in table.columns:
        lengths = lengths + table[PAIR_COLUMN].str.len().fillna(0).to_numpy(dtype=np.int64)
    return lengths


def _shortened(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
