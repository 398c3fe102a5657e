"""`schema`: the text, label and split columns exist and hold usable values (and a token table's tokens and tags)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from depthfinder.expectations.audit.checks.base import PAIR_COLUMN, Check, CheckPlan
from depthfinder.expectations.audit.config import AuditConfig
from depthfinder.expectations.audit.token_labels import is_token_table, row_problems
from depthfinder.expectations.table.labels import normalize_labels
from depthfinder.expectations.table.load import SPLITS

MISSING = "<missing>"
COLUMNS = ("text", "label", "split")
TOKENS_AND_TAGS, READABLE = "tokens_and_tags", "readable"


class SchemaCheck(Check):
    """Missing columns, texts that are not strings, null/empty labels, unknown split names.

    The derived frame keeps the table's column names but holds what is validated: the
    Python type of each text (a null text is left to `empty_text`), the label with
    blanks (nothing visible: white space, invisible characters) as null, and the split
    with nulls as '<missing>'. All are categoricals, which GX fingerprints far faster
    than a column of texts. A pairs table's second text (`pair`) must be a string too. A token table's
    sentence needs tokens and tags that are lists of strings of one length (at least one token), each tag O or
    B-/I-/E-/S-<TYPE>: the derived `tokens_and_tags` is "readable" or why not (token_labels.row_problems).
    """

    name = "schema"
    category = "schema"
    severity = "error"
    description = "text/label/split columns exist; texts are strings; labels are set; splits are train/val/test"
    evidence = ("problem",)

    def plan(self, table: pd.DataFrame, config: AuditConfig) -> CheckPlan:
        """One row per table row with the type of the text, the label and the split."""
        import great_expectations.expectations as gxe

        expectations = [
            gxe.ExpectColumnToExist(column=column, **self.gx("error", f"a {column!r} column is needed"))
            for column in COLUMNS
        ]
        frame = pd.DataFrame(index=table.index)
        if "text" in table.columns:
            frame["text"] = _type_names(table["text"])
            expectations.append(gxe.ExpectColumnValuesToBeInSet(
                column="text", value_set=["str"], **self.gx("error", "a text must be a string"),
            ))
        if PAIR_COLUMN in table.columns:
            frame[PAIR_COLUMN] = _type_names(table[PAIR_COLUMN])
            expectations.append(gxe.ExpectColumnValuesToBeInSet(
                column=PAIR_COLUMN, value_set=["str"], **self.gx("error", "a pair's second text must be a string"),
            ))
        if "label" in table.columns:
            labels = table["label"].astype("category")
            frame["label"] = labels.mask(normalize_labels(table["label"]).eq("").to_numpy())
            expectations.append(gxe.ExpectColumnValuesToNotBeNull(
                column="label", **self.gx("error", "every row needs a label"),
            ))
        if "split" in table.columns:
            frame["split"] = table["split"].astype("str").fillna(MISSING).astype("category")
            expectations.append(gxe.ExpectColumnValuesToBeInSet(
                column="split", value_set=list(SPLITS), **self.gx("error", "a split is train, val or test"),
            ))
        if is_token_table(table):
            frame[TOKENS_AND_TAGS] = row_problems(table).replace("", READABLE).astype("category")
            expectations.append(gxe.ExpectColumnValuesToBeInSet(
                column=TOKENS_AND_TAGS, value_set=[READABLE],
                **self.gx("error", "a sentence's tokens and tags are lists of strings of one length, each tag O or "
                          "B-/I-/E-/S-<TYPE>"),
            ))
        missing = [column for column in COLUMNS if column not in table.columns]
        return CheckPlan(frame=frame, expectations=expectations, observed={"missing_columns": missing})

    def examples(self, table: pd.DataFrame, plan: CheckPlan, failing: list[Any], limit: int) -> list[dict[str, Any]]:
        """The first failing rows; in a token table, with what is wrong with their tokens and tags."""
        examples = super().examples(table, plan, failing, limit)
        if TOKENS_AND_TAGS in plan.frame.columns:
            for example, index in zip(examples, failing, strict=False):
                problem = plan.frame.at[index, TOKENS_AND_TAGS]
                example["problem"] = None if problem == READABLE else problem
        return examples


def _type_names(texts: pd.Series) -> pd.Series:
    """The Python type name of each non-null value, as a categorical (null stays null)."""
    if pd.api.types.is_string_dtype(texts.dtype) and not pd.api.types.is_object_dtype(texts.dtype):
        names = pd.Series("str", index=texts.index).where(texts.notna())
    else:
        names = texts.map(lambda value: type(value).__name__).where(texts.notna())
    return names.astype("category")
