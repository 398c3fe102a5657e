"""`tag_scheme_violations`: sentences whose tags break their scheme, BIO (IOB2) or BIOES (noise).

The scheme is read from the tags: any E- or S- tag makes the table BIOES, else it is BIO. In BIO an I-X must
follow a B-X or an I-X. In BIOES, besides, a B-X or I-X must be followed by an I-X or E-X, and an E-X must follow a
B-X or I-X (an S-X stands alone, so it breaks nothing itself; an unfinished span before it is that span's fault).
Each violating token is reported with the tag its neighbours call for: a span's lone token is S-X, its first B-X,
its last E-X, the rest I-X (BIO: B-X).

Strict entity scoring (seqeval's strict mode for IOB2 and BIOES) drops or splits such spans, so a violation is a
wrong label whatever a lenient reader makes of it. A few are typos (a warning); more than
MAX_VIOLATION_FRACTION of the sentences say the file is in another scheme than its tags look (IOB1, where I-X
opens a span, read as IOB2) or a converter dropped tags, so training is blocked.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from depthfinder.expectations.audit.checks.base import Check, CheckPlan, texts_of, to_jsonable
from depthfinder.expectations.audit.config import AuditConfig
from depthfinder.expectations.audit.token_labels import (
    CONTINUING,
    OPENING,
    TAGS_COLUMN,
    TOKENS_COLUMN,
    TaggedTokens,
    after_previous,
    tagged_tokens,
)

MAX_VIOLATION_FRACTION = 0.02
# The tag a token of type X should carry, by (a span of X runs into it, a span of X runs on after it).
EXPECTED_PREFIX = {(False, False): "S", (False, True): "B", (True, False): "E", (True, True): "I"}


def scheme_violations(tokens: TaggedTokens) -> pd.DataFrame:
    """One record per violating token: sentence (table position), position, token, tag and the expected tag."""
    count = len(tokens)
    same_type = tokens.type[1:] == tokens.type[:-1]
    same_sentence = tokens.sentence[1:] == tokens.sentence[:-1]
    opened_before = after_previous(np.isin(tokens.prefix[:-1], OPENING) & same_type & same_sentence, count)
    continued_after = np.concatenate([np.isin(tokens.prefix[1:], CONTINUING) & same_type & same_sentence,
                                      np.zeros(min(count, 1), dtype=bool)])
    prefix = tokens.prefix
    if tokens.scheme == "BIOES":
        broken = ((np.isin(prefix, OPENING) & ~continued_after) | (np.isin(prefix, CONTINUING) & ~opened_before))
        expected = np.array([EXPECTED_PREFIX[key] for key in zip(opened_before, continued_after, strict=True)],
                            dtype=object)
    else:
        broken = (prefix == "I") & ~opened_before
        expected = np.full(count, "B", dtype=object)
    where = np.flatnonzero(broken)
    return pd.DataFrame({
        "sentence": tokens.sentence[where], "position": tokens.position[where], "token": tokens.token[where],
        "tag": tokens.tag[where], "expected": expected[where] + "-" + tokens.type[where],
    })


class TagSchemeViolationsCheck(Check):
    """Sentences with a tag that breaks the table's tag scheme, with the token, its tag and the tag expected."""

    name = "tag_scheme_violations"
    category = "noise"
    severity = "warning"
    description = "sentences whose tags break their scheme (BIO: I-X not after B-X/I-X; BIOES: spans not closed)"
    evidence = ("tagged", "position", "token", "tag", "expected", "violations")
    requires = (TOKENS_COLUMN, TAGS_COLUMN)

    @classmethod
    def headline(cls, observed: dict[str, Any]) -> str:
        if "scheme" not in observed:
            return super().headline(observed)
        return (f"{observed['scheme']}: {observed['rows']} sentences ({100 * observed['fraction']:.2f} %) break it, "
                f"{observed['violating_tags']} tags")

    def plan(self, table: pd.DataFrame, config: AuditConfig) -> CheckPlan:
        """One row per sentence: how many of its tags break the scheme."""
        import great_expectations.expectations as gxe

        tokens = tagged_tokens(table)
        self._violations = scheme_violations(tokens)
        per_sentence = np.bincount(self._violations["sentence"], minlength=len(table))
        frame = pd.DataFrame({"violating_tags": per_sentence}, index=table.index)
        evidence = {"scheme": tokens.scheme, "max_fraction": MAX_VIOLATION_FRACTION}
        expectations = [
            gxe.ExpectColumnValuesToBeBetween(
                column="violating_tags", max_value=0, mostly=1 - MAX_VIOLATION_FRACTION,
                **self.gx("error", "so many sentences break the scheme that the file is likely in another one",
                          **evidence),
            ),
            gxe.ExpectColumnValuesToBeBetween(
                column="violating_tags", max_value=0,
                **self.gx("warning", "strict entity scoring drops or splits a span that breaks the scheme", **evidence),
            ),
        ]
        observed = {**evidence, "violating_tags": len(self._violations)}
        return CheckPlan(frame=frame, expectations=expectations, observed=observed, suspects=self._suspects(table))

    def _suspects(self, table: pd.DataFrame) -> list[dict[str, Any]]:
        """Every violating sentence: row, text, given tags (label) and the tags with each violating one replaced by
        the tag expected there (likely_label)."""
        suspects = []
        for sentence, group in self._violations.groupby("sentence", sort=True):
            row = table.iloc[int(sentence)]
            likely = list(row[TAGS_COLUMN])
            for position, expected in zip(group["position"], group["expected"], strict=True):
                likely[position] = expected
            suspects.append(to_jsonable({"row": row["row"], "text": row["text"], "label": " ".join(row[TAGS_COLUMN]),
                                         "likely_label": " ".join(likely)}))
        return suspects

    def examples(self, table: pd.DataFrame, plan: CheckPlan, failing: list[Any], limit: int) -> list[dict[str, Any]]:
        """The first violating sentences: the first violating token of each, and how many it has."""
        positions = table.index.get_indexer(failing[:limit])
        firsts = self._violations.groupby("sentence", sort=False).agg(
            position=("position", "first"), token=("token", "first"), tag=("tag", "first"),
            expected=("expected", "first"), violations=("tag", "size"),
        )
        examples = []
        for index, position in zip(failing[:limit], positions, strict=True):
            row = table.loc[index]
            examples.append(to_jsonable({
                "row": row["row"], **texts_of(row), **({"split": row["split"]} if "split" in row.index else {}),
                **firsts.loc[position].to_dict(),
            }))
        return examples
