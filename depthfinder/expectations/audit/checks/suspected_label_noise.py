"""`suspected_label_noise`: rows whose label disagrees with out-of-fold predictions (confident learning).

A fast baseline (expectations/baseline.py) predicts every row's class probabilities
from a model trained on the other folds. cleanlab's `find_label_issues` then estimates
how many labels are wrong from the confident joint of given and predicted labels
(`num_label_issues`) and flags that many rows, those with the lowest probability of
their own label (`filter_by="low_self_confidence"`). So the share of flagged rows is
the estimated noise rate, and the flagged rows are ranked by suspicion.

The estimate is only as good as the baseline: a task a bag of n-grams cannot learn
(negation, word order) looks noisier than it is. Hence a warning by default and an
error only above `max_label_noise_fraction`. In a pairs table, a baseline that does no better
than the majority class (its out-of-fold accuracy within SIGNIFICANCE_Z standard errors of it)
learnt nothing its disagreements could be measured against (the label is in how the sides
relate, beyond shared words: same topic, entailment without overlap), so then no row is
judged and the headline says so. One text's labels that no bag of words beats the majority
class on are still judged: there they more likely say the labels do not belong to the texts.
On more than `noise_max_rows` rows the check judges a random sample and says so.

In a pairs table a bag of the joined words cannot see how the sides relate (does the premise
hold the hypothesis' words?), so a clean NLI or paraphrase file would look noisy: the
baseline reads each side's words marked with their side, the words both share and how much
of the second side the first covers (`pairs.relation_texts`), the lexical-overlap features
known to carry much of these tasks. Still, a baseline that reads only some of how the sides relate
flags about its own error rate, on clean labels as on noisy ones (confident learning cannot tell a
weak baseline from wrong labels): pairs of docstrings labelled by whether both come from one package,
clean by construction, had 42.5 % flagged by a baseline a little above the majority class. So in a
pairs table the estimate blocks only where the baseline closes at least PAIR_BLOCKING_LIFT of the gap
from the majority class to perfect; below it, it warns, and the headline says why.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from depthfinder.expectations.audit.baseline import FOLDS, SIGNIFICANCE_Z, above_majority, out_of_fold_probabilities
from depthfinder.expectations.audit.checks.base import (
    NORMALIZED_COLUMN,
    PAIR_COLUMN,
    USABLE_COLUMN,
    Check,
    CheckPlan,
    texts_of,
    to_jsonable,
)
from depthfinder.expectations.audit.config import AuditConfig
from depthfinder.expectations.audit.pairs import is_pairs_table, relation_texts

SAMPLE_SEED = 0
# The share of the gap from the majority class to perfect a pairs table's baseline must close before its
# disagreements may block training (module docstring): half, as a side alone must close to block (one_side_baseline).
PAIR_BLOCKING_LIFT = 0.5


class SuspectedLabelNoiseCheck(Check):
    """Rows cleanlab flags as probably mislabelled, with their given and likely labels."""

    name = "suspected_label_noise"
    category = "noise"
    severity = "warning"
    description = "rows whose label disagrees with out-of-fold predictions of a baseline (confident learning)"
    evidence = ("likely_label", "self_confidence")

    @classmethod
    def headline(cls, observed: dict[str, Any]) -> str:
        if "not_judged" in observed:
            return f"not estimated: {observed['not_judged']}"
        if "fraction" not in observed:
            return super().headline(observed)
        sampled = ", sampled" if observed.get("sampled") else ""
        warns_only = f"; {observed['warns_only']}" if "warns_only" in observed else ""
        return (
            f"estimated noise {100 * observed['fraction']:.1f} % ({observed['rows']} rows flagged of "
            f"{observed['judged_rows']} judged{sampled}){warns_only}"
        )
    requires = ("text", "label")

    def plan(self, table: pd.DataFrame, config: AuditConfig) -> CheckPlan:
        """One row per table row: suspected (1/0; null when not judged), self-confidence and likely label."""
        import great_expectations.expectations as gxe
        from cleanlab.filter import find_label_issues

        judged, sampled, note = _rows_to_judge(table, config.noise_max_rows)
        frame = pd.DataFrame({
            "suspected": np.full(len(table), np.nan), "self_confidence": np.full(len(table), np.nan),
            "likely_label": pd.Series([None] * len(table), dtype="object"),
        }, index=table.index)
        observed: dict[str, Any] = {"judged_rows": len(judged), "sampled": sampled}
        if note:
            observed["note"] = note
        labels, classes = pd.factorize(table.loc[judged, "label"].astype("str"))
        if len(classes) >= 2:
            probabilities = out_of_fold_probabilities(_baseline_texts(table.loc[judged]), labels)
            accuracy = float((probabilities.argmax(axis=1) == labels).mean())
            majority, z = above_majority(accuracy, labels)
            observed.update({"baseline_accuracy": round(accuracy, 4), "majority_accuracy": round(majority, 4)})
        if len(classes) >= 2 and is_pairs_table(table) and z < SIGNIFICANCE_Z:
            observed["not_judged"] = (
                f"the baseline does no better than the majority class ({100 * accuracy:.1f} % vs {100 * majority:.1f} "
                "%): its disagreements say nothing of the labels")
        elif len(classes) >= 2:
            issues = find_label_issues(labels, probabilities, filter_by="low_self_confidence")
            frame.loc[judged, "suspected"] = issues.astype(np.float64)
            frame.loc[judged, "self_confidence"] = probabilities[np.arange(len(labels)), labels]
            frame.loc[judged, "likely_label"] = np.asarray(classes, dtype=object)[probabilities.argmax(axis=1)]
            estimate = float(issues.mean())
            observed.update({"rows": int(issues.sum()), "fraction": round(estimate, 6)})
            lift = (accuracy - majority) / (1 - majority) if majority < 1 else 0.0
            if is_pairs_table(table) and lift < PAIR_BLOCKING_LIFT:
                observed["warns_only"] = (
                    f"warns only: the baseline ({100 * accuracy:.1f} % vs the majority's {100 * majority:.1f} %) "
                    f"closes {lift:.0%} of the gap to perfect, too little of how the sides relate to tell wrong "
                    "labels from its own errors")
        thresholds = {
            "warn_fraction": config.label_noise_warn_fraction, "max_fraction": config.max_label_noise_fraction,
        }
        observed.update(thresholds)
        expectations = [
            gxe.ExpectColumnValuesToBeBetween(
                column="suspected", max_value=0, mostly=1 - config.label_noise_warn_fraction,
                **self.gx("warning", "these labels disagree with a model that never saw them", **thresholds,
                          estimated_fraction=observed.get("fraction"), judged_rows=len(judged)),
            ),
        ]
        if "warns_only" not in observed:
            expectations.append(gxe.ExpectColumnValuesToBeBetween(
                column="suspected", max_value=0, mostly=1 - config.max_label_noise_fraction,
                **self.gx("error", "too many labels look wrong to train on", **thresholds,
                          estimated_fraction=observed.get("fraction"), judged_rows=len(judged)),
            ))
        return CheckPlan(frame=frame, expectations=expectations, observed=observed, suspects=_flagged(table, frame))

    def examples(self, table: pd.DataFrame, plan: CheckPlan, failing: list[Any], limit: int) -> list[dict[str, Any]]:
        """The most suspicious flagged rows: lowest probability of their given label first."""
        confidence = plan.frame.loc[failing, "self_confidence"].sort_values(kind="stable")
        examples = []
        for index in confidence.index[:limit]:
            row = table.loc[index]
            example = {"row": row["row"], **texts_of(row), "label": row["label"]}
            if "split" in table.columns:
                example["split"] = row["split"]
            example["likely_label"] = plan.frame.at[index, "likely_label"]
            example["self_confidence"] = round(float(confidence[index]), 4)
            examples.append(to_jsonable(example))
        return examples


def _flagged(table: pd.DataFrame, frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Every row flagged (the `rows` the headline counts), most suspicious first, with its likely label: the
    suspects the flagged-rows table and CSV list, whether or not the estimate reached the warning (a row-level
    check's suspects are its failing rows, and below the warning none fail)."""
    flagged = frame.index[frame["suspected"] == 1]
    order = frame.loc[flagged, "self_confidence"].sort_values(kind="stable").index
    columns = [column for column in ("row", "text", PAIR_COLUMN, "label") if column in table.columns]
    rows = table.loc[order, columns].assign(likely_label=frame.loc[order, "likely_label"])
    return to_jsonable(rows.to_dict(orient="records"))


def _baseline_texts(table: pd.DataFrame) -> list[str]:
    """What the baseline reads of each row: its normalised text, or a pair's relation words (module docstring)."""
    return relation_texts(table) if is_pairs_table(table) else table[NORMALIZED_COLUMN].tolist()


def _rows_to_judge(table: pd.DataFrame, max_rows: int) -> tuple[pd.Index, bool, str]:
    """Usable rows of classes with at least FOLDS rows, sampled down to `max_rows`: (rows, sampled, note)."""
    usable = table.index[table[USABLE_COLUMN].to_numpy(dtype=bool)]
    notes = []
    sampled = len(usable) > max_rows
    if sampled:
        rng = np.random.default_rng(SAMPLE_SEED)
        usable = usable[np.sort(rng.choice(len(usable), size=max_rows, replace=False))]
        notes.append(f"judged a random sample of {max_rows:,} of {int(table[USABLE_COLUMN].sum()):,} rows")
    counts = table.loc[usable, "label"].astype("str").value_counts()
    small = counts.index[counts < FOLDS].tolist()
    if small:
        usable = usable[~table.loc[usable, "label"].astype("str").isin(small).to_numpy()]
        notes.append(f"classes with fewer than {FOLDS} rows not judged: {', '.join(map(str, small[:10]))}")
    return usable, sampled, "; ".join(notes)
