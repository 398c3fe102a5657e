"""Whether a challenger earns `champion`: promotion's judgement, beside the depth rule it mirrors.

Both models label the same test rows; the paired bootstrap at the rule's confidence compares them on the rule's
metric, and the challenger is promoted unless the rows show it worse than the champion by more than the promotion
margin (`promotion_margin`, a setting of its own: loosening the depth rule's tolerance does not loosen it). This is
promotion's own question, asked with evidence.margin.shown_worse, not the depth rule's tie: a challenger
as good as the champion learned from the newer data, on more rows, and a nightly deployment that refused every
challenger on noise would never move (docs/selection.md). A pure comparison of labels: the registry moves the
aliases (tracking.registry.promote_if_better).

When tonight's table changed since the champion, the comparison is judged where it is fair: on the test rows the
champion was tested on too (expectations.changes.compare.standing), never on rows added since, above all not on rows
the what-changed check flagged foreign, which the challenger learned beside and the champion never could have; those
are scored and reported apart, and decide nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import Field

from depthfinder.evidence.bootstrap import Interval, paired_interval
from depthfinder.evidence.margin import shown_worse, within
from depthfinder.evidence.metrics import quality_metrics
from depthfinder.expectations.changes.compare import ADDED, FOREIGN, HELD_OUT, SEEN
from depthfinder.runtime.records import Record
from depthfinder.selection.settings import SelectionRule

# How each kind of test row reported apart reads, in the order it is reported.
APART = {FOREIGN: "added since and flagged foreign", ADDED: "added since",
         SEEN: "whose texts the champion learned from"}


class RowsApart(Record):
    """Test rows promotion did not judge on, with both models' scores on them: reported, never deciding."""

    standing: str = Field(description="foreign (added since the champion and flagged foreign by what changed), "
                          "added (since the champion), or seen (the champion trained or validated on their texts).")
    rows: int = Field(description="How many test rows.")
    challenger: float = Field(description="The challenger's metric on them.")
    champion: float = Field(description="The champion's.")

    def phrase(self) -> str:
        """`21 test rows added since and flagged foreign (challenger 0.952, champion 0.310)`."""
        return (f"{self.rows:,} test rows {APART[self.standing]} (challenger {self.challenger:.3f}, "
                f"champion {self.champion:.3f})")


class Judgement(Record):
    """How a challenger fared against the champion on the same test rows."""

    promoted: bool
    reason: str = Field(description="Why, in a sentence with the interval.")
    rows: int = Field(description="Test rows it was judged on: when the table changed since the champion, the "
                      "champion's own test rows still in tonight's test split; else every test row.")
    comparison: Interval | None = Field(
        None, description="The challenger's metric minus the champion's, with its paired bootstrap interval; none "
        "without a champion (or without a confidence)."
    )
    margin: float | None = Field(
        None, description="The promotion margin it was judged by (sweep.promotion_margin); none without a champion."
    )
    apart: list[RowsApart] = Field([], description="The test rows it was not judged on, by standing, with both "
                                   "models' scores on them.")
    challenger_metrics: dict[str, float] = Field({}, description="The challenger's metrics on the rows judged on.")
    champion_metrics: dict[str, float] | None = Field(None, description="The champion's, on the same rows.")


def should_promote(
    truths: Sequence[str], challenger: Sequence[str], champion: Sequence[str] | None, rule: SelectionRule,
    standing: Sequence[str] | None = None,
) -> Judgement:
    """Whether the challenger earns `champion`, by the same evidence the depth was chosen by.

    Args:
        truths: The test rows' labels.
        challenger: The challenger's labels for the same rows.
        champion: The champion's, or None when there is no champion (promoted).
        rule: Its metric, confidence and `promotion_margin` decide; without a confidence (null) the means are
            compared with the margin.
        standing: Each row's standing against the champion (expectations.changes.compare.standing), or None when
            it is not known (every row is judged on). Only the held-out rows are judged on, while there are any;
            the others are reported apart.

    Returns:
        The judgement: promoted unless the rows show the challenger worse by more than the margin (the upper end
        of the interval of challenger − champion below −margin), why, the interval, and the rows reported apart.
    """
    if champion is None:
        return Judgement(promoted=True, reason="no champion yet", rows=len(truths),
                         challenger_metrics=quality_metrics(list(truths), list(challenger), rule.metric))
    if not len(truths) == len(challenger) == len(champion) > 0 or standing is not None and len(standing) != len(truths):
        raise ValueError(f"the challenger and the champion must label the same non-empty test rows, got "
                         f"{len(truths)} rows, {len(challenger)} and {len(champion)} labels")
    stands = np.full(len(truths), HELD_OUT) if standing is None else np.asarray(standing)
    judged = stands == HELD_OUT if (stands == HELD_OUT).any() else np.ones(len(truths), dtype=bool)
    apart = [_apart(group, truths, challenger, champion, stands == group, rule.metric)
             for group in APART if (stands[~judged] == group).any()]
    truths, challenger, champion = ([labels[i] for i in np.flatnonzero(judged)]
                                    for labels in (truths, challenger, champion))
    judgement = _judge_promotion(truths, challenger, champion, rule, _rows_phrase(len(truths), stands))
    if not apart:
        return judgement
    reported = f"; apart, deciding nothing: {', '.join(rows.phrase() for rows in apart)}"
    return judgement.model_copy(update={"apart": apart, "reason": judgement.reason + reported})


def _judge_promotion(truths: list[str], challenger: list[str], champion: list[str], rule: SelectionRule,
            rows: str) -> Judgement:
    """The judgement on the rows it is judged on (`rows`: how the sentence names them)."""
    metric, margin, confidence = rule.metric, rule.promotion_margin, rule.confidence
    scores = {"challenger_metrics": quality_metrics(truths, challenger, metric),
              "champion_metrics": quality_metrics(truths, champion, metric)}
    if confidence is None:
        mine, theirs = (scores[side][metric] for side in scores)
        worse = not within(mine - theirs, margin)
        reason = (f"test {metric} {mine:.3f} vs champion {theirs:.3f} {rows}: "
                  + (f"worse by more than the tolerance {margin:g}; not promoted" if worse else
                     f"within the tolerance {margin:g}; promoted"))
        return Judgement(promoted=not worse, reason=reason, rows=len(truths), margin=margin, **scores)
    interval = paired_interval(truths, challenger, champion, metric, confidence)
    worse = shown_worse(interval.high, margin)
    verdict = (f"shown worse by more than the tolerance {margin:g}; not promoted" if worse
               else "not shown worse; promoted")
    reason = f"challenger {interval.text()} vs champion {rows} ({metric}, {confidence:.0%} interval): {verdict}"
    return Judgement(promoted=not worse, reason=reason, rows=len(truths), comparison=interval, margin=margin,
                     **scores)


def _rows_phrase(judged: int, stands: np.ndarray) -> str:
    """`on 1,000 test rows`, saying which they are when the table changed since the champion."""
    if (stands == HELD_OUT).all():
        return f"on {judged:,} test rows"
    if not (stands == HELD_OUT).any():
        return f"on {judged:,} test rows (none of them the champion's own test rows)"
    return f"on the champion's own {judged:,} test rows"


def _apart(standing: str, truths: Sequence[str], challenger: Sequence[str], champion: Sequence[str],
           rows: np.ndarray, metric: str) -> RowsApart:
    """Both models' `metric` on the rows of one standing."""
    picked = np.flatnonzero(rows)
    truth = [truths[i] for i in picked]
    mine, theirs = (quality_metrics(truth, [labels[i] for i in picked], metric)[metric]
                    for labels in (challenger, champion))
    return RowsApart(standing=standing, rows=len(picked), challenger=mine, champion=theirs)
