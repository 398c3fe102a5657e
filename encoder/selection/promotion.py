"""Whether a challenger earns `champion`: promotion's judgement, beside the depth rule it mirrors.

Both models label the same test rows; the paired bootstrap at the rule's confidence compares them on the rule's
metric, and the challenger is promoted unless the rows show it worse than the champion by more than the promotion
margin (`promotion_margin`, a setting of its own: loosening the depth rule's tolerance does not loosen it). This is
promotion's own question, asked with encoder.selection.margin.shown_worse, not the depth rule's tie: a challenger
as good as the champion learned from the newer data, on more rows, and a nightly deployment that refused every
challenger on noise would never move (docs/selection.md). A pure comparison of labels: the registry moves the
aliases (encoder.tracking.registry.promote_if_better).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from encoder.metrics import classification_metrics
from encoder.selection.candidate import Record
from encoder.selection.evidence import Interval, paired_interval
from encoder.selection.margin import shown_worse, within
from encoder.selection.rule import SelectionRule


class Judgement(Record):
    """How a challenger fared against the champion on the same test rows."""

    promoted: bool
    reason: str = Field(description="Why, in a sentence with the interval.")
    rows: int = Field(description="Test rows both were scored on.")
    comparison: Interval | None = Field(
        None, description="The challenger's metric minus the champion's, with its paired bootstrap interval; none "
        "without a champion (or without a confidence)."
    )
    margin: float | None = Field(
        None, description="The promotion margin it was judged by (sweep.promotion_margin); none without a champion."
    )


def should_promote(
    truths: Sequence[str], challenger: Sequence[str], champion: Sequence[str] | None, rule: SelectionRule,
) -> Judgement:
    """Whether the challenger earns `champion`, by the same evidence the depth was chosen by.

    Args:
        truths: The test rows' labels.
        challenger: The challenger's labels for the same rows.
        champion: The champion's, or None when there is no champion (promoted).
        rule: Its metric, confidence and `promotion_margin` decide; without a confidence (null) the means are
            compared with the margin.

    Returns:
        The judgement: promoted unless the rows show the challenger worse by more than the margin (the upper end
        of the interval of challenger − champion below −margin), why, and the interval.
    """
    if champion is None:
        return Judgement(promoted=True, reason="no champion yet", rows=len(truths))
    if not len(truths) == len(challenger) == len(champion) > 0:
        raise ValueError(f"the challenger and the champion must label the same non-empty test rows, got "
                         f"{len(truths)} rows, {len(challenger)} and {len(champion)} labels")
    metric, margin, confidence = rule.metric, rule.promotion_margin, rule.confidence
    rows = f"on {len(truths):,} test rows"
    if confidence is None:
        mine, theirs = (classification_metrics(list(truths), list(labels))[metric] for labels in (challenger, champion))
        worse = not within(mine - theirs, margin)
        reason = (f"test {metric} {mine:.3f} vs champion {theirs:.3f} {rows}: "
                  + (f"worse by more than the tolerance {margin:g}; not promoted" if worse else
                     f"within the tolerance {margin:g}; promoted"))
        return Judgement(promoted=not worse, reason=reason, rows=len(truths), margin=margin)
    interval = paired_interval(truths, challenger, champion, metric, confidence)
    worse = shown_worse(interval.high, margin)
    verdict = (f"shown worse by more than the tolerance {margin:g}; not promoted" if worse
               else "not shown worse; promoted")
    reason = f"challenger {interval.text()} vs champion {rows} ({metric}, {confidence:.0%} interval): {verdict}"
    return Judgement(promoted=not worse, reason=reason, rows=len(truths), comparison=interval, margin=margin)
