"""`inconsistent_span_tags`: the same token span tagged as one entity type here and another (or O) there (noise).

Every entity mention's normalised tokens (up to MAX_SPAN_TOKENS of them) are looked up across the whole table.
An occurrence is tagged with the type of the mention it is exactly, or O when all its tokens are O; one that
overlaps another mention (inside a longer name, or straddling one) is another context, not a tagging, and not
counted. A span with two taggings or more is judged by a rule that spares legitimate readings:

- two entity types (Jordan the person, Jordan the country): the occurrences not of the span's commonest type
  are flagged, with that type as the likely one (on a tie for commonest, all its entity occurrences);
- entity and O: the O occurrences are flagged (a missed entity) only when the span is an entity in at least
  MIN_ENTITY_SHARE of its occurrences. A span that is O in most places and an entity in a few ("may", "apple")
  is more likely a word with two senses; such spans are counted and shown in `observed` only.

A warning: annotation guidelines differ on what a span is, and the evidence is for a reader to judge.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from depthfinder.expectations.audit.checks.base import Check, CheckPlan, to_jsonable
from depthfinder.expectations.audit.config import AuditConfig
from depthfinder.expectations.audit.token_labels import (
    OUTSIDE,
    TAGS_COLUMN,
    TOKENS_COLUMN,
    Mentions,
    Scheme,
    TaggedTokens,
    mentions,
    span_tags,
    tagged_tokens,
)
from depthfinder.expectations.audit.tokens import mix64

MIN_ENTITY_SHARE = 0.5
MAX_SPAN_TOKENS = 8
MAX_ROWS = 10
MOSTLY_OUTSIDE_SHOWN = 5
_BASE = np.uint64(0x100000001B3)  # odd: the window hash's polynomial base


def window_hashes(codes: np.ndarray, length: int) -> np.ndarray:
    """A 64-bit hash of each window of `length` consecutive token codes (window i starts at token i)."""
    count = max(len(codes) - length + 1, 0)
    hashes = np.zeros(count, dtype=np.uint64)
    for offset in range(length):
        hashes = mix64(hashes * _BASE + codes[offset : offset + count].astype(np.uint64) + np.uint64(1))
    return hashes


def span_occurrences(tokens: TaggedTokens, spans: Mentions) -> pd.DataFrame:
    """Every occurrence of a mention's normalised tokens: as a mention (`tagging` its type, `text` its normalised
    tokens) or all O (tagging and text ""); one record each with the span's hash `key`, its sentence (table
    position), first flat token (`start`), `position` in the sentence and `length`."""
    codes = pd.factorize(tokens.normalized)[0]
    entity_before = np.concatenate([[0], np.cumsum(tokens.prefix != OUTSIDE)])
    lengths = spans.length
    judged = (lengths <= MAX_SPAN_TOKENS) & (spans.text != "")
    parts = []
    for length in np.unique(lengths[judged]):
        hashes = window_hashes(codes, int(length))
        of_length = judged & (lengths == length)
        starts = spans.start[of_length]
        parts.append(pd.DataFrame({"key": hashes[starts], "tagging": spans.type[of_length],
                                   "text": spans.text[of_length], "start": starts, "length": length}))
        windows = np.flatnonzero(np.isin(hashes, hashes[starts]))
        windows = windows[tokens.sentence[windows] == tokens.sentence[windows + length - 1]]
        outside = windows[entity_before[windows + length] == entity_before[windows]]
        parts.append(pd.DataFrame({"key": hashes[outside], "tagging": "", "text": "", "start": outside,
                                   "length": length}))
    found = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame({
        "key": np.empty(0, np.uint64), "tagging": "", "text": "", "start": np.empty(0, np.int64),
        "length": np.empty(0, np.int64)})
    starts = found["start"].to_numpy(dtype=np.int64)
    return found.assign(sentence=tokens.sentence[starts], position=tokens.position[starts])


def judge_spans(occurrences: pd.DataFrame) -> pd.DataFrame:
    """Per span key with two taggings or more: counts per tagging ("" is O), the likely type (None on a tie) and
    whether its O occurrences are flagged (module docstring)."""
    counts = occurrences.groupby(["key", "tagging"]).size().unstack(fill_value=0)
    counts = counts[(counts > 0).sum(axis=1) >= 2]
    entity = counts[[column for column in counts.columns if column != ""]]
    outside = counts[""] if "" in counts.columns else pd.Series(0, index=counts.index)
    top = entity.max(axis=1)
    likely = entity.idxmax(axis=1).where((entity == top.to_numpy()[:, None]).sum(axis=1) == 1)
    share = entity.sum(axis=1) / (entity.sum(axis=1) + outside)
    return pd.DataFrame({"likely": likely, "flag_outside": share >= MIN_ENTITY_SHARE, "entity_share": share}).join(
        counts.rename(columns={"": OUTSIDE}))


class InconsistentSpanTagsCheck(Check):
    """Sentences where a span that is an entity elsewhere is tagged otherwise than the span mostly is."""

    name = "inconsistent_span_tags"
    category = "noise"
    severity = "warning"
    description = "the same token span tagged as different entity types, or as O where it is mostly an entity"
    evidence = ("span", "taggings", "likely", "flagged_rows")
    requires = (TOKENS_COLUMN, TAGS_COLUMN)

    @classmethod
    def headline(cls, observed: dict[str, Any]) -> str:
        if "inconsistent_spans" not in observed:
            return super().headline(observed)
        return (f"{observed['inconsistent_spans']} spans tagged two ways in {observed.get('rows', 0)} sentences "
                f"({observed['mostly_outside_spans']} mostly-O spans not flagged)")

    def plan(self, table: pd.DataFrame, config: AuditConfig) -> CheckPlan:
        """One row per sentence: how many of its span occurrences are flagged."""
        import great_expectations.expectations as gxe

        tokens = tagged_tokens(table)
        spans = mentions(tokens)
        occurrences = span_occurrences(tokens, spans)
        judged = judge_spans(occurrences)
        found = occurrences.join(judged[["likely", "flag_outside"]], on="key", how="inner")
        entity = found["tagging"] != ""
        flagged = (entity & (found["likely"].isna() | (found["tagging"] != found["likely"]))) | (
            ~entity & found["flag_outside"].astype(bool))
        self._found, self._judged = found.assign(flagged=flagged), judged
        self._texts = occurrences[occurrences["tagging"] != ""].groupby("key")["text"].first()
        per_sentence = np.bincount(found.loc[flagged, "sentence"].to_numpy(dtype=np.int64), minlength=len(table))
        frame = pd.DataFrame({"flagged_occurrences": per_sentence}, index=table.index)
        inconsistent = judged.index.isin(found.loc[flagged, "key"])
        mostly_outside = judged[~inconsistent]
        observed = {
            "inconsistent_spans": int(inconsistent.sum()), "flagged_occurrences": int(flagged.sum()),
            "min_entity_share": MIN_ENTITY_SHARE, "mostly_outside_spans": len(mostly_outside),
            "mostly_outside": [self._taggings(key) for key in mostly_outside.index[:MOSTLY_OUTSIDE_SHOWN]],
        }
        expectation = gxe.ExpectColumnValuesToBeBetween(
            column="flagged_occurrences", max_value=0,
            **self.gx("warning", "a span tagged one way in most places and another here is likely mis-tagged",
                      **{key: observed[key] for key in ("inconsistent_spans", "flagged_occurrences")}),
        )
        suspects = _suspects(table, self._found[self._found["flagged"]], tokens.scheme)
        return CheckPlan(frame=frame, expectations=[expectation], observed=observed, suspects=suspects)

    def _taggings(self, key: Any) -> dict[str, Any]:
        """A judged span as evidence: its text, and its occurrences per tagging."""
        counts = self._judged.loc[key].drop(["likely", "flag_outside", "entity_share"])
        return {"span": self._texts[key], "taggings": {tagging: int(n) for tagging, n in counts.items() if n}}

    def examples(self, table: pd.DataFrame, plan: CheckPlan, failing: list[Any], limit: int) -> list[dict[str, Any]]:
        """One example per inconsistent span, most flagged occurrences first: its taggings with counts and rows."""
        found = self._found
        by_span = found[found["flagged"]].groupby("key").size().sort_values(ascending=False, kind="stable")
        examples = []
        for key in by_span.index[:limit]:
            occurrences = found[found["key"] == key]
            rows = {
                tagging or OUTSIDE: _file_rows(table, group["sentence"])
                for tagging, group in occurrences.groupby("tagging", sort=False)
            }
            likely = self._judged.at[key, "likely"]
            examples.append(to_jsonable({
                **self._taggings(key), "likely": likely if isinstance(likely, str) else None, "rows": rows,
                "flagged_rows": _file_rows(table, occurrences.loc[occurrences["flagged"], "sentence"]),
            }))
        return examples


def _file_rows(table: pd.DataFrame, sentences: pd.Series) -> list[int]:
    """The `row` of the first MAX_ROWS distinct sentences (table positions)."""
    return table["row"].iloc[list(dict.fromkeys(sentences.tolist()))[:MAX_ROWS]].tolist()


def _suspects(table: pd.DataFrame, flagged: pd.DataFrame, scheme: Scheme) -> list[dict[str, Any]]:
    """Each sentence with a flagged occurrence: row, text, given tags (label), and the tags with its flagged spans
    retagged as the span mostly is (likely_label; None where a span's commonest type is a tie)."""
    suspects = []
    for sentence, group in flagged.groupby("sentence", sort=True):
        row = table.iloc[int(sentence)]
        likely: list[str] | None = list(row[TAGS_COLUMN])
        for position, length, entity_type in zip(group["position"], group["length"], group["likely"], strict=True):
            if likely is not None and isinstance(entity_type, str):
                likely[position : position + length] = span_tags(entity_type, int(length), scheme)
            else:
                likely = None
        suspects.append(to_jsonable({
            "row": row["row"], "text": row["text"], "label": " ".join(row[TAGS_COLUMN]),
            "likely_label": None if likely is None else " ".join(likely),
        }))
    return suspects
