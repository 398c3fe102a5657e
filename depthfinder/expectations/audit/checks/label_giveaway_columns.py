"""`label_giveaway_columns`: a non-text column (id, source, timestamp, file name) or the row order predicts the label.

Each column is read in up to three ways: its values as categories (source = "spam_folder"),
its values with digits masked ("spam_0013.txt" -> "spam_0.txt"), and, when numeric or a
date, its rank cut into ten equal bins (ids or timestamps assigned class by class). For
each reading, a lookup table "value -> majority label" is learnt on four folds of the
rows and scored on the fifth (so a unique id cannot memorise its label), giving
out-of-fold accuracy against the majority baseline. The column's lift is the best
reading's (accuracy - baseline) / (1 - baseline): 0 is no information, 1 is perfect.

A lift of at least `giveaway_min_lift` is an error for a column: the label was probably
derived from it, and the texts of each class differ by where they came from. The row
order (and any numeric column that just follows it, such as an auto-increment id) is a
warning: sorted data is common and harmless once shuffled. It is an error only when the
split follows the row order too (first rows train, last rows test: its lift from the
row position is at least `giveaway_min_lift`) and the label mix of val or test differs
from train's by a total variation distance of at least MAX_LABEL_SHIFT.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

from depthfinder.expectations.audit.checks.base import PAIR_COLUMN, Check, CheckPlan, to_jsonable
from depthfinder.expectations.audit.config import AuditConfig

FOLDS = 5
BINS = 10
MIN_ROWS = 50
NUMERIC_SHARE = 0.95  # share of values that must parse for a numeric or date reading
DATE_PROBE = 200
FOLLOWS_ROW_ORDER = 0.99  # |Spearman correlation| with the row order of an id-like column
MAX_LABEL_SHIFT = 0.2  # total variation distance between train's and an evaluation split's label mix
OWN_COLUMNS = {"text", PAIR_COLUMN, "label", "split", "row", "group"}
ROW_ORDER = "(row order)"
# How each reading of a column reads in a sentence.
READINGS = {"value": "its values", "digits_masked": "its values with digits masked", "rank_bins": "its ranks, binned"}


def out_of_fold_accuracy(values: np.ndarray, labels: np.ndarray, n_classes: int) -> float:
    """Accuracy of 'value -> majority label among the other folds' (unseen value: overall majority).

    Args:
        values: int code per row (category or bin); labels: int class code per row.
        n_classes: number of classes.
    """
    folds = np.arange(len(values)) % FOLDS
    n_values = int(values.max(initial=-1)) + 1
    correct = 0
    for fold in range(FOLDS):
        train, test = folds != fold, folds == fold
        counts = np.bincount(values[train] * n_classes + labels[train], minlength=n_values * n_classes)
        counts = counts.reshape(n_values, n_classes)
        majority = np.bincount(labels[train], minlength=n_classes).argmax()
        predicted = np.where(counts.sum(axis=1) > 0, counts.argmax(axis=1), majority)
        correct += int((predicted[values[test]] == labels[test]).sum())
    return correct / max(len(values), 1)


def lift(accuracy: float, baseline: float) -> float:
    """How much of the gap from the majority baseline to perfect accuracy a reading closes."""
    return (accuracy - baseline) / (1 - baseline) if baseline < 1 else 0.0


def rank_bins(numbers: np.ndarray) -> np.ndarray:
    """Equal-count bins of the rank (ties share a bin); missing values get their own bin."""
    ranks = pd.Series(numbers).rank(method="min").to_numpy()
    bins = np.floor((ranks - 1) / max(len(numbers), 1) * BINS)
    return np.where(np.isnan(bins), BINS, bins).astype(np.int64)


def readings(values: pd.Series) -> dict[str, np.ndarray]:
    """A column's readings as int codes per row: value, digits masked, rank bins (when numeric or a date)."""
    as_text = values.astype("str").where(values.notna(), "<missing>")
    result = {"value": pd.factorize(as_text)[0]}
    masked = as_text.str.replace(r"\d+", "0", regex=True)
    if not masked.equals(as_text):
        result["digits_masked"] = pd.factorize(masked)[0]
    numbers = numeric_values(values)
    if numbers is not None:
        result["rank_bins"] = rank_bins(numbers)
    return result


def numeric_values(values: pd.Series) -> np.ndarray | None:
    """The column as floats (numbers, or dates as seconds) when nearly all values parse; else None."""
    numbers = pd.to_numeric(values, errors="coerce")
    if numbers.notna().mean() >= NUMERIC_SHARE:
        return numbers.to_numpy(dtype=np.float64, na_value=np.nan)
    if pd.api.types.is_datetime64_any_dtype(values.dtype):
        return _seconds(values)
    if not (pd.api.types.is_object_dtype(values.dtype) or pd.api.types.is_string_dtype(values.dtype)):
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "could not infer format": a text column is not a date
        if pd.to_datetime(values.head(DATE_PROBE), errors="coerce", format="mixed").notna().mean() < NUMERIC_SHARE:
            return None  # parsing every value as a date is slow: try a few first
        dates = pd.to_datetime(values, errors="coerce", format="mixed")
    return _seconds(dates) if dates.notna().mean() >= NUMERIC_SHARE else None


def _seconds(dates: pd.Series) -> np.ndarray | None:
    """Datetimes as seconds since the epoch (NaT: NaN); None when they do not share one time zone."""
    try:
        if getattr(dates.dt, "tz", None) is not None:
            dates = dates.dt.tz_convert(None)
        return (dates - pd.Timestamp("1970-01-01")).dt.total_seconds().to_numpy(dtype=np.float64, na_value=np.nan)
    except (AttributeError, TypeError, ValueError):
        return None


def follows_row_order(numbers: np.ndarray | None, rows: np.ndarray) -> bool:
    """True when a numeric column is (almost) a monotone function of the row order, like an auto-increment id."""
    if numbers is None or np.isnan(numbers).any() or len(numbers) < 3 or np.ptp(numbers) == 0:
        return False
    ranks = pd.Series(numbers).rank().to_numpy()
    return abs(float(np.corrcoef(ranks, pd.Series(rows).rank().to_numpy())[0, 1])) >= FOLLOWS_ROW_ORDER


def column_table(table: pd.DataFrame, config: AuditConfig) -> pd.DataFrame:
    """One row per tested column (and the row order): its best reading, accuracy, baseline and lift."""
    ordered = table.sort_values("row", kind="stable")
    labels, _ = pd.factorize(ordered["label"].astype("str"))
    n_classes = int(labels.max(initial=-1)) + 1
    baseline = float(np.bincount(labels).max() / len(labels)) if len(labels) else 1.0
    rows = ordered["row"].to_numpy(dtype=np.float64)
    records = [_best_reading(ROW_ORDER, {"rank_bins": rank_bins(rows)}, labels, n_classes, baseline, "row_order")]
    tested = [c for c in table.columns if c not in OWN_COLUMNS and not str(c).startswith("_")]
    for column in tested:
        if column in config.ignore_columns:
            continue
        values = ordered[column]
        kind = "row_order" if follows_row_order(numeric_values(values), rows) else "column"
        records.append(_best_reading(str(column), readings(values), labels, n_classes, baseline, kind))
    frame = pd.DataFrame.from_records(records)
    frame["column_lift"] = frame["lift"].where(frame["kind"] == "column")
    frame["row_order_lift"] = frame["lift"].where(frame["kind"] == "row_order")
    split_lift = _split_order_lift(ordered, rows)
    frame["split_follows_row_order"] = split_lift
    shift = label_shift(ordered) if split_lift >= config.giveaway_min_lift else 0.0
    frame["label_shift_of_ordered_split"] = np.where(frame["column"] == ROW_ORDER, shift, np.nan)
    return frame


def label_shift(table: pd.DataFrame) -> float:
    """Largest total variation distance between train's label mix and val's or test's."""
    if "split" not in table.columns:
        return 0.0
    shares = pd.crosstab(table["split"].astype("str"), table["label"].astype("str"), normalize="index")
    if "train" not in shares.index:
        return 0.0
    distances = [
        0.5 * float((shares.loc[split] - shares.loc["train"]).abs().sum()) for split in ("val", "test")
        if split in shares.index
    ]
    return round(max(distances, default=0.0), 4)


def _best_reading(
    column: str, codes: dict[str, np.ndarray], labels: np.ndarray, n_classes: int, baseline: float, kind: str
) -> dict[str, Any]:
    """The reading of a column with the highest out-of-fold accuracy."""
    scored = {name: out_of_fold_accuracy(values, labels, n_classes) for name, values in codes.items()}
    reading = max(scored, key=scored.get)
    accuracy = scored[reading]
    return {
        "column": column, "kind": kind, "reading": reading, "accuracy": round(accuracy, 4),
        "baseline": round(baseline, 4), "lift": round(lift(accuracy, baseline), 4),
    }


def _split_order_lift(ordered: pd.DataFrame, rows: np.ndarray) -> float:
    """How well the row position predicts the split (1: the split was made by row order)."""
    if "split" not in ordered.columns:
        return 0.0
    splits, _ = pd.factorize(ordered["split"].astype("str"))
    if splits.max(initial=0) < 1:
        return 0.0
    baseline = float(np.bincount(splits).max() / len(splits))
    accuracy = out_of_fold_accuracy(rank_bins(rows), splits, int(splits.max()) + 1)
    return round(lift(accuracy, baseline), 4)


class LabelGiveawayColumnsCheck(Check):
    """Columns (and the row order) that predict the label on their own; see the module docstring."""

    name = "label_giveaway_columns"
    category = "leakage"
    severity = "error"
    description = "a non-text column (id, source, timestamp, file name) or the row order that predicts the label"

    @classmethod
    def headline(cls, observed: dict[str, Any]) -> str:
        if not observed.get("columns"):
            return super().headline(observed)
        best = max(observed["columns"], key=lambda column: column["lift"])
        column = "the row order" if best["column"] == ROW_ORDER else f"column {best['column']!r}"
        reading = READINGS.get(best["reading"], best["reading"])
        return (f"{column} ({reading}) predicts the label best, closing {max(best['lift'], 0):.0%} of the gap "
                "from the majority class to perfect")
    requires = ("label", "row")
    counts_rows = False

    def plan(self, table: pd.DataFrame, config: AuditConfig) -> CheckPlan:
        """One row per tested column and one for the row order, validated on their lift."""
        import great_expectations.expectations as gxe

        if len(table) < MIN_ROWS:
            frame = pd.DataFrame({"column_lift": pd.Series(dtype="float64")})
            return CheckPlan(frame=frame, expectations=[], observed={"not_tested": f"fewer than {MIN_ROWS} rows"})
        frame = column_table(table, config)
        limit = config.giveaway_min_lift
        shown = to_jsonable(frame[["column", "kind", "reading", "accuracy", "baseline", "lift"]].to_dict("records"))
        expectations = [
            gxe.ExpectColumnValuesToBeBetween(
                column="column_lift", max_value=limit,
                **self.gx("error", "a column that predicts the label alone means the label may come from it",
                          max_lift=limit, columns=shown),
            ),
            gxe.ExpectColumnValuesToBeBetween(
                column="row_order_lift", max_value=limit,
                **self.gx("warning", "the label follows the row order: sorted data, shuffle before any split",
                          max_lift=limit, columns=shown),
            ),
            gxe.ExpectColumnValuesToBeBetween(
                column="label_shift_of_ordered_split", max_value=MAX_LABEL_SHIFT,
                **self.gx("error", "the split follows the row order and gives val/test another label mix than "
                          "train", max_label_shift=MAX_LABEL_SHIFT,
                          split_follows_row_order=float(frame["split_follows_row_order"].iloc[0])),
            ),
        ]
        observed = {
            "columns": shown, "max_lift": limit,
            "split_follows_row_order": float(frame["split_follows_row_order"].iloc[0]),
            "label_shift_of_ordered_split": float(frame["label_shift_of_ordered_split"].iloc[0]),
        }
        return CheckPlan(frame=frame, expectations=expectations, observed=observed)

    def examples(self, table: pd.DataFrame, plan: CheckPlan, failing: list[Any], limit: int) -> list[dict[str, Any]]:
        """The failing columns, with their best reading and how well it predicts the label."""
        rows = plan.frame.loc[failing[:limit], ["column", "kind", "reading", "accuracy", "baseline", "lift"]]
        return [to_jsonable(record) for record in rows.to_dict(orient="records")]
