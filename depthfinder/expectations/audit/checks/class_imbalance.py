"""`class_imbalance`: classes too small to learn or to evaluate, and skewed class shares."""

from __future__ import annotations

from typing import Any

import pandas as pd

from depthfinder.expectations.audit.checks.base import Check, CheckPlan, to_jsonable
from depthfinder.expectations.audit.config import AuditConfig


class ClassImbalanceCheck(Check):
    """Per class: rows, share, rows in val and test. Validated over one row per class.

    Errors (cannot learn or cannot evaluate): fewer than `min_class_rows` rows, or no
    row in val or in test. Warnings (learnable, but reweighting helps): majority/this
    class above `max_imbalance_ratio`, or a share below 0.1/K for K classes.
    """

    name = "class_imbalance"
    category = "imbalance"
    severity = "error"
    description = "classes too small to learn or evaluate (error) or far rarer than the majority (warning)"

    @classmethod
    def headline(cls, observed: dict[str, Any]) -> str:
        if observed.get("ratio") is None:
            return super().headline(observed)
        return f"majority/minority {observed['ratio']:.1f}, minority share {100 * observed['minority_share']:.1f} %"
    requires = ("label", "split")
    counts_rows = False

    def plan(self, table: pd.DataFrame, config: AuditConfig) -> CheckPlan:
        """One row per class: rows, share, train/val/test rows and the majority's ratio to it."""
        import great_expectations.expectations as gxe

        frame = _class_table(table)
        n_classes = len(frame)
        min_share = 0.1 / n_classes if n_classes else 0.0
        expectations = [
            gxe.ExpectColumnValuesToBeBetween(
                column="rows", min_value=config.min_class_rows,
                **self.gx("error", "a class needs enough rows to be learnt", min_class_rows=config.min_class_rows),
            ),
            gxe.ExpectColumnValuesToBeBetween(
                column="val_rows", min_value=1,
                **self.gx("error", "a class with no validation row cannot steer model selection"),
            ),
            gxe.ExpectColumnValuesToBeBetween(
                column="test_rows", min_value=1, **self.gx("error", "a class with no test row cannot be evaluated"),
            ),
            gxe.ExpectColumnValuesToBeBetween(
                column="majority_ratio", max_value=config.max_imbalance_ratio,
                **self.gx("warning", "the majority class outnumbers this one", max_ratio=config.max_imbalance_ratio),
            ),
            gxe.ExpectColumnValuesToBeBetween(
                column="share", min_value=min_share,
                **self.gx("warning", "this class is a small share of the data (below 0.1/K for K classes)",
                          min_share=min_share),
            ),
        ]
        counts = frame.set_index("label")
        too_small = (
            (counts["rows"] < config.min_class_rows) | (counts["val_rows"] < 1) | (counts["test_rows"] < 1)
        )
        rare = (counts["majority_ratio"] > config.max_imbalance_ratio) | (counts["share"] < min_share)
        observed = {
            "classes": n_classes,
            "ratio": round(float(frame["majority_ratio"].max()), 4) if n_classes else None,
            "minority_share": round(float(frame["share"].min()), 6) if n_classes else None,
            "min_share": round(min_share, 6),
            "too_small_to_evaluate": counts.index[too_small].tolist(),
            "imbalanced": counts.index[rare & ~too_small].tolist(),
            "counts": counts["rows"].to_dict(),
            "val_counts": counts["val_rows"].to_dict(),
            "test_counts": counts["test_rows"].to_dict(),
        }
        return CheckPlan(frame=frame, expectations=expectations, observed=to_jsonable(observed))

    def examples(self, table: pd.DataFrame, plan: CheckPlan, failing: list[Any], limit: int) -> list[dict[str, Any]]:
        """The failing classes, with their counts per split."""
        rows = plan.frame.loc[failing[:limit]]
        return [to_jsonable(record) for record in rows.to_dict(orient="records")]


def _class_table(table: pd.DataFrame) -> pd.DataFrame:
    """One row per label (most frequent first): rows, share, rows per split, majority ratio."""
    labels = table["label"].dropna().astype("str")
    per_split = pd.crosstab(labels, table.loc[labels.index, "split"].astype("str"))
    frame = pd.DataFrame({"rows": labels.value_counts()})
    for split in ("train", "val", "test"):
        column = per_split[split] if split in per_split.columns else 0
        frame[f"{split}_rows"] = pd.Series(column, index=per_split.index).reindex(frame.index, fill_value=0)
    frame["share"] = frame["rows"] / max(len(table), 1)
    frame["majority_ratio"] = frame["rows"].max() / frame["rows"]
    return frame.rename_axis("label").reset_index()
