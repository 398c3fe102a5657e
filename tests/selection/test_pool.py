"""Unlabelled texts as the rule's evidence, on constructed predictions whose truth is known (selection.pool).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from depthfinder.evidence.disagreement import UNLABELLED, pool_bound
from depthfinder.selection.decision import DepthScore
from depthfinder.selection.pool import ROWS_TO_LABEL, Pool, rows_to_label
from depthfinder.selection.rule import choose_depth
from depthfinder.selection.settings import SelectionRule
from tests.selection.test_crossfit import sweep

RULE = SelectionRule(metric="accuracy", tolerance=0.01, confidence=0.9)
SHARES = np.array([0.5, 0.5])


def pair(rows: int, disagree: float, gap: float, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Binary truth and two predictions of it: the best right on 90 % of the rows; the cheaper one differing from it
    on `disagree` of the rows, wrong on enough of those where the best is right that its accuracy is `gap` below the
    best's (exactly, on these rows)."""
    rng = np.random.default_rng(seed)
    true = rng.integers(0, 2, rows)
    best = np.where(rng.random(rows) < 0.9, true, 1 - true)
    apart, below = round(disagree * rows), round(gap * rows)
    right, wrong = rng.permutation(np.flatnonzero(best == true)), rng.permutation(np.flatnonzero(best != true))
    flipped = np.concatenate([right[: (apart + below) // 2], wrong[: (apart - below) // 2]])
    cheaper = best.copy()
    cheaper[flipped] ^= 1
    return true, best, cheaper


def pool_of(best: np.ndarray, cheaper: np.ndarray, true: np.ndarray | None = None) -> Pool:
    labels = np.full(len(best), UNLABELLED) if true is None else true
    return Pool({("scratch", 1, 1): cheaper, ("scratch", 2, 1): best}, labels, SHARES)


def test_a_depth_the_validation_rows_cannot_settle_ships_when_the_unlabelled_texts_bound_it_within(
        tmp_path: Path) -> None:
    true, best, cheaper = pair(300, disagree=0.03, gap=0.004, seed=1)  # 9 rows apart: too few to settle
    _, pool_best, pool_cheaper = pair(8000, disagree=0.003, gap=0.0, seed=2)
    candidates = sweep(tmp_path, true, best, cheaper)

    alone = choose_depth(candidates, RULE)
    decision = choose_depth(candidates, RULE, pool=pool_of(pool_best, pool_cheaper))

    assert alone.selected_depth == 2 and alone.scores[0].verdict == "unsettled"
    assert decision.selected_depth == 1
    cheap = decision.scores[0]
    assert (cheap.verdict, cheap.compared_on) == ("within", "unlabeled")
    assert cheap.vs_best.low == -cheap.pool.worse_by_at_most > -RULE.tolerance
    assert decision.unlabeled_rows == 8000 and decision.rows_to_label is None
    assert "the 8,000 unlabelled texts show depth 1 within the 0.01 tolerance" in decision.reason
    assert "disagreement 0.3%" in decision.reason
    assert "unlabelled texts" in decision.evidence


def test_a_depth_truly_beyond_the_tolerance_never_ships_on_unlabelled_texts(tmp_path: Path) -> None:
    """Whatever the draw of the validation rows and the pool, a cheaper depth 0.02 below the best (twice the
    tolerance) never ships: the share of texts on which it differs from the best is at least that."""
    shipped = 0
    for seed in range(20):
        true, best, cheaper = pair(300, disagree=0.04, gap=0.004, seed=seed)  # its validation mean within
        _, pool_best, pool_cheaper = pair(4000, disagree=0.021, gap=0.02, seed=100 + seed)
        folder = tmp_path / str(seed)
        folder.mkdir()
        decision = choose_depth(sweep(folder, true, best, cheaper), RULE, pool=pool_of(pool_best, pool_cheaper))
        shipped += decision.selected_depth == 1
    assert shipped == 0


def test_where_the_pool_cannot_settle_it_the_disagreements_are_the_texts_to_label(tmp_path: Path) -> None:
    true, best, cheaper = pair(300, disagree=0.03, gap=0.004, seed=1)
    pool_true, pool_best, pool_cheaper = pair(3000, disagree=0.02, gap=0.0, seed=3)  # 60 apart: bound ~0.024
    candidates = sweep(tmp_path, true, best, cheaper)

    decision = choose_depth(candidates, RULE, pool=pool_of(pool_best, pool_cheaper))

    assert decision.selected_depth == 2 and decision.scores[0].compared_on == "validation"
    differ = np.flatnonzero(pool_best != pool_cheaper)
    assert decision.rows_to_label == len(differ) == 60
    assert f"label the 60 texts of {ROWS_TO_LABEL}" in decision.reason
    assert "--labels" in decision.reason
    assert sorted(rows_to_label(decision.scores, (
        "scratch", 2), ("scratch", 2), pool_of(pool_best, pool_cheaper), "accuracy")) == differ.tolist()

    # Their labels, given on the next run, settle it: on these texts the two are equally often right.
    labels = np.where(pool_best != pool_cheaper, pool_true, UNLABELLED)
    settled = choose_depth(candidates, RULE, pool=pool_of(pool_best, pool_cheaper, labels))

    assert settled.selected_depth == 1 and settled.labelled_texts == 60 and settled.rows_to_label is None
    assert "60 of their disagreements labelled" in settled.evidence


def test_labelled_texts_leave_the_list_to_label_and_the_depth_with_the_fewest_comes_first() -> None:
    _, best, few = pair(2000, disagree=0.01, gap=0.0, seed=4)
    many = best.copy()
    many[:80] ^= 1
    pool = Pool({("scratch", 1, 1): many, ("scratch", 2, 1): few, ("scratch", 3, 1): best},
                np.full(2000, UNLABELLED), SHARES)
    bound = pool_bound([best], [few], "accuracy", SHARES, 0.9)  # what on_pool attaches: only its presence counts
    scores = [DepthScore(depth=depth, mean=0.9, std_error=0.0, seeds=1, cost=depth, pool=bound if depth < 3 else None,
                         verdict="unsettled" if depth < 3 else "best") for depth in (1, 2, 3)]
    few_rows = set(np.flatnonzero(few != best).tolist())

    order = rows_to_label(scores, ("scratch", 3), ("scratch", 3), pool, "accuracy")

    assert set(order[: len(few_rows)]) == few_rows and set(order) == few_rows | set(range(80))
    labelled = pool.true.copy()
    labelled[sorted(few_rows)] = 0
    again = rows_to_label(scores, ("scratch", 3), ("scratch", 3), Pool(pool.predicted, labelled, SHARES), "accuracy")
    assert set(again) == set(range(80)) - few_rows


def test_a_taggers_pool_is_said_to_teach_and_never_to_be_evidence() -> None:
    from depthfinder.selection.pool import PoolUse

    said = PoolUse(texts=200, of_held_out=3, of_train=0, used=197, evidence=False).sentence()
    assert said == ("Unlabelled pool: 200 texts; left out 3 copies or near-copies of validation or test texts (never "
                    "taught on, never evidence); 197 new texts, none taught, no student trained (a tagger's pool "
                    "teaches; it is no evidence).")
    assert "as evidence" in PoolUse(texts=200, of_held_out=0, of_train=0, used=200).sentence()
