"""What every audit check is: a name, a category, a severity and a GX plan with evidence."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import pandas as pd

from depthfinder.expectations.audit.config import AuditConfig
from depthfinder.expectations.audit.report import Category, Severity, short
from depthfinder.expectations.audit.token_labels import TAGS_COLUMN, TOKENS_COLUMN, tagged_text

if TYPE_CHECKING:
    from great_expectations.expectations import Expectation

# The audit adds this column to its copy of the table: the normalised-text key of each row.
KEY_COLUMN = "_text_key"
# ... and whether the text has a usable token (a letter or digit); rows without one are
# empty_text's business and left out of the duplicate checks.
USABLE_COLUMN = "_has_usable_token"
# ... and the normalised text itself (what the key hashes), for checks that look inside texts.
NORMALIZED_COLUMN = "_normalized_text"
# A text-pairs table's second text, beside `text` (the first); see expectations/audit/pairs.py.
PAIR_COLUMN = "pair"
# Our severity -> the GX expectation severity it is validated with.
GX_SEVERITY: dict[Severity, str] = {"error": "critical", "warning": "warning"}


@dataclass
class CheckPlan:
    """What a check asks Great Expectations to validate, and what it measured on the way.

    `frame` is the derived table the expectations run over. For a row-level check it
    has the audit table's index, so GX's unexpected indices are the offending rows.
    """

    frame: pd.DataFrame
    expectations: list[Expectation]
    observed: dict[str, Any] = field(default_factory=dict)
    # The table rows the check suspects (row, text, label, likely_label where known), when it names them itself;
    # None: a row-level check's failing rows are its suspects.
    suspects: list[dict[str, Any]] | None = None


class Check:
    """Base class of a check; subclasses set the class attributes and implement `plan`.

    The audit validates `plan(...)` with GX, takes the unexpected indices of the failed
    expectations as the failing rows, and asks `examples(...)` for evidence about a few.
    """

    name: ClassVar[str]
    category: ClassVar[Category]
    severity: ClassVar[Severity] = "error"
    description: ClassVar[str]
    # Columns of the audit table the check needs; without them it cannot run.
    requires: ClassVar[tuple[str, ...]] = ()
    # False for checks whose derived frame has one row per class, not per table row.
    counts_rows: ClassVar[bool] = True
    evidence_columns: ClassVar[tuple[str, ...]] = ("row", "text", PAIR_COLUMN, "split", "label")
    # Keys of an example shown after its text, in this order (the check's own evidence).
    evidence: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def headline(cls, observed: dict[str, Any]) -> str:
        """The figure that says most about this check's result; checks with a better one override it."""
        if "rows" in observed:
            return f"{observed['rows']} rows ({100 * observed.get('fraction', 0):.2f} %)"
        scalars = [f"{k}={short(v)}" for k, v in observed.items() if not isinstance(v, (dict, list))]
        return ", ".join(scalars[:4])

    def plan(self, table: pd.DataFrame, config: AuditConfig) -> CheckPlan:
        """Compute the derived frame, the GX expectations over it and observed figures."""
        raise NotImplementedError

    def examples(self, table: pd.DataFrame, plan: CheckPlan, failing: list[Any], limit: int) -> list[dict[str, Any]]:
        """Evidence for the first `limit` failing rows (indices of `plan.frame`)."""
        columns = [column for column in self.evidence_columns if column in table.columns]
        rows = table.loc[failing[:limit], columns]
        return [to_jsonable(record) for record in rows.to_dict(orient="records")]

    def meta(self, why: str, **evidence: Any) -> dict[str, Any]:
        """The `meta` of a GX expectation: which check, why it matters, and evidence."""
        return to_jsonable({"check": self.name, "why": why, **evidence})

    def gx(self, severity: Severity, why: str, **evidence: Any) -> dict[str, Any]:
        """Keyword arguments of a GX expectation: severity, `meta` with the evidence, and
        `notes` that render the same evidence in the Data Docs."""
        meta = self.meta(why, **evidence)
        lines = [f"**{self.name}** ({severity}): {why}."]
        lines += [f"- {key}: {_note_value(value)}" for key, value in meta.items() if key not in ("check", "why")]
        return {"severity": GX_SEVERITY[severity], "meta": meta, "notes": "\n".join(lines)}


def _note_value(value: Any, limit: int = 300) -> str:
    """A meta value as short inline text for the Data Docs."""
    text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def texts_of(row: pd.Series) -> dict[str, Any]:
    """A row's text as evidence: `text`, and `pair` beside it in a pairs table, `tagged` (each token with its tag) in
    a token table."""
    texts = {"text": row["text"]}
    if PAIR_COLUMN in row.index:
        texts[PAIR_COLUMN] = row[PAIR_COLUMN]
    if TOKENS_COLUMN in row.index and TAGS_COLUMN in row.index:
        texts["tagged"] = tagged_text(row[TOKENS_COLUMN], row[TAGS_COLUMN])
    return texts


def distinct_per_text(table: pd.DataFrame, column: str) -> pd.Series:
    """For each row, how many distinct `column` values its normalised text carries (1 for unusable texts)."""
    usable = table[table[USABLE_COLUMN]]  # texts without a letter or digit: see empty_text
    counts = usable.groupby(KEY_COLUMN, sort=False)[column].transform("nunique")
    return counts.reindex(table.index, fill_value=1)


class OnePerTextCheck(Check):
    """A check that every normalised text carries one value of `column` (one label, one split)."""

    column: ClassVar[str]
    derived: ClassVar[str]  # name of the derived count column GX validates
    why: ClassVar[str]
    groups_key: ClassVar[str]  # what the offending texts are called in the GX meta

    def plan(self, table: pd.DataFrame, config: AuditConfig) -> CheckPlan:
        """One row per table row: how many distinct values of `column` its normalised text carries."""
        import great_expectations.expectations as gxe

        counts = distinct_per_text(table, self.column)
        frame = pd.DataFrame({self.derived: counts.to_numpy()}, index=table.index)
        groups = int(table.loc[counts > 1, KEY_COLUMN].nunique())
        expectation = gxe.ExpectColumnValuesToBeBetween(
            column=self.derived, max_value=1, **self.gx(self.severity, self.why, **{self.groups_key: groups}),
        )
        return CheckPlan(frame=frame, expectations=[expectation], observed={"groups": groups})


def to_jsonable(value: Any) -> Any:
    """Numpy/pandas scalars and containers as plain JSON types (NaN becomes None)."""
    if isinstance(value, dict):
        return {str(key): to_jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(item) for item in value]
    if value is pd.NA or value is pd.NaT:
        return None
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    return value
