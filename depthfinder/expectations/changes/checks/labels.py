"""The label mix of the rows added against the champion's, and classes that appeared or vanished."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from depthfinder.expectations.audit.checks.base import CheckPlan, to_jsonable
from depthfinder.expectations.changes.checks.base import ChangeCheck, frame_examples
from depthfinder.expectations.changes.compare import Comparison, side

MIN_ROWS = 5  # rows added below which a mix is not compared
# Added to every class count for the PSI only, so a class absent on one side has a finite PSI term. The shares
# shown are the counts' own (rows / the side's rows): a smoothed share beside `added_rows 0` read as a contradiction
# (0 rows, share 0.0017).
SMOOTHING = 0.5


def label_mix(champion: pd.Series, added: pd.Series) -> pd.DataFrame:
    """One row per class of either side: rows and share on each side (the class's rows over the side's), and its PSI
    term (computed on shares smoothed by SMOOTHING rows per class)."""
    counts = pd.DataFrame({"champion_rows": champion.value_counts(), "added_rows": added.value_counts()})
    counts = counts.fillna(0).astype(np.int64).sort_index()
    shares = counts / counts.sum()
    smoothed = (counts + SMOOTHING) / (counts + SMOOTHING).sum()
    counts["champion_share"] = shares["champion_rows"].round(4)
    counts["added_share"] = shares["added_rows"].round(4)
    counts["psi_term"] = (smoothed["added_rows"] - smoothed["champion_rows"]) * np.log(
        smoothed["added_rows"] / smoothed["champion_rows"])
    return counts.rename_axis("label").reset_index()


class LabelShiftCheck(ChangeCheck):
    """Whether the rows added carry another label mix than the champion's table (chi-square test and PSI)."""

    name = "label_shift"
    category = "labels"
    counts_rows = False
    description = ("the label mix of the rows added vs the champion's table: chi-square p-value and PSI (on shares "
                   f"smoothed by {SMOOTHING:g} rows per class)")

    @classmethod
    def headline(cls, observed: dict[str, Any]) -> str:
        if "psi" not in observed:
            return super().headline(observed)
        return f"PSI {observed['psi']:.3f}, p = {observed['p_value']:.2g} (rows added vs the champion's)"

    def plan(self, table: pd.DataFrame, comparison: Comparison) -> CheckPlan:
        import great_expectations.expectations as gxe
        from scipy.stats import chi2_contingency

        added = side(table, "tonight", "added")["label"].astype("str")
        if len(added) < MIN_ROWS:
            return self.not_judged(f"{len(added)} rows added, fewer than {MIN_ROWS}")
        mix = label_mix(side(table, "champion")["label"].astype("str"), added)
        psi = float(mix["psi_term"].sum())
        contingency = mix[["champion_rows", "added_rows"]].to_numpy().T
        p_value = float(chi2_contingency(contingency)[1]) if len(mix) > 1 else 1.0
        config = comparison.config
        frame = mix.assign(shifted_psi=psi if p_value < config.label_shift_p else 0.0)
        expectation = gxe.ExpectColumnValuesToBeBetween(
            column="shifted_psi", max_value=config.retrain_label_psi,
            **self.gx("warning", f"the rows added have another label mix (PSI above {config.retrain_label_psi:g} "
                      f"and p below {config.label_shift_p:g}): the prior the champion learned is off",
                      psi=round(psi, 4), p_value=p_value),
        )
        observed = {"psi": round(psi, 4), "p_value": p_value,
                    "champion_mix": dict(zip(mix["label"], mix["champion_share"], strict=True)),
                    "added_mix": dict(zip(mix["label"], mix["added_share"], strict=True))}
        return CheckPlan(frame, [expectation], observed)

    def examples(self, table: pd.DataFrame, plan: CheckPlan, failing: list[Any], limit: int) -> list[dict[str, Any]]:
        """The classes whose share moved most."""
        moved = plan.frame.sort_values("psi_term", ascending=False)
        columns = ["label", "champion_rows", "champion_share", "added_rows", "added_share"]
        return [to_jsonable(record) for record in moved[columns].head(limit).to_dict(orient="records")]


class ClassesCheck(ChangeCheck):
    """Classes tonight's table has that the champion's had not, and the other way round."""

    name = "new_or_vanished_classes"
    category = "labels"
    counts_rows = False
    description = "classes in tonight's table the champion never saw, and classes that are gone"

    @classmethod
    def headline(cls, observed: dict[str, Any]) -> str:
        new, vanished = observed["new_classes"], observed["vanished_classes"]
        if not new and not vanished:
            return "the same classes"
        return "; ".join(part for part in (f"new: {', '.join(new)}" if new else "",
                                           f"vanished: {', '.join(vanished)}" if vanished else "") if part)

    def plan(self, table: pd.DataFrame, comparison: Comparison) -> CheckPlan:
        import great_expectations.expectations as gxe

        counts = pd.DataFrame({
            "champion_rows": side(table, "champion")["label"].astype("str").value_counts(),
            "tonight_rows": side(table, "tonight")["label"].astype("str").value_counts(),
        }).fillna(0).astype(np.int64).sort_index().rename_axis("label").reset_index()
        frame = counts.assign(new=(counts["champion_rows"] == 0).astype(np.int8),
                              vanished=(counts["tonight_rows"] == 0).astype(np.int8))
        new = frame.loc[frame["new"] == 1, "label"].tolist()
        vanished = frame.loc[frame["vanished"] == 1, "label"].tolist()
        expectations = [
            gxe.ExpectColumnValuesToBeBetween(
                column="new", max_value=0,
                **self.gx("warning", "a class the champion cannot predict appeared", new_classes=new)),
            gxe.ExpectColumnValuesToBeBetween(
                column="vanished", max_value=0,
                **self.gx("warning", "the champion still predicts a class the data no longer has",
                          vanished_classes=vanished)),
        ]
        return CheckPlan(frame, expectations, {"new_classes": new, "vanished_classes": vanished})

    def examples(self, table: pd.DataFrame, plan: CheckPlan, failing: list[Any], limit: int) -> list[dict[str, Any]]:
        return frame_examples(plan, failing, limit)
