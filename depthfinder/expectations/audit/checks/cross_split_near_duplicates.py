"""`cross_split_near_duplicates`: near-identical (not equal) texts in two splits, by MinHash/LSH."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from depthfinder.expectations.audit.checks.base import (
    KEY_COLUMN,
    NORMALIZED_COLUMN,
    PAIR_COLUMN,
    USABLE_COLUMN,
    Check,
    CheckPlan,
    texts_of,
    to_jsonable,
)
from depthfinder.expectations.audit.config import AuditConfig
from depthfinder.expectations.table.near_duplicates import NearDuplicatePairs, near_duplicate_pairs

MAX_MATCHES = 20
SPLIT_BITS = {"train": 1, "val": 2, "test": 4}
EVALUATION_SPLITS = ("val", "test")


@dataclass(frozen=True)
class NearDuplicateMatches:
    """Near-duplicate pairs between the distinct usable texts of a table, and which rows straddle splits.

    `codes[i]` is row i's distinct-text index (-1 for rows without a usable token);
    `pairs` index distinct texts; `leaking[i]` is True when row i has a near-duplicate
    (another distinct text) with a row in a split other than row i's.
    """

    codes: np.ndarray
    pairs: NearDuplicatePairs
    leaking: np.ndarray
    neighbour_splits: np.ndarray  # per distinct text: bit mask of the splits its near-duplicates are in

    def neighbours(self, code: int) -> tuple[np.ndarray, np.ndarray]:
        """Distinct texts paired with `code`, and the similarities."""
        left, right = self.pairs.left == code, self.pairs.right == code
        others = np.concatenate([self.pairs.right[left], self.pairs.left[right]])
        return others, np.concatenate([self.pairs.similarity[left], self.pairs.similarity[right]])


def find_near_duplicates(table: pd.DataFrame, threshold: float) -> NearDuplicateMatches:
    """Near-duplicate pairs among the table's distinct usable texts, and rows that straddle splits.

    Args:
        table: the audit table (needs the normalised text, key, usability and `split`).
        threshold: estimated Jaccard similarity at which texts are near-duplicates.
    """
    usable = table[USABLE_COLUMN].to_numpy(dtype=bool)
    codes = np.full(len(table), -1, dtype=np.int64)
    usable_codes, _ = pd.factorize(table.loc[usable, KEY_COLUMN])
    codes[usable] = usable_codes
    count = int(usable_codes.max()) + 1 if len(usable_codes) else 0
    first_rows = np.flatnonzero(usable)[np.unique(usable_codes, return_index=True)[1]]
    pairs = near_duplicate_pairs(table[NORMALIZED_COLUMN].to_numpy(dtype=object)[first_rows].tolist(), threshold)
    row_bits = table["split"].map(SPLIT_BITS).fillna(0).to_numpy(dtype=np.int64)
    text_bits = np.zeros(count, dtype=np.int64)
    np.bitwise_or.at(text_bits, usable_codes, row_bits[usable])
    neighbour_bits = np.zeros(count, dtype=np.int64)
    np.bitwise_or.at(neighbour_bits, pairs.left, text_bits[pairs.right])
    np.bitwise_or.at(neighbour_bits, pairs.right, text_bits[pairs.left])
    leaking = np.zeros(len(table), dtype=bool)
    leaking[usable] = (neighbour_bits[usable_codes] & ~row_bits[usable]) != 0
    return NearDuplicateMatches(codes=codes, pairs=pairs, leaking=leaking, neighbour_splits=neighbour_bits)


class CrossSplitNearDuplicatesCheck(Check):
    """Rows with a near-duplicate (estimated Jaccard >= `near_duplicate_threshold`) in another split.

    Exact duplicates after normalisation are `cross_split_duplicates`' business; this
    check pairs distinct normalised texts only. Any straddling pair is a warning; more
    than `max_near_duplicate_fraction` of the val+test rows with a near-duplicate in
    another split is an error. Two derived columns carry the two severities: one per
    row (0/1), and one for val/test rows only (null for train rows), so GX's `mostly`
    counts evaluation rows. In a pairs table a text is the whole pair (both normalised sides
    joined, in order), so a pair is a near-copy of a pair; one side reused alone is
    `cross_split_shared_sides`' business.
    """

    name = "cross_split_near_duplicates"
    category = "leakage"
    severity = "error"
    description = "near-identical texts in two splits (MinHash/LSH): evaluation rows the model has nearly seen"
    evidence = ("similarity", "matches")
    requires = ("text", "split")

    def plan(self, table: pd.DataFrame, config: AuditConfig) -> CheckPlan:
        """One row per table row: whether it has a near-duplicate in another split (and, for val/test, again)."""
        import great_expectations.expectations as gxe

        self._matches = find_near_duplicates(table, config.near_duplicate_threshold)
        leaking = self._matches.leaking
        evaluation = table["split"].isin(EVALUATION_SPLITS).to_numpy()
        frame = pd.DataFrame({
            "near_duplicate_in_other_split": leaking.astype("int8"),
            "evaluation_row_leaks": np.where(evaluation, leaking.astype(np.float64), np.nan),
        }, index=table.index)
        leaking_evaluation = int((leaking & evaluation).sum())
        share = leaking_evaluation / max(int(evaluation.sum()), 1)
        evidence = {
            "threshold": config.near_duplicate_threshold, "rows": int(leaking.sum()),
            "evaluation_rows": leaking_evaluation, "evaluation_fraction": round(share, 6),
            "max_evaluation_fraction": config.max_near_duplicate_fraction,
        }
        expectations = [
            gxe.ExpectColumnValuesToBeBetween(
                column="near_duplicate_in_other_split", max_value=0,
                **self.gx("warning", "a near-copy of a training text makes evaluation optimistic", **evidence),
            ),
            gxe.ExpectColumnValuesToBeBetween(
                column="evaluation_row_leaks", max_value=0, mostly=1 - config.max_near_duplicate_fraction,
                **self.gx("error", "too many evaluation rows have a near-copy in another split", **evidence),
            ),
        ]
        observed = {key: value for key, value in evidence.items() if key != "rows"}
        observed["near_duplicate_pairs"] = len(self._matches.pairs)
        return CheckPlan(frame=frame, expectations=expectations, observed=observed)

    def examples(self, table: pd.DataFrame, plan: CheckPlan, failing: list[Any], limit: int) -> list[dict[str, Any]]:
        """Evaluation-side rows first, each matched to its near-duplicates' rows in other splits."""
        matches = self._matches
        rank = table.loc[failing, "split"].map({"test": 0, "val": 1}).fillna(2).to_numpy()
        ordered = [failing[i] for i in np.argsort(rank, kind="stable")]
        examples, seen = [], set()
        for index in ordered:
            code = int(matches.codes[index])
            if code in seen:
                continue
            seen.add(code)
            row = table.loc[index]
            neighbours, similarity = matches.neighbours(code)
            rows = table.index[np.isin(matches.codes, neighbours) & (table["split"] != row["split"]).to_numpy()]
            best = {int(n): float(s) for n, s in zip(neighbours, similarity, strict=True)}
            examples.append(to_jsonable({
                "row": row["row"], **texts_of(row), "split": row["split"],
                "matches": table.loc[rows[:MAX_MATCHES], "row"].tolist(),
                "match_splits": sorted(set(table.loc[rows, "split"])),
                "match_texts": table.loc[rows[:2], "text"].tolist(),
                **({"match_pairs": table.loc[rows[:2], PAIR_COLUMN].tolist()} if PAIR_COLUMN in table.columns else {}),
                "similarity": round(max(best[int(matches.codes[r])] for r in rows), 3) if len(rows) else None,
            }))
            if len(examples) >= limit:
                break
        return examples
