"""Text drift: how well a classifier tells the champion's rows from the rows added, and their lengths."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from depthfinder.expectations.audit.baseline import FOLDS
from depthfinder.expectations.audit.checks.base import NORMALIZED_COLUMN, CheckPlan, to_jsonable
from depthfinder.expectations.changes.checks.base import ChangeCheck, frame_examples
from depthfinder.expectations.changes.compare import (
    DRIFT_COLUMN,
    FOREIGN_COLUMN,
    SIDE_COLUMN,
    Comparison,
    foreign,
    sample,
    side,
)

TOKENS_SHOWN = 10
MIN_TOKEN_SHARE = 0.02  # a separating token is in at least this share of its side's rows (and 3 rows)


def drift_sides(table: pd.DataFrame, comparison: Comparison) -> tuple[pd.Series, pd.Series] | str:
    """Normalised texts of the champion's rows and of the rows added (samples of at most max_rows), or why not."""
    champion, added = side(table, "champion"), side(table, "tonight", "added")
    if min(len(champion), len(added)) < FOLDS:
        return f"{len(added)} rows added; drift needs {FOLDS} on each side"
    limit = comparison.config.max_rows
    return sample(champion, limit)[NORMALIZED_COLUMN], sample(added, limit)[NORMALIZED_COLUMN]


def separating_tokens(champion: pd.Series, added: pd.Series, top: int = TOKENS_SHOWN) -> pd.DataFrame:
    """The tokens whose share of rows differs most between the sides (smoothed log ratio), either way."""
    from sklearn.feature_extraction.text import CountVectorizer

    vectorizer = CountVectorizer(token_pattern=r"\S+", binary=True, lowercase=False)
    counts = vectorizer.fit_transform(pd.concat([champion, added]).tolist())
    in_champion = np.asarray(counts[: len(champion)].sum(axis=0)).ravel()
    in_added = np.asarray(counts[len(champion):].sum(axis=0)).ravel()
    tokens = pd.DataFrame({
        "token": vectorizer.get_feature_names_out(),
        "added_share": in_added / len(added), "champion_share": in_champion / len(champion),
    })
    tokens["log_ratio"] = np.log((in_added + 1) / (len(added) + 2)) - np.log((in_champion + 1) / (len(champion) + 2))
    common = np.maximum(in_added / len(added), in_champion / len(champion)) >= MIN_TOKEN_SHARE
    common &= np.maximum(in_added, in_champion) >= 3
    tokens = tokens[common].assign(strength=lambda t: t["log_ratio"].abs())
    tokens = tokens.nlargest(top, "strength").drop(columns="strength")
    tokens["more_in"] = np.where(tokens["log_ratio"] > 0, "added", "champion")
    return tokens.round({"added_share": 4, "champion_share": 4, "log_ratio": 3}).reset_index(drop=True)


class TextDriftCheck(ChangeCheck):
    """Out-of-fold AUC of a classifier telling the champion's rows from the rows added, and what tells them apart."""

    name = "text_drift"
    category = "drift"
    counts_rows = False
    retrains = False
    description = ("how well hashed word n-grams tell the rows added from the champion's rows "
                   "(out-of-fold AUC; 0.5: indistinguishable)")

    @classmethod
    def headline(cls, observed: dict[str, Any]) -> str:
        if "auc" not in observed:
            return super().headline(observed)
        shown = ", ".join(repr(token) for token in observed["top_tokens"][:3])
        return f"AUC {observed['auc']:.3f}" + (f" (e.g. {shown})" if shown else "")

    def plan(self, table: pd.DataFrame, comparison: Comparison) -> CheckPlan:
        import great_expectations.expectations as gxe
        from sklearn.metrics import roc_auc_score

        sides = drift_sides(table, comparison)
        if isinstance(sides, str):
            return self.not_judged(sides)
        champion, added = sides
        scored = table[table[DRIFT_COLUMN].notna()]  # the drift classifier's out-of-fold scores (compare.py)
        auc = float(roc_auc_score(scored[SIDE_COLUMN] == "tonight", scored[DRIFT_COLUMN]))
        tokens = separating_tokens(champion, added)
        config = comparison.config
        frame = self.figures({"auc": auc})
        expectations = [
            gxe.ExpectColumnValuesToBeBetween(
                column="auc", max_value=config.warn_drift_auc,
                **self.gx("warning", "the rows added read differently from the champion's", auc=round(auc, 4))),
            gxe.ExpectColumnValuesToBeBetween(
                column="auc", max_value=config.stop_drift_auc, strict_max=True,
                **self.gx("error", "the rows added are told apart from the champion's almost perfectly: tonight's "
                          "data looks like another task", auc=round(auc, 4))),
        ]
        observed = {"auc": round(auc, 4), "champion_rows": len(champion), "added_rows": len(added),
                    "top_tokens": tokens.loc[tokens["more_in"] == "added", "token"].tolist()}
        return CheckPlan(frame, expectations, observed | {"tokens": tokens.to_dict(orient="records")})

    def examples(self, table: pd.DataFrame, plan: CheckPlan, failing: list[Any], limit: int) -> list[dict[str, Any]]:
        """The tokens that separate the sides most."""
        return plan.observed["tokens"][:limit]


class ForeignRowsCheck(ChangeCheck):
    """Rows added that the drift classifier confidently tells from the champion's table, one by one: a block of
    another task, which rows of the same task around it dilute in a pooled AUC."""

    name = "foreign_rows"
    category = "drift"
    severity = "error"
    counts_rows = False  # it counts rows added itself (its derived frame is one row of figures)
    retrains = False
    description = ("rows added that the drift classifier scores above all but foreign_rate of the champion's own "
                   "rows: unlike anything the champion learned from")
    evidence_columns = ("row", "text", "label", DRIFT_COLUMN)
    evidence = (DRIFT_COLUMN,)

    @classmethod
    def headline(cls, observed: dict[str, Any]) -> str:
        if "rows" not in observed:
            return super().headline(observed)
        shown = ", ".join(repr(token) for token in observed.get("top_tokens", [])[:3])
        flagged = observed.get("flagged", observed["rows"])
        scored = observed.get("scored", observed["added_rows"])
        among = f" of the {scored} scored" if scored < observed["added_rows"] else ""
        of_added = f"{share:.1%} of the rows added, " if (share := observed.get("share_of_added")) is not None else ""
        return (f"{observed['rows']} of {observed['added_rows']} rows added look foreign "
                f"({of_added}{observed['fraction']:.1%} of the champion's table): {flagged}{among} flagged, less the "
                f"{observed.get('by_chance', 0):g} a row of the same task is flagged by chance"
                + (f", e.g. {shown}" if shown else ""))

    def plan(self, table: pd.DataFrame, comparison: Comparison) -> CheckPlan:
        import great_expectations.expectations as gxe

        added = side(table, "tonight", "added")
        scored = added[added[FOREIGN_COLUMN].notna()]
        if scored.empty:
            return self.not_judged(f"{len(added)} rows added; drift needs more on each side")
        flagged = scored[foreign(scored)]
        config = comparison.config
        chance = config.foreign_rate * (len(scored) - len(flagged))  # rows of the same task flagged by chance
        count = round(max(0.0, len(flagged) - chance) * len(added) / len(scored))  # scored: a sample of the added
        champion_rows = len(side(table, "champion"))
        fraction = count / champion_rows if champion_rows else 0.0
        tokens = (separating_tokens(sample(side(table, "champion"), config.max_rows)[NORMALIZED_COLUMN],
                                    flagged[NORMALIZED_COLUMN]) if len(flagged) >= 3 else pd.DataFrame())
        top = tokens.loc[tokens["more_in"] == "added", "token"].tolist() if len(tokens) else []
        expectation = gxe.ExpectColumnValuesToBeBetween(
            column="fraction", max_value=config.stop_foreign_fraction,
            **self.gx("error", "a block of the rows added reads like another task: training on it would teach the "
                      "model something else under these labels", rows=count, fraction=round(fraction, 4)),
        )
        observed = {"rows": count, "fraction": round(fraction, 6), "added_rows": len(added),
                    "share_of_added": round(count / len(added), 4), "top_tokens": top, "flagged": len(flagged),
                    "scored": len(scored), "by_chance": round(chance, 1)}
        columns = [column for column in self.evidence_columns if column in flagged.columns]
        suspects = flagged.sort_values(DRIFT_COLUMN, ascending=False)[columns].round({DRIFT_COLUMN: 4})
        return CheckPlan(self.figures({"fraction": fraction}), [expectation], observed,
                         suspects=[to_jsonable(record) for record in suspects.to_dict(orient="records")])

    def examples(self, table: pd.DataFrame, plan: CheckPlan, failing: list[Any], limit: int) -> list[dict[str, Any]]:
        """The rows added that look most foreign."""
        added = side(table, "tonight", "added")
        flagged = added[foreign(added)]
        columns = [column for column in self.evidence_columns if column in flagged.columns]
        rows = flagged.sort_values(DRIFT_COLUMN, ascending=False)[columns].head(limit)
        return [to_jsonable(record) for record in rows.round({DRIFT_COLUMN: 4}).to_dict(orient="records")]


class LengthShiftCheck(ChangeCheck):
    """Whether the rows added are longer or shorter than the champion's (Kolmogorov-Smirnov distance of word counts)."""

    name = "length_shift"
    category = "drift"
    counts_rows = False
    retrains = False
    description = "the word-count distribution of the rows added vs the champion's rows (Kolmogorov-Smirnov)"

    @classmethod
    def headline(cls, observed: dict[str, Any]) -> str:
        if "ks" not in observed:
            return super().headline(observed)
        return (f"KS {observed['ks']:.3f} (median words {observed['champion_median_words']:g} -> "
                f"{observed['added_median_words']:g})")

    def plan(self, table: pd.DataFrame, comparison: Comparison) -> CheckPlan:
        import great_expectations.expectations as gxe
        from scipy.stats import ks_2samp

        sides = drift_sides(table, comparison)
        if isinstance(sides, str):
            return self.not_judged(sides)
        champion, added = (texts.str.split().str.len() for texts in sides)
        ks = float(ks_2samp(champion, added).statistic)
        threshold = comparison.config.warn_length_shift
        expectation = gxe.ExpectColumnValuesToBeBetween(
            column="ks", max_value=threshold,
            **self.gx("warning", "the rows added have another length distribution", ks=round(ks, 4)))
        medians = {"champion_median_words": float(champion.median()), "added_median_words": float(added.median())}
        return CheckPlan(self.figures({"ks": ks, **medians}), [expectation], {"ks": round(ks, 4), **medians})

    def examples(self, table: pd.DataFrame, plan: CheckPlan, failing: list[Any], limit: int) -> list[dict[str, Any]]:
        return frame_examples(plan, failing, limit)
