"""`one_side_baseline`: one side of a pair alone predicts the label (annotation artefacts).

The label of a pair is a relation between its sides, so neither side alone should say much
about it. Crowd-written NLI hypotheses do (Gururangan et al. 2018, Poliak et al. 2018: "nobody",
"never" and "sleeping" mark contradictions), and a model learns those words instead of the
task. For each side, the audit's text baseline
(expectations/audit/baseline.py: hashed word n-grams, tf-idf, logistic regression) reads that
side only and predicts every row's label out of fold (5 stratified folds, on every row of a
class with at least 5 rows; a random sample of MAX_ROWS on larger data). Its accuracy
against the majority class gives the side's lift, (accuracy - baseline) / (1 - baseline):
0 when the side says nothing, 1 when it says everything.

A lift of at least `giveaway_min_lift` is an error, as for any other column that predicts
the label alone (label_giveaway_columns): training would reward the artefact.
Below that, a side whose accuracy is significantly above the majority baseline (SIGNIFICANCE_Z
standard errors of a binomial at the baseline accuracy: a side that carries no signal gets
there in about 0.1 % of audits) is a warning: some rows can be labelled without the
other side. The evidence is each side's figures and the words that most shift the label
mix of that side's rows, each with a row that holds it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from depthfinder.expectations.audit.baseline import FOLDS, SIGNIFICANCE_Z, above_majority, out_of_fold_probabilities
from depthfinder.expectations.audit.checks.base import Check, CheckPlan, to_jsonable
from depthfinder.expectations.audit.checks.label_giveaway_columns import lift
from depthfinder.expectations.audit.config import AuditConfig
from depthfinder.expectations.audit.pairs import PAIR_COLUMN, SIDE_NAMES, SIDE_NORMALIZED, SIDES

MAX_ROWS = 20_000
MIN_ROWS = 50
SAMPLE_SEED = 0
TOKENS_SHOWN = 5
MIN_TOKEN_ROWS = 5
SIDE_COLUMNS = ["side", "accuracy", "baseline", "lift", "z", "tokens"]


def rows_to_judge(table: pd.DataFrame) -> tuple[pd.Index, bool]:
    """Rows of classes with at least FOLDS rows, sampled down to MAX_ROWS; and whether they were sampled."""
    counts = table["label"].astype("str").value_counts()
    rows = table.index[table["label"].astype("str").isin(counts.index[counts >= FOLDS]).to_numpy()]
    if len(rows) <= MAX_ROWS:
        return rows, False
    rng = np.random.default_rng(SAMPLE_SEED)
    return rows[np.sort(rng.choice(len(rows), size=MAX_ROWS, replace=False))], True


def side_score(texts: list[str], labels: np.ndarray) -> dict[str, float]:
    """Out-of-fold accuracy of the baseline on one side's texts, the majority baseline, the lift and its z."""
    accuracy = float((out_of_fold_probabilities(texts, labels).argmax(axis=1) == labels).mean())
    baseline, z = above_majority(accuracy, labels)
    return {"accuracy": round(accuracy, 4), "baseline": round(baseline, 4),
            "lift": round(lift(accuracy, baseline), 4), "z": round(float(z), 2)}


def telling_words(texts: list[str], labels: np.ndarray, classes: pd.Index, rows: np.ndarray) -> list[dict[str, Any]]:
    """The words whose rows lean most to one label: rows there beyond the label's share of all rows (the rows the
    word explains), with the word's rows, its share in that label, and a row (`rows[i]`) that holds it."""
    from sklearn.feature_extraction.text import CountVectorizer

    try:
        words = CountVectorizer(binary=True, token_pattern=r"\S+", min_df=MIN_TOKEN_ROWS, lowercase=False)
        held = words.fit_transform(texts).tocsc()
    except ValueError:  # no word in MIN_TOKEN_ROWS rows
        return []
    one_hot = np.eye(len(classes))[labels]
    per_class = np.asarray(held.T @ one_hot)  # (words, classes): rows holding the word, per label
    word_rows = per_class.sum(axis=1, keepdims=True)
    excess = per_class - word_rows * one_hot.mean(axis=0)
    best = np.argsort(excess.max(axis=1))[::-1][:TOKENS_SHOWN]
    names = words.get_feature_names_out()
    records = []
    for word in best:
        label = int(excess[word].argmax())
        if excess[word, label] <= 0:
            break
        holders = held.indices[held.indptr[word]:held.indptr[word + 1]]
        example = holders[labels[holders] == label][0]
        records.append({
            "token": names[word], "label": classes[label], "rows": int(word_rows[word, 0]),
            "purity": round(float(per_class[word, label] / word_rows[word, 0]), 4), "row": rows[example],
        })
    return records


class OneSideBaselineCheck(Check):
    """How well each side of a pair alone predicts the label; see the module docstring."""

    name = "one_side_baseline"
    category = "leakage"
    severity = "error"
    description = "one side of a pair alone predicts the label (annotation artefacts, e.g. hypothesis-only NLI)"
    evidence = ("accuracy", "baseline", "lift", "z", "tokens")
    requires = ("text", PAIR_COLUMN, "label")
    counts_rows = False

    @classmethod
    def headline(cls, observed: dict[str, Any]) -> str:
        if not observed.get("sides"):
            return super().headline(observed)
        parts = [f"{side['side']} side alone {side['accuracy']:.1%} (closes {max(side['lift'], 0):.0%} of the gap)"
                 for side in observed["sides"]]
        return f"{'; '.join(parts)}; majority class {observed['sides'][0]['baseline']:.1%}"

    def plan(self, table: pd.DataFrame, config: AuditConfig) -> CheckPlan:
        """One row per side: its out-of-fold accuracy alone, the majority baseline, lift, z and telling words."""
        import great_expectations.expectations as gxe

        judged, sampled = rows_to_judge(table)
        labels, classes = pd.factorize(table.loc[judged, "label"].astype("str"))
        if len(judged) < MIN_ROWS or len(classes) < 2:
            frame = pd.DataFrame({column: pd.Series(dtype="float64") for column in ("lift", "z")})
            return CheckPlan(frame=frame, expectations=[], observed={
                "not_tested": f"fewer than {MIN_ROWS} rows in classes of {FOLDS} or more, or one class",
            })
        rows = table.loc[judged, "row"].to_numpy()
        records = []
        for side in SIDES:
            texts = table.loc[judged, SIDE_NORMALIZED[side]].tolist()
            records.append({"side": SIDE_NAMES[side], **side_score(texts, labels),
                            "tokens": telling_words(texts, labels, classes, rows)})
        frame = pd.DataFrame.from_records(records, columns=SIDE_COLUMNS)
        limits = {"max_lift": config.giveaway_min_lift, "significance_z": SIGNIFICANCE_Z}
        shown = to_jsonable(frame.drop(columns="tokens").to_dict(orient="records"))
        expectations = [
            gxe.ExpectColumnValuesToBeBetween(
                column="lift", max_value=config.giveaway_min_lift, strict_max=True,
                **self.gx("error", "one side alone gives the label away: a model learns the artefact, not the "
                          "relation", sides=shown, **limits),
            ),
            gxe.ExpectColumnValuesToBeBetween(
                column="z", max_value=SIGNIFICANCE_Z, strict_max=True,
                **self.gx("warning", "one side alone predicts the label better than chance", sides=shown, **limits),
            ),
        ]
        observed = {"sides": shown, "judged_rows": len(judged), "sampled": sampled, **limits}
        return CheckPlan(frame=frame, expectations=expectations, observed=observed)

    def examples(self, table: pd.DataFrame, plan: CheckPlan, failing: list[Any], limit: int) -> list[dict[str, Any]]:
        """The failing sides: accuracy alone, the majority baseline, lift, z and the words that tell the label."""
        rows = plan.frame.loc[failing[:limit], SIDE_COLUMNS]
        return [to_jsonable(record) for record in rows.to_dict(orient="records")]
