"""Decay: the registered champion's quality on the rows added since, next to its quality on its own test rows."""

from __future__ import annotations

from typing import Any

import pandas as pd

from expectations.audit.checks.base import CheckPlan, to_jsonable
from expectations.changes.checks.base import ChangeCheck
from expectations.changes.compare import CHAMPION_LABEL_COLUMN, Comparison, side


class ChampionDecayCheck(ChangeCheck):
    """How far the champion's metric on the rows added falls below its metric on the rows it was tested on."""

    name = "champion_decay"
    category = "decay"
    counts_rows = False
    description = "the champion's metric on the rows added since vs on its own test rows (the registered model)"
    evidence_columns = ("row", "text", "split", "label", CHAMPION_LABEL_COLUMN)
    evidence = (CHAMPION_LABEL_COLUMN,)

    @classmethod
    def headline(cls, observed: dict[str, Any]) -> str:
        if "on_new" not in observed:
            return super().headline(observed)
        return (f"{observed['metric']} {observed['on_new']:.3f} on {observed['new_rows']} rows added vs "
                f"{observed['on_test']:.3f} on its test rows")

    def plan(self, table: pd.DataFrame, comparison: Comparison) -> CheckPlan:
        import great_expectations.expectations as gxe

        scores, config = comparison.champion, comparison.config
        if scores is None or scores.on_new is None or scores.on_test is None:
            return self.not_judged("no rows added to score the champion on")
        if scores.new_rows < config.decay_min_rows:
            return self.not_judged(f"{scores.new_rows} rows added, fewer than {config.decay_min_rows}")
        drop = scores.on_test - scores.on_new
        expectation = gxe.ExpectColumnValuesToBeBetween(
            column="drop", max_value=config.retrain_decay,
            **self.gx("warning", f"the champion does worse on the rows added than on its test rows by more than "
                      f"{config.retrain_decay:g}: it has decayed", drop=round(drop, 4)),
        )
        observed = {"metric": scores.metric, "on_new": round(scores.on_new, 4), "on_test": round(scores.on_test, 4),
                    "drop": round(drop, 4), "new_rows": scores.new_rows, "test_rows": scores.test_rows}
        return CheckPlan(self.figures({"drop": drop}), [expectation], observed)

    def examples(self, table: pd.DataFrame, plan: CheckPlan, failing: list[Any], limit: int) -> list[dict[str, Any]]:
        """Rows added that the champion gets wrong."""
        added = side(table, "tonight", "added")
        if CHAMPION_LABEL_COLUMN not in added.columns:
            return []
        scored = added[added[CHAMPION_LABEL_COLUMN].notna()]
        wrong = scored[scored[CHAMPION_LABEL_COLUMN].astype("str") != scored["label"].astype("str")]
        columns = [column for column in self.evidence_columns if column in wrong.columns]
        return [to_jsonable(record) for record in wrong[columns].head(limit).to_dict(orient="records")]
