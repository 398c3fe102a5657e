"""`cross_split_shared_sides`: a val or test pair with a side that is a side of a train pair, paired otherwise."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from depthfinder.expectations.audit.checks.base import Check, CheckPlan, texts_of, to_jsonable
from depthfinder.expectations.audit.config import AuditConfig
from depthfinder.expectations.audit.pairs import PAIR_COLUMN, SIDE_KEY, SIDE_NAMES, SIDE_USABLE, SIDES, unordered_keys

MAX_MATCHES = 20
EVALUATION_SPLITS = ("val", "test")
# Which evaluation rows lead the evidence.
EVALUATION_FIRST = {"test": 0, "val": 1}


def train_sides(table: pd.DataFrame) -> pd.DataFrame:
    """One record per train row and distinct usable side: the side's key, and the row's pair key either way round."""
    train = table[table["split"] == "train"]
    unordered = unordered_keys(train)
    sides = [
        pd.DataFrame({"index": train.index, "side_key": train[SIDE_KEY[side]], "unordered": unordered})[
            train[SIDE_USABLE[side]].to_numpy(dtype=bool)
        ]
        for side in SIDES
    ]
    return pd.concat(sides, ignore_index=True).drop_duplicates(["index", "side_key"])


def shared_side_rows(table: pd.DataFrame, sides: pd.DataFrame, side: str) -> np.ndarray:
    """Per row: True for a val/test row whose `side` (usable) is a side of a train pair that is not the same pair
    (either way round: those are `cross_split_duplicates`' and `swapped_pairs'` business)."""
    keys, own = table[SIDE_KEY[side]], unordered_keys(table)
    everywhere = sides.groupby("side_key").size().reindex(keys).fillna(0).to_numpy()
    same_pair = sides.groupby(["side_key", "unordered"]).size()
    same_pair = same_pair.reindex(pd.MultiIndex.from_arrays([keys, own])).fillna(0).to_numpy()
    evaluation = table["split"].isin(EVALUATION_SPLITS).to_numpy()
    return evaluation & table[SIDE_USABLE[side]].to_numpy(dtype=bool) & (everywhere > same_pair)


class CrossSplitSharedSidesCheck(Check):
    """Val and test pairs one of whose sides (normalised) is also a side, first or second, of a train pair with
    another partner: a premise or question reused, paired differently.

    NLI data shares premises by design (one premise, a hypothesis per label), so this is a
    warning whatever the share: the model has read that side in training, with another
    partner and perhaps another label, which makes evaluation on these rows easier than on
    new text. The headline counts the evaluation pairs affected; the evidence names the side
    and the train rows that hold it. The whole pair in train is `cross_split_duplicates`'
    business, its swap `swapped_pairs'`; sides without a letter or digit are not compared.
    """

    name = "cross_split_shared_sides"
    category = "leakage"
    severity = "warning"
    description = "val/test pairs with a side (first or second text) that a train pair also has, paired otherwise"
    evidence = ("side", "matches")
    requires = ("text", PAIR_COLUMN, "split")

    @classmethod
    def headline(cls, observed: dict[str, Any]) -> str:
        if "evaluation_rows" not in observed:
            return super().headline(observed)
        return (f"{observed['evaluation_rows']} of {observed['evaluated']} val/test pairs "
                f"({100 * observed['evaluation_fraction']:.2f} %) share a side with a train pair")

    def plan(self, table: pd.DataFrame, config: AuditConfig) -> CheckPlan:
        """One row per table row: for val/test rows, whether either side is a side of a train pair (train: null)."""
        import great_expectations.expectations as gxe

        self._sides = train_sides(table)
        shared = {side: shared_side_rows(table, self._sides, side) for side in SIDES}
        either = shared["text"] | shared[PAIR_COLUMN]
        evaluation = table["split"].isin(EVALUATION_SPLITS).to_numpy()
        frame = pd.DataFrame({
            "shares_a_side_with_train": np.where(evaluation, either.astype(np.float64), np.nan),
            **{f"{SIDE_NAMES[side]}_side_shared": shared[side] for side in SIDES},
        }, index=table.index)
        evaluated = int(evaluation.sum())
        observed = {
            "evaluated": evaluated, "evaluation_rows": int(either.sum()),
            "evaluation_fraction": round(int(either.sum()) / max(evaluated, 1), 6),
            **{f"{SIDE_NAMES[side]}_side_rows": int(shared[side].sum()) for side in SIDES},
        }
        expectation = gxe.ExpectColumnValuesToBeBetween(
            column="shares_a_side_with_train", max_value=0,
            **self.gx("warning", "the model read this side in training, with another partner", **observed),
        )
        return CheckPlan(frame=frame, expectations=[expectation], observed=observed)

    def examples(self, table: pd.DataFrame, plan: CheckPlan, failing: list[Any], limit: int) -> list[dict[str, Any]]:
        """Test rows first: which side is shared, and the train rows that hold it."""
        rank = table.loc[failing, "split"].map(EVALUATION_FIRST).fillna(len(EVALUATION_FIRST)).to_numpy()
        ordered = [failing[i] for i in np.argsort(rank, kind="stable")][:limit]
        own = unordered_keys(table.loc[ordered])
        examples = []
        for index in ordered:
            row = table.loc[index]
            shared = [side for side in SIDES if plan.frame.at[index, f"{SIDE_NAMES[side]}_side_shared"]]
            held = self._sides[self._sides["side_key"].isin([row[SIDE_KEY[side]] for side in shared])
                               & (self._sides["unordered"] != own[index])]
            matches = sorted(set(table.loc[held["index"], "row"].tolist()))
            examples.append(to_jsonable({
                "row": row["row"], **texts_of(row), "split": row["split"], "label": row.get("label"),
                "side": "both" if len(shared) == 2 else SIDE_NAMES[shared[0]], "matches": matches[:MAX_MATCHES],
            }))
        return examples
