"""`label_in_text`: a token or word bigram that alone gives a class away, such as a tag planted in the text.

A real predictive word ("free" in spam) is in a minority of its class's rows and in some
rows of other classes. A planted tag ("[spam]" appended to every spam message, a
"label: positive" left over from annotation) is in (nearly) every row of one class
and (nearly) nowhere else. So a token gives the label away when, over at least
`label_token_min_rows` rows, at least `label_token_min_purity` of its rows are in one
class and it covers at least `label_token_min_coverage` of that class (a warning) or
BLOCK_COVERAGE of it (an error: the model would learn the tag, not the task). A
class's own name needs only half the warning coverage.

In a pairs table the tokens are those of both sides (joined by a "/" that no side holds, so
no bigram spans the two): a tag planted on either side is found. A side that gives the label
away as a whole, not by one token, is `one_side_baseline`'s business.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from depthfinder.expectations.audit.checks.base import (
    KEY_COLUMN,
    NORMALIZED_COLUMN,
    USABLE_COLUMN,
    Check,
    CheckPlan,
    texts_of,
    to_jsonable,
)
from depthfinder.expectations.audit.config import AuditConfig
from depthfinder.expectations.audit.tokens import Tokens, text_buffer, word_bigrams, word_tokens
from depthfinder.expectations.table.normalize import normalize_text

BLOCK_COVERAGE = 0.9
PREFILTER_BUCKETS = 1 << 22
MAX_TOKENS_SHOWN = 10
TOKEN_COLUMNS = ["token", "label", "rows", "purity", "coverage", "label_name", "blocks"]


@dataclass(frozen=True)
class GiveawayTokens:
    """Tokens that give a class away, and which rows hold one."""

    tokens: pd.DataFrame  # token, label, rows, purity, coverage, label_name, blocks
    row_hits: np.ndarray  # per row: how many of the giveaway tokens it holds
    row_blocking_hits: np.ndarray  # per row: how many blocking (coverage >= BLOCK_COVERAGE) ones


def find_giveaway_tokens(table: pd.DataFrame, config: AuditConfig) -> GiveawayTokens:
    """Token and bigram row counts per class over the distinct usable texts, and the tokens that give a class away."""
    usable = table[USABLE_COLUMN].to_numpy(dtype=bool)
    codes, _ = pd.factorize(table.loc[usable, KEY_COLUMN])
    label_codes, classes = pd.factorize(table.loc[usable, "label"].astype("str"))
    n_texts, n_classes = int(codes.max(initial=-1)) + 1, len(classes)
    text_class_rows = np.bincount(codes * n_classes + label_codes, minlength=n_texts * n_classes)
    text_class_rows = text_class_rows.reshape(n_texts, n_classes).astype(np.float64)
    class_rows = text_class_rows.sum(axis=0)
    first_rows = np.flatnonzero(usable)[np.unique(codes, return_index=True)[1]]
    buffer = text_buffer(table[NORMALIZED_COLUMN].to_numpy(dtype=object)[first_rows].tolist())
    unigrams = word_tokens(buffer)
    # The rarest class decides how few rows a giveaway token can have.
    least = max(config.label_token_min_rows, config.label_token_min_coverage / 2 * class_rows.min(initial=np.inf))
    text_rows = text_class_rows.sum(axis=1)
    grams = _concat(_frequent(unigrams, text_rows, least), _frequent(word_bigrams(unigrams), text_rows, least))
    unique_hashes, first, token_of = np.unique(grams.hash, return_index=True, return_inverse=True)
    n_tokens = len(unique_hashes)
    pairs = np.unique(grams.text * max(n_tokens, 1) + token_of)  # each token once per text
    pair_text, pair_token = pairs // max(n_tokens, 1), pairs % max(n_tokens, 1)
    counts = np.zeros((n_tokens, n_classes))
    for label in range(n_classes):
        counts[:, label] = np.bincount(pair_token, weights=text_class_rows[pair_text, label], minlength=n_tokens)
    stats = _token_stats(counts, class_rows)
    candidates = np.flatnonzero(
        (stats["rows"] >= config.label_token_min_rows) & (stats["purity"] >= config.label_token_min_purity)
        & (stats["coverage"] >= config.label_token_min_coverage / 2)
    )
    records = []
    for token in candidates:
        text = buffer.decode(int(grams.start[first[token]]), int(grams.end[first[token]]))
        label = classes[stats["best"][token]]
        label_name = text == normalize_text(str(label))
        if stats["coverage"][token] >= config.label_token_min_coverage or label_name:
            records.append({
                "token": text, "label": label, "rows": int(stats["rows"][token]),
                "purity": round(float(stats["purity"][token]), 4),
                "coverage": round(float(stats["coverage"][token]), 4), "label_name": label_name,
                "blocks": bool(stats["coverage"][token] >= BLOCK_COVERAGE), "id": int(token),
            })
    tokens = pd.DataFrame.from_records(records, columns=[*TOKEN_COLUMNS, "id"])
    tokens = tokens.sort_values(["coverage", "rows"], ascending=False, ignore_index=True)
    return GiveawayTokens(
        tokens=tokens.drop(columns="id"),
        row_hits=_row_hits(tokens["id"], pair_text, pair_token, codes, usable),
        row_blocking_hits=_row_hits(tokens.loc[tokens["blocks"], "id"], pair_text, pair_token, codes, usable),
    )


def _token_stats(counts: np.ndarray, class_rows: np.ndarray) -> dict[str, np.ndarray]:
    """Per token: rows, its most frequent class, purity (share of its rows there) and coverage of that class."""
    rows = counts.sum(axis=1)
    best = counts.argmax(axis=1) if len(counts) else np.zeros(0, dtype=np.int64)
    best_rows = counts[np.arange(len(counts)), best]
    return {
        "rows": rows, "best": best, "purity": best_rows / np.maximum(rows, 1),
        "coverage": best_rows / np.maximum(class_rows[best], 1),
    }


def _concat(first: Tokens, second: Tokens) -> Tokens:
    """Two token sets as one."""
    return Tokens(*(np.concatenate([getattr(first, f), getattr(second, f)]) for f in ("text", "hash", "start", "end")))


def _frequent(grams: Tokens, text_rows: np.ndarray, least: float) -> Tokens:
    """Only the tokens whose hash bucket holds at least `least` rows (a cheap superset of frequent tokens)."""
    buckets = (grams.hash % np.uint64(PREFILTER_BUCKETS)).astype(np.int64)
    bucket_rows = np.bincount(buckets, weights=text_rows[grams.text], minlength=PREFILTER_BUCKETS)
    keep = bucket_rows[buckets] >= least
    return Tokens(text=grams.text[keep], hash=grams.hash[keep], start=grams.start[keep], end=grams.end[keep])


def _row_hits(
    token_ids: pd.Series, pair_text: np.ndarray, pair_token: np.ndarray, codes: np.ndarray, usable: np.ndarray
) -> np.ndarray:
    """Per table row: how many of `token_ids` its text holds."""
    held = pair_text[np.isin(pair_token, token_ids.to_numpy())]
    per_text = np.bincount(held, minlength=int(codes.max(initial=-1)) + 1)
    hits = np.zeros(len(usable), dtype=np.int64)
    hits[usable] = per_text[codes]
    return hits


class LabelInTextCheck(Check):
    """Rows holding a token that alone gives their class away (see the module docstring)."""

    name = "label_in_text"
    category = "leakage"
    severity = "error"
    description = "a token or bigram (a planted tag, the label's own name) that alone gives the label away"
    evidence = ("token", "rows", "purity", "coverage")

    @classmethod
    def headline(cls, observed: dict[str, Any]) -> str:
        return f"{len(observed.get('tokens', []))} giveaway tokens"
    requires = ("text", "label")

    def plan(self, table: pd.DataFrame, config: AuditConfig) -> CheckPlan:
        """One row per table row: how many giveaway tokens (and blocking ones) its text holds."""
        import great_expectations.expectations as gxe

        found = find_giveaway_tokens(table, config)
        self._tokens = found.tokens
        frame = pd.DataFrame(
            {"giveaway_tokens": found.row_hits, "blocking_giveaway_tokens": found.row_blocking_hits}, index=table.index
        )
        shown = to_jsonable(found.tokens.head(MAX_TOKENS_SHOWN).to_dict(orient="records"))
        thresholds = {
            "min_purity": config.label_token_min_purity, "min_coverage": config.label_token_min_coverage,
            "block_coverage": BLOCK_COVERAGE, "min_rows": config.label_token_min_rows,
        }
        expectations = [
            gxe.ExpectColumnValuesToBeBetween(
                column="giveaway_tokens", max_value=0,
                **self.gx("warning", "a token that nearly only one class has is a shortcut, not the task",
                          tokens=shown, **thresholds),
            ),
            gxe.ExpectColumnValuesToBeBetween(
                column="blocking_giveaway_tokens", max_value=0,
                **self.gx("error", "a token in (nearly) every row of one class and no other gives the label away",
                          tokens=[t for t in shown if t["blocks"]], **thresholds),
            ),
        ]
        return CheckPlan(frame=frame, expectations=expectations, observed={"tokens": shown, **thresholds})

    def examples(self, table: pd.DataFrame, plan: CheckPlan, failing: list[Any], limit: int) -> list[dict[str, Any]]:
        """One example per giveaway token: its statistics and the first row that holds it."""
        padded = " " + table.loc[failing, NORMALIZED_COLUMN] + " "
        examples = []
        for token in self._tokens.head(limit).to_dict(orient="records"):
            holds = padded.str.contains(f" {token['token']} ", regex=False).to_numpy()
            example = dict(token)
            if holds.any():
                first = table.loc[padded.index[int(holds.argmax())]]
                example.update({"row": first["row"], **texts_of(first), "split": first.get("split")})
            examples.append(to_jsonable(example))
        return examples
