"""`token_label_noise`: tokens whose tag disagrees with out-of-fold predictions (confident learning per token).

`suspected_label_noise` for token tables: a whole sentence's tag string is nearly unique, so the row-level
check would learn nothing; here every token is an example. The baseline reads a token, its shape ("Xxxx", "dd"),
its first and last three characters, and the words and shapes of the tokens either side (hashed), and a logistic
regression predicts its tag out of fold (audit/baseline.py; pairs of features took half as long again and read
no better on the test tables). The folds split by
sentence, so a token is never scored by a model that read the rest of its sentence. cleanlab's
`find_label_issues` over the tag classes then flags as many tokens as it estimates are mistagged, those with
the lowest probability of their own tag, so the flagged share is the estimated noise rate over tokens.

As with `suspected_label_noise`, the estimate is only as good as the baseline (a tag that needs more than a
token's neighbours to read looks noisy), hence a warning above `label_noise_warn_fraction` of the judged tokens
and an error above `max_label_noise_fraction` only. Tags with fewer than FOLDS tokens are not judged. On more than
`noise_max_rows` sentences, or more than MAX_TOKENS tokens, a random sample of whole sentences is judged.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from depthfinder.expectations.audit.baseline import FOLDS, out_of_fold_probabilities
from depthfinder.expectations.audit.checks.base import Check, CheckPlan, texts_of, to_jsonable
from depthfinder.expectations.audit.config import AuditConfig
from depthfinder.expectations.audit.token_labels import (
    TAGS_COLUMN,
    TOKENS_COLUMN,
    TaggedTokens,
    tagged_tokens,
)

SAMPLE_SEED = 0
# Tokens judged at most (whole sentences sampled down to it): keeps the check to seconds on a large table.
MAX_TOKENS = 50_000
MAX_FLAGGED_SHOWN = 5
AFFIX = 3


def word_shape(token: str) -> str:
    """A token's shape, runs of one kind of character collapsed: "McDonald's" -> "XxXx'x", "2024" -> "d"."""
    kinds = ["X" if char.isupper() else "x" if char.islower() else "d" if char.isdigit() else char for char in token]
    return "".join(kind for i, kind in enumerate(kinds) if i == 0 or kind != kinds[i - 1])


def token_features(tokens: TaggedTokens) -> list[str]:
    """What the baseline reads of each token: its word, shape and affixes, and its neighbours' words and shapes."""
    codes, uniques = pd.factorize(tokens.token)
    words = np.array(["".join(token.lower().split()) or "_" for token in uniques], dtype=object)
    shapes = np.array([word_shape("".join(token.split())) or "_" for token in uniques], dtype=object)
    word, shape = words[codes], shapes[codes]
    first = ~tokens.same_sentence_as_previous()
    last = np.concatenate([first[1:], [True]]) if len(tokens) else first
    previous_word = np.where(first, "<s>", np.roll(word, 1))
    next_word = np.where(last, "</s>", np.roll(word, -1))
    previous_shape = np.where(first, "<s>", np.roll(shape, 1))
    next_shape = np.where(last, "</s>", np.roll(shape, -1))
    prefix = np.array([text[:AFFIX] for text in words], dtype=object)[codes]
    suffix = np.array([text[-AFFIX:] for text in words], dtype=object)[codes]
    features = ("w=" + word + " s=" + shape + " p=" + prefix + " x=" + suffix + " pw=" + previous_word + " ps="
                + previous_shape + " nw=" + next_word + " ns=" + next_shape)
    return features.tolist()


def tokens_to_judge(tokens: TaggedTokens, max_sentences: int) -> tuple[np.ndarray, bool, str]:
    """Flat indices of the tokens to judge: whole sentences sampled down to the caps, tags with fewer than FOLDS
    tokens left out; (tokens, sampled, note)."""
    sentences, counts = np.unique(tokens.sentence, return_counts=True)
    notes = []
    keep = len(sentences)
    if len(sentences) > max_sentences or counts.sum() > MAX_TOKENS:
        order = np.random.default_rng(SAMPLE_SEED).permutation(len(sentences))
        keep = min(max_sentences, max(int(np.searchsorted(np.cumsum(counts[order]), MAX_TOKENS, side="right")), 1))
        kept = np.zeros(len(sentences), dtype=bool)
        kept[order[:keep]] = True
        chosen = np.isin(tokens.sentence, sentences[kept])
        notes.append(f"judged a random sample of {keep:,} of {len(sentences):,} sentences")
    else:
        chosen = np.ones(len(tokens), dtype=bool)
    tags = pd.Series(tokens.tag[chosen])
    small = tags.value_counts()[lambda counts: counts < FOLDS].index.tolist()
    if small:
        chosen &= ~np.isin(tokens.tag, small)
        notes.append(f"tags with fewer than {FOLDS} tokens not judged: {', '.join(small[:10])}")
    return np.flatnonzero(chosen), keep < len(sentences), "; ".join(notes)


class TokenLabelNoiseCheck(Check):
    """Sentences with tokens cleanlab flags as probably mistagged, with their given and likely tags."""

    name = "token_label_noise"
    category = "noise"
    severity = "warning"
    description = "tokens whose tag disagrees with out-of-fold predictions of a per-token baseline (confident learning)"
    evidence = ("tagged", "flagged_tokens")
    requires = (TOKENS_COLUMN, TAGS_COLUMN)

    @classmethod
    def headline(cls, observed: dict[str, Any]) -> str:
        if "not_judged" in observed:
            return f"not estimated: {observed['not_judged']}"
        if "flagged_tokens" not in observed:
            return super().headline(observed)
        sampled = ", sampled" if observed.get("sampled") else ""
        return (f"estimated token noise {100 * observed['fraction']:.1f} % ({observed['flagged_tokens']} of "
                f"{observed['judged_tokens']} tokens judged{sampled}, in {observed['flagged_sentences']} sentences)")

    def plan(self, table: pd.DataFrame, config: AuditConfig) -> CheckPlan:
        """One row per judged token, indexed by its sentence: suspected (1/0; null when not estimated),
        self-confidence and likely tag."""
        import great_expectations.expectations as gxe
        from cleanlab.filter import find_label_issues

        tokens = tagged_tokens(table)
        judged, sampled, note = tokens_to_judge(tokens, config.noise_max_rows)
        labels, classes = pd.factorize(tokens.tag[judged])
        frame = pd.DataFrame({
            "suspected": np.full(len(judged), np.nan), "self_confidence": np.full(len(judged), np.nan),
            "likely_tag": tokens.tag[judged], "position": tokens.position[judged], "token": tokens.token[judged],
            "tag": tokens.tag[judged],
        }, index=table.index[tokens.sentence[judged]])
        observed: dict[str, Any] = {"judged_tokens": len(judged), "sampled": sampled}
        if note:
            observed["note"] = note
        if len(classes) >= 2 and len(np.unique(tokens.sentence[judged])) >= FOLDS:
            features = np.asarray(token_features(tokens), dtype=object)[judged].tolist()
            probabilities = out_of_fold_probabilities(
                features, labels, groups=tokens.sentence[judged], longest_ngram=1)
            issues = find_label_issues(labels, probabilities, filter_by="low_self_confidence")
            frame["suspected"] = issues.astype(np.float64)
            frame["self_confidence"] = probabilities[np.arange(len(labels)), labels]
            frame["likely_tag"] = np.asarray(classes, dtype=object)[probabilities.argmax(axis=1)]
            observed.update({
                "flagged_tokens": int(issues.sum()), "fraction": round(float(issues.mean()), 6),
                "flagged_sentences": int(frame.index[issues].nunique()),
            })
        else:
            observed["not_judged"] = f"fewer than two tags with {FOLDS} tokens each, or fewer than {FOLDS} sentences"
        thresholds = {
            "warn_fraction": config.label_noise_warn_fraction, "max_fraction": config.max_label_noise_fraction,
        }
        observed.update(thresholds)
        evidence = {**thresholds, "estimated_fraction": observed.get("fraction"), "judged_tokens": len(judged)}
        expectations = [
            gxe.ExpectColumnValuesToBeBetween(
                column="suspected", max_value=0, mostly=1 - config.label_noise_warn_fraction,
                **self.gx("warning", "these tags disagree with a model that never saw their sentence", **evidence),
            ),
            gxe.ExpectColumnValuesToBeBetween(
                column="suspected", max_value=0, mostly=1 - config.max_label_noise_fraction,
                **self.gx("error", "too many tags look wrong to train on", **evidence),
            ),
        ]
        self._flagged = frame[frame["suspected"] == 1]
        return CheckPlan(frame=frame, expectations=expectations, observed=observed, suspects=self._suspects(table))

    def _sentences(self) -> pd.Index:
        """The flagged sentences, the one with the least confident flagged token first."""
        weakest = self._flagged.groupby(level=0)["self_confidence"].min()
        return weakest.sort_values(kind="stable").index

    def _suspects(self, table: pd.DataFrame) -> list[dict[str, Any]]:
        """Every flagged sentence: row, text, given tags (label) and the tags with its flagged tokens' likely tags."""
        suspects = []
        for index in self._sentences():
            row, likely = table.loc[index], list(table.at[index, TAGS_COLUMN])
            for position, tag in self._flagged.loc[[index], ["position", "likely_tag"]].itertuples(index=False):
                likely[position] = tag
            suspects.append(to_jsonable({"row": row["row"], "text": row["text"], "label": " ".join(row[TAGS_COLUMN]),
                                         "likely_label": " ".join(likely)}))
        return suspects

    def examples(self, table: pd.DataFrame, plan: CheckPlan, failing: list[Any], limit: int) -> list[dict[str, Any]]:
        """The most suspicious flagged sentences, each with its flagged tokens: position, token, tag -> likely tag."""
        examples = []
        for index in self._sentences()[:limit]:
            row = table.loc[index]
            flagged = self._flagged.loc[[index]].sort_values("position")
            examples.append(to_jsonable({
                "row": row["row"], **texts_of(row), **({"split": row["split"]} if "split" in row.index else {}),
                "flagged_tokens": [
                    f"{position} {token!r} {tag} -> {likely} ({confidence:.2f})"
                    for position, token, tag, likely, confidence in flagged[
                        ["position", "token", "tag", "likely_tag", "self_confidence"]].itertuples(index=False)
                ][:MAX_FLAGGED_SHOWN],
            }))
        return examples
