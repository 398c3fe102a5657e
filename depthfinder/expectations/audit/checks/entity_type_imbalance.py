"""`entity_type_imbalance`: entity types too rare in train to learn, and skewed type shares (imbalance).

A token table's classes are its entity types, counted in mentions (spans, read as token_labels reads them), not
in sentences: a sentence's whole tag string is nearly unique, so `class_imbalance` says nothing there.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from depthfinder.expectations.audit.checks.base import Check, CheckPlan, to_jsonable
from depthfinder.expectations.audit.config import AuditConfig
from depthfinder.expectations.audit.token_labels import TAGS_COLUMN, TOKENS_COLUMN, mention_records

# Train mentions an entity type needs to be learnt; fewer (none: a type only val/test hold) blocks training.
MIN_TRAIN_MENTIONS = 10
MAX_ROWS = 10
SPLITS = ("train", "val", "test")


def type_table(records: pd.DataFrame) -> pd.DataFrame:
    """One row per entity type (most mentions first): mentions in all and per split, share, majority ratio."""
    per_split = pd.crosstab(records["type"], records["split"]) if len(records) else pd.DataFrame()
    frame = pd.DataFrame({"mentions": records["type"].value_counts()})
    for split in SPLITS:
        column = per_split[split] if split in per_split.columns else 0
        frame[f"{split}_mentions"] = pd.Series(column, index=per_split.index).reindex(frame.index, fill_value=0)
    frame["share"] = frame["mentions"] / max(len(records), 1)
    frame["majority_ratio"] = frame["mentions"].max() / frame["mentions"]
    return frame.rename_axis("type").reset_index()


class EntityTypeImbalanceCheck(Check):
    """Per entity type: mentions per split and the majority's ratio to it. Validated over one row per type.

    Errors: no entity mention in the table at all; a type with fewer than MIN_TRAIN_MENTIONS train mentions (none:
    it is scored on val/test but cannot be learnt). Warnings: majority/this type above `max_imbalance_ratio`;
    a type with no val or no test mention (it cannot steer selection, or be scored).
    """

    name = "entity_type_imbalance"
    category = "imbalance"
    severity = "warning"
    description = "entity types too rare in train to learn (error) or far rarer than the commonest (warning)"
    evidence = ("mentions", "train_mentions", "val_mentions", "test_mentions", "majority_ratio", "rows")
    requires = (TOKENS_COLUMN, TAGS_COLUMN, "split")
    counts_rows = False

    @classmethod
    def headline(cls, observed: dict[str, Any]) -> str:
        if "types" not in observed:
            return super().headline(observed)
        if not observed["types"]:
            return "no entity mention"
        return (f"{observed['types']} types, majority/minority {observed['ratio']:.1f} ({observed['majority']} "
                f"{observed['counts'][observed['majority']]} / {observed['minority']} "
                f"{observed['counts'][observed['minority']]} mentions)")

    def plan(self, table: pd.DataFrame, config: AuditConfig) -> CheckPlan:
        """One row per entity type: mentions, train/val/test mentions, share and the majority's ratio to it."""
        import great_expectations.expectations as gxe

        self._records = mention_records(table)
        frame = type_table(self._records)
        expectations = [
            gxe.ExpectTableRowCountToBeBetween(
                min_value=1, **self.gx("error", "a token table with no entity mention has nothing to learn"),
            ),
            gxe.ExpectColumnValuesToBeBetween(
                column="train_mentions", min_value=1,
                **self.gx("error", "a type only val/test hold is scored but cannot be learnt"),
            ),
            gxe.ExpectColumnValuesToBeBetween(
                column="train_mentions", min_value=MIN_TRAIN_MENTIONS,
                **self.gx("error", "a type needs enough train mentions to be learnt",
                          min_train_mentions=MIN_TRAIN_MENTIONS),
            ),
            gxe.ExpectColumnValuesToBeBetween(
                column="majority_ratio", max_value=config.max_imbalance_ratio,
                **self.gx("warning", "the commonest type outnumbers this one", max_ratio=config.max_imbalance_ratio),
            ),
            gxe.ExpectColumnValuesToBeBetween(
                column="val_mentions", min_value=1, **self.gx("warning", "a type with no val mention cannot steer "
                                                              "model selection"),
            ),
            gxe.ExpectColumnValuesToBeBetween(
                column="test_mentions", min_value=1, **self.gx("warning", "a type with no test mention is not scored"),
            ),
        ]
        counts = frame.set_index("type")
        observed = {
            "types": len(frame), "min_train_mentions": MIN_TRAIN_MENTIONS,
            "ratio": round(float(frame["majority_ratio"].max()), 4) if len(frame) else None,
            "majority": frame["type"].iloc[0] if len(frame) else None,
            "minority": frame["type"].iloc[-1] if len(frame) else None,
            "too_few_in_train": counts.index[counts["train_mentions"] < MIN_TRAIN_MENTIONS].tolist(),
            "counts": counts["mentions"].to_dict(),
            **{f"{split}_counts": counts[f"{split}_mentions"].to_dict() for split in SPLITS},
        }
        return CheckPlan(frame=frame, expectations=expectations, observed=to_jsonable(observed))

    def examples(self, table: pd.DataFrame, plan: CheckPlan, failing: list[Any], limit: int) -> list[dict[str, Any]]:
        """The failing types, with their counts per split and the first rows that mention them (val/test first)."""
        rank = self._records["split"].map({"test": 0, "val": 1}).fillna(2)
        ordered = self._records.assign(rank=rank).sort_values("rank", kind="stable")
        examples = []
        for record in plan.frame.loc[failing[:limit]].to_dict(orient="records"):
            indices = ordered.loc[ordered["type"] == record["type"], "index"]
            rows = table.loc[list(dict.fromkeys(indices))[:MAX_ROWS], "row"].tolist()
            examples.append(to_jsonable({**record, "majority_ratio": round(record["majority_ratio"], 3),
                                         "share": round(record["share"], 4), "rows": rows}))
        return examples
