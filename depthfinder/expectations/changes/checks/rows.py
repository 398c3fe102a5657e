"""Rows added, rows relabelled, and whether the champion's test rows are still there."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from depthfinder.expectations.audit.checks.base import CheckPlan
from depthfinder.expectations.changes.checks.base import ChangeCheck, share
from depthfinder.expectations.changes.compare import CHANGE_COLUMN, WAS_COLUMN, Comparison, side


def _mostly(threshold_of_champion: float, champion_rows: int, rows: int) -> float:
    """GX `mostly` for 'at most `threshold_of_champion` x champion_rows of these `rows` rows may be flagged'."""
    return float(np.clip(1 - threshold_of_champion * champion_rows / max(rows, 1), 0, 1))


def _flagged_tonight(table: pd.DataFrame, change: str) -> tuple[pd.DataFrame, int, int]:
    """One row per row of tonight's table (same index), 1 in column `change` where that is its change; how many
    are, and how many rows the champion's table has."""
    tonight = side(table, "tonight")
    frame = pd.DataFrame({change: (tonight[CHANGE_COLUMN] == change).astype(np.int8)}, index=tonight.index)
    return frame, int(frame[change].sum()), len(side(table, "champion"))


class RowsAddedCheck(ChangeCheck):
    """Rows of tonight's table the champion's table did not have."""

    name = "rows_added"
    category = "rows"
    description = "rows of tonight's table that the champion's table did not have (by text and label)"

    @classmethod
    def headline(cls, observed: dict[str, Any]) -> str:
        return f"{observed['rows']} rows added ({100 * observed['fraction']:.1f} % of the champion's table)"

    def plan(self, table: pd.DataFrame, comparison: Comparison) -> CheckPlan:
        import great_expectations.expectations as gxe

        frame, added, before = _flagged_tonight(table, "added")
        threshold = comparison.config.retrain_added_fraction
        expectation = gxe.ExpectColumnValuesToBeBetween(
            column="added", max_value=0, mostly=_mostly(threshold, before, len(frame)),
            **self.gx("warning", f"more than {threshold:.0%} of the champion's rows are new: worth a retrain",
                      rows_added=added),
        )
        return CheckPlan(frame, [expectation], {"fraction": share(added, before), "champion_rows": before,
                                                "tonight_rows": len(frame), "retrain_fraction": threshold})


class RelabelledRowsCheck(ChangeCheck):
    """Rows whose text the champion's table holds under another label."""

    name = "relabelled_rows"
    category = "labels"
    description = "rows of tonight's table whose text the champion's table held under another label"
    evidence_columns = ("row", "text", "split", "label", WAS_COLUMN)
    evidence = (WAS_COLUMN,)

    @classmethod
    def headline(cls, observed: dict[str, Any]) -> str:
        return f"{observed['rows']} rows relabelled ({100 * observed['fraction']:.2f} % of the champion's table)"

    def plan(self, table: pd.DataFrame, comparison: Comparison) -> CheckPlan:
        import great_expectations.expectations as gxe

        frame, relabelled, before = _flagged_tonight(table, "relabelled")
        stop = comparison.config.stop_relabelled_fraction
        expectations = [
            gxe.ExpectColumnValuesToBeBetween(
                column="relabelled", max_value=0,
                **self.gx("warning", "labels were corrected since the champion was trained: worth a retrain",
                          relabelled=relabelled),
            ),
            gxe.ExpectColumnValuesToBeBetween(
                column="relabelled", max_value=0, mostly=_mostly(stop, before, len(frame)),
                **self.gx("error", f"more than {stop:.0%} of the champion's rows changed label: the labelling "
                          "itself changed; a person should look before anything is trained on it",
                          relabelled=relabelled),
            ),
        ]
        return CheckPlan(frame, expectations, {"fraction": share(relabelled, before), "stop_fraction": stop})


class ChampionTestRowsCheck(ChangeCheck):
    """Whether the rows the champion was tested on are still in tonight's table, with their labels."""

    name = "champion_test_rows"
    category = "rows"
    description = "the champion's test rows that tonight's table no longer holds (removed or relabelled)"
    retrains = False

    @classmethod
    def headline(cls, observed: dict[str, Any]) -> str:
        if "test_rows" not in observed:
            return super().headline(observed)
        return f"{observed['rows']} of its {observed['test_rows']} test rows gone"

    def plan(self, table: pd.DataFrame, comparison: Comparison) -> CheckPlan:
        import great_expectations.expectations as gxe

        champion = side(table, "champion")
        if "split" not in champion.columns:
            return self.not_judged("the champion's table has no split column")
        tested = champion[champion["split"] == "test"]
        frame = pd.DataFrame({"gone": (tested[CHANGE_COLUMN] != "kept").astype(np.int8)}, index=tested.index)
        gone = int(frame["gone"].sum())
        expectation = gxe.ExpectColumnValuesToBeBetween(
            column="gone", max_value=0,
            **self.gx("warning", "tonight's champion/challenger comparison is no longer on the rows the champion "
                      "was tested on, so it cannot be compared with its recorded test quality", gone=gone),
        )
        return CheckPlan(frame, [expectation], {"fraction": share(gone, len(tested)), "test_rows": len(tested)})
