"""Decay: the registered champion's quality on the rows added since, next to its quality on its own test rows."""

from __future__ import annotations

from typing import Any

import pandas as pd

from depthfinder.expectations.audit.checks.base import CheckPlan, to_jsonable
from depthfinder.expectations.changes.checks.base import ChangeCheck
from depthfinder.expectations.changes.compare import CHAMPION_LABEL_COLUMN, Comparison, foreign, side

# Rows a block (the foreign rows added, or the rest) needs before the champion's decay is reported on it apart.
MIN_BLOCK_ROWS = 5
# Coverage of the decay's bootstrap interval: the depth rule's default.
CONFIDENCE = 0.9


def _on(rows: pd.DataFrame, metric: str, name: str) -> dict[str, float]:
    """The champion's `metric` on `rows` with its bootstrap interval, as `name`, `name_low`, `name_high`."""
    from depthfinder.evidence.bootstrap import metric_interval

    value, low, high = metric_interval(rows["label"].astype("str").tolist(),
                                       rows[CHAMPION_LABEL_COLUMN].astype("str").tolist(), metric, CONFIDENCE)
    return {name: round(value, 4), f"{name}_low": round(low, 4), f"{name}_high": round(high, 4)}


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
        text = (f"{observed['metric']} {observed['on_new']:.3f} [{observed['on_new_low']:.3f}, "
                f"{observed['on_new_high']:.3f}] on {observed['new_rows']} rows added vs {observed['on_test']:.3f} on "
                "its test rows")
        if "on_rest" in observed:
            text += (f"; {observed['on_rest']:.3f} on the {observed['rest_rows']} not foreign, "
                     f"{observed['on_foreign']:.3f} on the {observed['foreign_rows']} flagged foreign")
        return text

    def plan(self, table: pd.DataFrame, comparison: Comparison) -> CheckPlan:
        """The drop from its test rows to the rows added (to those that are not foreign, when a block of the rows
        added is: decay that mislabelled rows of another task cause is no reason to retrain on them)."""
        import great_expectations.expectations as gxe

        scores, config = comparison.champion, comparison.config
        if scores is None or scores.on_new is None or scores.on_test is None:
            return self.not_judged("no rows added to score the champion on")
        if scores.new_rows < config.decay_min_rows:
            return self.not_judged(f"{scores.new_rows} rows added, fewer than {config.decay_min_rows}")
        added = side(table, "tonight", "added")
        scored = added[added[CHAMPION_LABEL_COLUMN].notna()]
        observed = {"metric": scores.metric, **_on(scored, scores.metric, "on_new"), "on_new": round(scores.on_new, 4),
                    "on_test": round(scores.on_test, 4), "new_rows": scores.new_rows, "test_rows": scores.test_rows}
        flagged = foreign(scored)
        if flagged.sum() >= MIN_BLOCK_ROWS and (~flagged).sum() >= MIN_BLOCK_ROWS:
            observed |= _on(scored[flagged], scores.metric, "on_foreign") | _on(scored[~flagged], scores.metric,
                                                                                 "on_rest")
            observed |= {"foreign_rows": int(flagged.sum()), "rest_rows": int((~flagged).sum())}
        drop = scores.on_test - observed.get("on_rest", observed["on_new"])
        expectation = gxe.ExpectColumnValuesToBeBetween(
            column="drop", max_value=config.retrain_decay,
            **self.gx("warning", f"the champion does worse on the rows added than on its test rows by more than "
                      f"{config.retrain_decay:g}: it has decayed", drop=round(drop, 4)),
        )
        return CheckPlan(self.figures({"drop": drop}), [expectation], observed | {"drop": round(drop, 4)})

    def examples(self, table: pd.DataFrame, plan: CheckPlan, failing: list[Any], limit: int) -> list[dict[str, Any]]:
        """Rows added that the champion gets wrong."""
        added = side(table, "tonight", "added")
        if CHAMPION_LABEL_COLUMN not in added.columns:
            return []
        scored = added[added[CHAMPION_LABEL_COLUMN].notna()]
        wrong = scored[scored[CHAMPION_LABEL_COLUMN].astype("str") != scored["label"].astype("str")]
        columns = [column for column in self.evidence_columns if column in wrong.columns]
        return [to_jsonable(record) for record in wrong[columns].head(limit).to_dict(orient="records")]
