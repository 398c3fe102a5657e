"""`test_entities_seen_in_train`: how many val/test entity mentions the model has read in training (leakage).

(The module is not called test_*.py, which pytest would collect.)

A mention is its normalised tokens with its type ("new york" LOC). Scores on mentions seen in training and on new
ones differ widely (Augenstein et al. 2017: a model recalls seen names far better), so the headline is the share of
val/test mentions unseen in train. When more than MAX_SEEN_FRACTION of them are seen, the scores say more about
memory than about names the model will meet, and the check warns; the failing rows are then the val/test
sentences with a seen mention, and the evidence the commonest seen mentions with their counts and rows. Never an
error: repeated names are how real text is (a country, a team), and no row is wrong.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from depthfinder.expectations.audit.checks.base import Check, CheckPlan, to_jsonable
from depthfinder.expectations.audit.config import AuditConfig
from depthfinder.expectations.audit.token_labels import TAGS_COLUMN, TOKENS_COLUMN, mention_records

MAX_SEEN_FRACTION = 0.5
EVALUATION_SPLITS = ("val", "test")
MAX_ROWS = 10


class EntitiesSeenInTrainCheck(Check):
    """The share of val/test entity mentions (normalised tokens and type) that no train sentence holds."""

    name = "test_entities_seen_in_train"
    category = "leakage"
    severity = "warning"
    description = "val/test entity mentions also in train: scores on seen and unseen names differ widely"
    evidence = ("mention", "type", "val_test_mentions", "train_mentions", "rows")
    requires = (TOKENS_COLUMN, TAGS_COLUMN, "split")

    @classmethod
    def headline(cls, observed: dict[str, Any]) -> str:
        if "evaluation_mentions" not in observed:
            return super().headline(observed)
        if not observed["evaluation_mentions"]:
            return "no val/test entity mention"
        return (f"{100 * observed['unseen_fraction']:.0f} % of the {observed['evaluation_mentions']} test/val entity "
                "mentions are unseen in train")

    def plan(self, table: pd.DataFrame, config: AuditConfig) -> CheckPlan:
        """One row per val/test mention, indexed by its sentence: 1 when train holds the mention, else 0."""
        import great_expectations.expectations as gxe

        found = mention_records(table)
        found = found[found["text"] != ""]  # punctuation only: no name to have seen
        train = found[found["split"] == "train"]
        evaluation = found[found["split"].isin(EVALUATION_SPLITS)]
        train_counts = train.groupby(["text", "type"]).size()
        keys = pd.MultiIndex.from_frame(evaluation[["text", "type"]])
        seen = train_counts.reindex(keys).notna().to_numpy()
        frame = pd.DataFrame({"seen_in_train": seen.astype(np.float64)}, index=evaluation["index"].to_numpy())
        self._seen = evaluation[seen].assign(train_mentions=train_counts.reindex(keys[seen]).to_numpy())
        self._train_rows = train.groupby(["text", "type"])["index"].agg(list)
        observed = {
            "evaluation_mentions": len(evaluation), "seen_mentions": int(seen.sum()),
            "unseen_fraction": round(float(1 - seen.mean()), 6) if len(seen) else None,
            "max_seen_fraction": MAX_SEEN_FRACTION,
            "seen_by_type": evaluation[seen].groupby("type").size().to_dict(),
            "mentions_by_type": evaluation.groupby("type").size().to_dict(),
        }
        expectation = gxe.ExpectColumnValuesToBeBetween(
            column="seen_in_train", max_value=0, mostly=1 - MAX_SEEN_FRACTION,
            **self.gx("warning", "most val/test mentions were read in training: the scores measure memory of names",
                      **{key: observed[key] for key in ("evaluation_mentions", "seen_mentions", "unseen_fraction")}),
        )
        return CheckPlan(frame=frame, expectations=[expectation], observed=observed)

    def examples(self, table: pd.DataFrame, plan: CheckPlan, failing: list[Any], limit: int) -> list[dict[str, Any]]:
        """The commonest seen mentions: how often val/test and train hold them, and their rows."""
        counts = self._seen.groupby(["text", "type"]).agg(
            val_test_mentions=("index", "size"), train_mentions=("train_mentions", "first"), rows=("index", list),
        ).sort_values(["val_test_mentions", "train_mentions"], ascending=False, kind="stable")
        examples = []
        for (text, entity_type), record in counts.head(limit).iterrows():
            examples.append(to_jsonable({
                "mention": text, "type": entity_type, "val_test_mentions": record["val_test_mentions"],
                "train_mentions": record["train_mentions"],
                "rows": _file_rows(table, record["rows"]),
                "train_rows": _file_rows(table, self._train_rows[(text, entity_type)]),
            }))
        return examples


def _file_rows(table: pd.DataFrame, indices: list[Any]) -> list[int]:
    """The `row` of the first MAX_ROWS distinct sentences among `indices`."""
    return table.loc[list(dict.fromkeys(indices))[:MAX_ROWS], "row"].tolist()
