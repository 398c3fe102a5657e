from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from depthfinder.evidence.bootstrap import Interval, save_predictions
from depthfinder.evidence.margin import rows_to_resolve
from depthfinder.selection.candidate import Candidate, Cost
from depthfinder.selection.decision import DepthScore, ties
from depthfinder.selection.rule import choose_depth
from depthfinder.selection.settings import SelectionRule


def candidate(depth: int, f1: float, flops: float, latency: float = 1.0, params: int = 1000,
              status: str = "trained") -> Candidate:
    """A candidate with validation macro_f1 and its cost."""
    return Candidate(
        depth=depth, status=status, metrics={"macro_f1": f1, "accuracy": f1},
        cost=Cost(params=params, flops_per_example=flops, latency_ms_p50=latency),
    )


# Quality rises slowly with depth while cost rises linearly: depth 2 is within 0.01 of depth 6.
SWEEP = [
    candidate(1, 0.900, 1.0e8, latency=0.8, params=1_000_000),
    candidate(2, 0.941, 2.0e8, latency=1.4, params=1_500_000),
    candidate(4, 0.944, 4.0e8, latency=2.6, params=2_500_000),
    candidate(6, 0.946, 6.4e8, latency=3.9, params=3_500_000),
]


def test_picks_the_cheapest_depth_within_tolerance() -> None:
    decision = choose_depth(SWEEP, SelectionRule(tolerance=0.01))
    assert (decision.selected_depth, decision.best_depth) == (2, 6)
    assert decision.reason == (
        "depth 2 ships: its macro_f1 0.941 is within the 0.01 tolerance of the best, 0.946 at depth 6, "
        "at 31% of its FLOPs per example"
    )


def test_picks_the_best_when_no_cheaper_depth_is_close() -> None:
    decision = choose_depth(SWEEP, SelectionRule(tolerance=0.001))
    assert (decision.selected_depth, decision.best_depth) == (6, 6)
    assert decision.reason == (
        "depth 6 ships: it has the best macro_f1 0.946, and no cheaper depth is within the 0.001 tolerance "
        "(closest: depth 4 at 0.944)"
    )


def test_zero_tolerance_picks_the_best_and_a_best_that_is_cheapest_says_so() -> None:
    sweep = [candidate(1, 0.95, 1e8), candidate(2, 0.93, 2e8)]
    decision = choose_depth(sweep, SelectionRule(tolerance=0.0))
    assert decision.selected_depth == 1
    assert "depth 1 has the best macro_f1 0.950 and is also the cheapest" in decision.reason


def test_a_single_depth_is_said_to_be_the_only_one_not_the_cheapest() -> None:
    decision = choose_depth([candidate(6, 0.93, 6e8)], SelectionRule(tolerance=0.01))
    assert decision.reason == "depth 6 ships: the only depth to choose from (macro_f1 0.930)"


def test_a_depth_exactly_at_the_tolerance_boundary_qualifies() -> None:
    sweep = [candidate(1, 0.94, 1e8), candidate(2, 0.95, 2e8)]  # 0.95 - 0.01 is 0.9399999... in floats
    assert choose_depth(sweep, SelectionRule(tolerance=0.01)).selected_depth == 1


def test_equal_cost_goes_to_the_shallower_depth() -> None:
    sweep = [candidate(4, 0.95, 2e8), candidate(2, 0.95, 2e8), candidate(6, 0.96, 5e8)]
    assert choose_depth(sweep, SelectionRule(tolerance=0.02)).selected_depth == 2


def test_cost_can_be_latency() -> None:
    sweep = [candidate(2, 0.95, 1e8, latency=3.0), candidate(4, 0.95, 2e8, latency=1.0)]
    decision = choose_depth(sweep, SelectionRule(tolerance=0.01, cost="latency_ms_p50"))
    assert decision.selected_depth == 4
    assert "p50 latency" in decision.reason


def test_hard_limits_exclude_depths_and_the_reason_names_them() -> None:
    decision = choose_depth(
        SWEEP, SelectionRule(tolerance=0.001, max_latency_ms=3.0,))
    assert (decision.selected_depth, decision.best_depth) == (4, 4)
    assert "depth 4 ships: it has the best macro_f1 0.944" in decision.reason
    assert "excluded by hard limits: depth 6 (latency_ms_p50 3.9 > max_latency_ms 3)" in decision.reason


def sized(sweep: list[Candidate], sizes: dict[int, float]) -> list[Candidate]:
    """The candidates with the size of their smallest form (MiB) by depth."""
    return [c.model_copy(update={"cost": c.cost.model_copy(update={"size_mb": sizes[c.depth]})}) for c in sweep]


def test_max_size_mb_is_a_hard_limit_on_the_smallest_form() -> None:
    sweep = sized(SWEEP, {1: 4.7, 2: 6.4, 4: 9.9, 6: 13.3})
    decision = choose_depth(sweep, SelectionRule(tolerance=0.001, max_size_mb=8.0))
    assert (decision.selected_depth, decision.best_depth) == (2, 2)
    assert "excluded by hard limits: depth 4 (size_mb 9.9 > max_size_mb 8), depth 6 (size_mb 13.3" in decision.reason
    with pytest.raises(ValueError, match=r"hard limits max_size_mb=1: depth 1 \(size_mb 4\.7 > max_size_mb 1\)"):
        choose_depth(sweep, SelectionRule(tolerance=0.01, max_size_mb=1.0))


def test_cost_can_be_size() -> None:
    """The smallest form, not FLOPs: a depth whose vocabulary prunes further is the cheaper one."""
    sweep = sized([candidate(2, 0.95, 1e8), candidate(4, 0.95, 2e8)], {2: 9.0, 4: 7.5})
    decision = choose_depth(sweep, SelectionRule(tolerance=0.01, cost="size_mb"))
    assert decision.selected_depth == 4
    assert "size of the smallest form" in decision.reason


def test_max_params_is_a_hard_limit() -> None:
    decision = choose_depth(SWEEP, SelectionRule(tolerance=0.01, max_params=2_000_000))
    assert (decision.selected_depth, decision.best_depth) == (2, 2)
    assert "depth 4 (params 2.5e+06 > max_params 2e+06), depth 6" in decision.reason


def test_only_trained_or_cached_candidates_count() -> None:
    sweep = [
        candidate(1, 0.90, 1e8, status="cached"),
        candidate(2, 0.99, 2e8, status="pruned"),
        Candidate(depth=4, status="failed", error="out of memory"),
        candidate(6, 0.905, 6e8),
    ]
    decision = choose_depth(sweep, SelectionRule(tolerance=0.01))
    assert (decision.selected_depth, decision.best_depth) == (1, 6)
    assert "not considered: depth 2 pruned, depth 4 failed" in decision.reason


def test_raises_when_every_candidate_failed() -> None:
    sweep = [Candidate(depth=1, status="failed"), Candidate(depth=2, status="pruned")]
    with pytest.raises(ValueError, match="no candidate depth finished training .depth 1 failed, depth 2 pruned"):
        choose_depth(sweep, SelectionRule(tolerance=0.01))
    with pytest.raises(ValueError, match="no candidates"):
        choose_depth([], SelectionRule(tolerance=0.01))


def test_raises_naming_the_limits_when_every_candidate_exceeds_them() -> None:
    with pytest.raises(ValueError, match=r"hard limits max_latency_ms=0\.5, max_params=100: depth 1 \(latency"):
        choose_depth(SWEEP, SelectionRule(tolerance=0.01,
                     max_latency_ms=0.5, max_params=100))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"cost": "dollars"},
         "cost\n  Input should be 'flops_per_example', 'latency_ms_p50', 'onnx_latency_ms_p50', 'params', 'size_mb' "
         "or 'train_seconds'"),
        ({"tolerance": -0.1}, "tolerance\n  Input should be greater than or equal to 0"),
        ({"metric": "roc_auc"}, "metric\n  Input should be 'macro_f1', 'balanced_accuracy', 'accuracy', 'entity_f1' or "
                                  "'entity_macro_f1'"),
    ],
)
def test_bad_arguments_raise_clearly(kwargs: dict, message: str) -> None:
    arguments = {"metric": "macro_f1", "tolerance": 0.01, "cost": "flops_per_example", **kwargs}
    with pytest.raises(ValueError, match=message):
        choose_depth(SWEEP, SelectionRule(**arguments))


def test_a_candidate_without_the_metric_is_named() -> None:
    missing = [candidate(1, 0.9, 1e8), Candidate(depth=2, status="trained", metrics={"accuracy": 0.9},
                                                 cost=Cost(flops_per_example=2e8))]
    with pytest.raises(ValueError, match="depth 2: metrics.macro_f1 must be a finite number, got None"):
        choose_depth(missing, SelectionRule())


def test_a_trained_candidate_without_the_metric_is_an_error_not_a_silent_skip() -> None:
    with pytest.raises(ValueError, match="depth 2: metrics.macro_f1 must be a finite number, got nan"):
        choose_depth([candidate(1, 0.9, 1e8), candidate(2, float("nan"), 2e8)], SelectionRule(tolerance=0.01))


class Sweep(SelectionRule):
    """A rule with settings of its own besides, as the flows' SweepConfig has."""

    depths: list[int] = [1, 2, 4, 6]


def test_a_decision_holds_the_rule_it_chose_by_and_writes_its_settings_as_summaries_always_have() -> None:
    rule = Sweep(tolerance=0.01, promotion_margin=0.05)
    decision = choose_depth(SWEEP, rule)

    # One SelectionRule, the settings that choose a depth (not the sweep's, nor another decision's margin).
    assert type(decision.settings) is SelectionRule
    assert decision.settings == SelectionRule(tolerance=0.01)
    assert (decision.name, decision.metric, decision.tolerance, decision.cost) == (
        "tolerance", "macro_f1", 0.01, "flops_per_example")
    assert choose_depth(SWEEP, decision.settings) == decision  # replayed from its own record
    # The JSON form has the keys and values summaries have always had, settings first; effective_tolerance, which
    # always equalled the tolerance, is no longer written.
    written = decision.to_dict()
    assert written == {
        "name": "tolerance", "metric": "macro_f1", "tolerance": 0.01, "cost": "flops_per_example",
        "reason": decision.reason, "selected_depth": 2, "selected_family": "scratch", "best_depth": 6,
        "best_family": "scratch", "confidence": 0.9,
        "evidence": "means only: depth 1 seed 1 has no saved validation predictions", "validation_rows": None,
        "rows_to_resolve": None, "out_of_fold_rows": None, "folds": None, "unlabeled_rows": None,
        "labelled_texts": None, "rows_to_label": None, "alpha": 0.1,
        "max_latency_ms": None, "max_params": None, "pareto_front": [1, 2, 4, 6], "pareto_families": ["scratch"] * 4,
        "scores": [score.to_dict() for score in decision.scores],
    }
    assert list(written)[:4] == ["name", "metric", "tolerance", "cost"]
    assert type(decision).from_dict(written) == decision
    # What earlier versions wrote reads back through flows.older: tests/flows/test_older.py.
    with pytest.raises(ValidationError, match="frozen"):
        decision.selected_depth = 4  # type: ignore[misc]


def test_seeds_are_averaged_and_their_standard_error_never_widens_the_tolerance() -> None:
    # depth 6 is best on average (0.950) but noisy: sample std 0.0283, SE = 0.0283 / sqrt(2) = 0.02
    # > tolerance 0.01. Depth 2's mean, 0.937, is 0.013 below: beyond the tolerance, so it does not ship
    # (the old rule widened the tolerance to the SE and shipped it).
    seeds = [
        candidate(1, 0.900, 1e8), candidate(1, 0.900, 1e8),
        candidate(2, 0.936, 2e8), candidate(2, 0.938, 2e8),
        candidate(6, 0.930, 6e8), candidate(6, 0.970, 6e8),
    ]

    decision = choose_depth(seeds, SelectionRule(tolerance=0.01))

    assert decision.best_depth == 6
    assert decision.selected_depth == 6
    assert decision.tolerance == 0.01
    assert "0.950 ± 0.020 over 2 seeds" in decision.reason
    assert [s.seeds for s in decision.scores] == [2, 2, 2]
    assert choose_depth(seeds, SelectionRule(tolerance=0.015)).selected_depth == 2


def test_one_seed_keeps_the_configured_tolerance() -> None:
    decision = choose_depth(SWEEP, SelectionRule(tolerance=0.001))

    assert decision.selected_depth == 6  # 0.944 at depth 4 is 0.002 short
    assert decision.tolerance == 0.001


def test_ratio_rule_trades_quality_for_cost_by_alpha() -> None:
    cheap = choose_depth(SWEEP, SelectionRule(rule="ratio", alpha=0.1, tolerance=0.0))
    quality_first = choose_depth(SWEEP, SelectionRule(rule="ratio", alpha=0.001, tolerance=0.0,
                                 cost="flops_per_example"))

    # alpha 0.1: 0.900 / 1e8^0.1 beats 0.941 / 2e8^0.1 (a doubling of cost must buy 7 % quality)
    assert cheap.selected_depth == 1
    assert quality_first.selected_depth == 6
    assert cheap.reason.startswith("depth 1 maximises macro_f1 / (FLOPs per example)^0.1")
    assert cheap.to_dict()["name"] == "ratio" and cheap.to_dict()["alpha"] == 0.1


def test_pareto_rule_reports_the_front_and_picks_on_it() -> None:
    # depth 4 is dominated by depth 2: worse quality at higher cost
    sweep = [candidate(1, 0.90, 1e8), candidate(2, 0.95, 2e8), candidate(4, 0.94, 4e8), candidate(6, 0.96, 6e8)]

    decision = choose_depth(sweep, SelectionRule(rule="pareto", tolerance=0.01))

    assert decision.pareto_front == [1, 2, 6]
    assert decision.selected_depth == 2
    assert decision.to_dict()["pareto_front"] == [1, 2, 6]
    assert "Pareto front: depths 1, 2, 6" in decision.reason


def test_train_seconds_can_be_the_cost() -> None:
    sweep = [c.model_copy(update={"cost": c.cost.model_copy(update={"train_seconds": s})})
             for c, s in zip(SWEEP, [40, 10, 60, 90], strict=True)]

    decision = choose_depth(sweep, SelectionRule(tolerance=0.05, cost="train_seconds"))

    assert decision.selected_depth == 2
    assert "train time" in decision.reason


def test_an_unknown_rule_is_refused() -> None:
    with pytest.raises(ValueError, match="rule\n  Input should be 'tolerance', 'ratio' or 'pareto'"):
        choose_depth(SWEEP, SelectionRule(rule="vibes", tolerance=0.01))


def test_one_decision_across_families_names_them_and_the_other_familys_best() -> None:
    """The bottom 2 layers of a pretrained encoder are close to its 6 and far above any scratch depth."""
    pretrained = [c.model_copy(update={"family": "pretrained", "metrics": {"macro_f1": f1}})
                  for c, f1 in zip([candidate(1, 0, 3e8), candidate(2, 0, 6e8), candidate(6, 0, 18e8)],
                                   [0.83, 0.905, 0.91], strict=True)]
    scratch = [candidate(1, 0.80, 1e8), candidate(4, 0.82, 4e8)]

    decision = choose_depth(scratch + pretrained, SelectionRule(tolerance=0.01))

    assert (decision.selected_family, decision.selected_depth) == ("pretrained", 2)
    assert (decision.best_family, decision.best_depth) == ("pretrained", 6)
    assert decision.reason == (
        "pretrained depth 2 ships: its macro_f1 0.905 is within the 0.01 tolerance of the best, 0.910 at "
        "pretrained depth 6, at 33% of its FLOPs per example; scratch best macro_f1 0.820 at depth 4"
    )
    assert decision.selected_label == "pretrained depth 2"
    assert [(s.family, s.depth) for s in decision.scores] == [
        ("scratch", 1), ("pretrained", 1), ("pretrained", 2), ("scratch", 4), ("pretrained", 6)]
    assert choose_depth(scratch + pretrained, decision.settings) == decision


def test_one_decision_over_checkpoints_is_by_flops_not_depth_and_names_each_checkpoints_best() -> None:
    """Four layers of a narrow checkpoint cost less than two of a wide one: FLOPs, not depth, compare them."""
    def of(family: str, depth: int, f1: float, flops: float) -> Candidate:
        return candidate(depth, f1, flops).model_copy(update={"family": family})

    mini = [of("all-MiniLM-L6-v2", 2, 0.86, 1e8), of("all-MiniLM-L6-v2", 4, 0.905, 2e8)]
    mpnet = [of("all-mpnet-base-v2", 2, 0.88, 6e8), of("all-mpnet-base-v2", 12, 0.91, 18e8)]
    e5 = [of("e5-small", 1, 0.84, 0.5e8)]

    decision = choose_depth(mpnet + mini + e5, SelectionRule(tolerance=0.01, confidence=None))

    assert (decision.selected_family, decision.selected_depth) == ("all-MiniLM-L6-v2", 4)
    assert decision.reason == (
        "all-MiniLM-L6-v2 depth 4 ships: its macro_f1 0.905 is within the 0.01 tolerance of the best, 0.910 at "
        "all-mpnet-base-v2 depth 12, at 11% of its FLOPs per example; e5-small best macro_f1 0.840 at depth 1"
    )  # the best's own checkpoint is named once, as the best


def test_a_pretrained_sweep_alone_names_its_family_and_a_scratch_sweep_does_not() -> None:
    pretrained = [c.model_copy(update={"family": "pretrained"}) for c in SWEEP]

    assert choose_depth(pretrained, SelectionRule()).reason.startswith(
        "pretrained depth 2 ships: its macro_f1 0.941 is within the 0.01 tolerance of the best, 0.946 at pretrained "
        "depth 6")
    assert choose_depth(SWEEP, SelectionRule()).reason.startswith(
        "depth 2 ships: its macro_f1 0.941 is within the 0.01 tolerance of the best, 0.946 at depth 6")


def test_when_size_is_the_cost_a_large_embedding_share_is_said() -> None:
    """DeBERTa-v3-like: a 128k vocabulary holds most of a shallow model's parameters."""
    def heavy(depth: int, f1: float) -> Candidate:
        layers = depth * 7_000_000
        return Candidate(depth=depth, status="trained", metrics={"macro_f1": f1},
                         cost=Cost(params=98_000_000 + layers, params_without_embeddings=layers,
                                   flops_per_example=depth * 1e9))

    sweep = [heavy(2, 0.88), heavy(6, 0.905), heavy(12, 0.91)]

    by_size = choose_depth(sweep, SelectionRule(tolerance=0.01, cost="params"))
    by_flops = choose_depth(sweep, SelectionRule(tolerance=0.01))

    assert by_size.selected_depth == 6
    assert "embeddings are 70% of depth 6's parameters" in by_size.reason
    assert "embeddings are" not in by_flops.reason
    assert "embeddings are" not in choose_depth(SWEEP, SelectionRule(tolerance=0.01, cost="params")).reason


# The promise on constructed predictions: exact accuracies, and an interval as wide as the rows where the two
# depths disagree make it (each discordant row moves the difference by 1/rows).
def paired_sweep(folder: Path, rows: int, newly_wrong: int, newly_right: int) -> list[Candidate]:
    """Depth 4 right on all but 100 rows; depth 1 wrong on `newly_wrong` more of them and right on `newly_right` of
    depth 4's mistakes: depth 1 − depth 4 = (newly_right − newly_wrong) / rows in accuracy."""
    true = np.arange(rows) % 3
    deep = true.copy()
    deep[:100] = (true[:100] + 1) % 3
    shallow = deep.copy()
    shallow[:newly_right] = true[:newly_right]
    shallow[100 : 100 + newly_wrong] = (true[100 : 100 + newly_wrong] + 1) % 3
    sweep = []
    for depth, predicted in ((1, shallow), (4, deep)):
        path = save_predictions(folder / f"{rows}-{newly_wrong}-{newly_right}-depth-{depth}.npz", true, predicted)
        sweep.append(Candidate(depth=depth, status="trained", metrics={"accuracy": float(np.mean(predicted == true))},
                               predictions=str(path), cost=Cost(flops_per_example=depth * 1e8)))
    return sweep


PAIRED = SelectionRule(metric="accuracy", tolerance=0.01)


@pytest.mark.parametrize(("newly_wrong", "newly_right"), [(9, 0), (15, 6), (30, 21), (60, 51)])
def test_a_depth_whose_mean_is_beyond_the_tolerance_never_ships_however_wide_its_interval(
        tmp_path: Path, newly_wrong: int, newly_right: int) -> None:
    """Depth 1 is 0.03 below depth 4 on 300 rows, its interval wider and wider; "not shown worse" (the upper end at
    least −0.01, the old rule) would ship it from the second width on."""
    decision = choose_depth(paired_sweep(tmp_path, 300, newly_wrong, newly_right), PAIRED)
    shallow = decision.scores[0]

    assert shallow.mean - decision.scores[1].mean == pytest.approx(-0.03)
    assert decision.selected_depth == 4
    assert "cannot show" not in decision.reason and "every cheaper depth's mean is more than the 0.01 tolerance " \
        "below it (closest: depth 1 at" in decision.reason
    if newly_right:
        assert shallow.vs_best.high >= -0.01  # the old rule's tie


def test_the_sentence_never_calls_a_depth_whose_interval_lies_below_zero_unshown(tmp_path: Path) -> None:
    """A reported case: an interval wholly below zero that the old rule called "cannot show worse"."""
    decision = choose_depth(paired_sweep(tmp_path, 300, 15, 6), PAIRED)
    interval = decision.scores[0].vs_best

    assert -0.01 <= interval.high < 0
    assert decision.reason.startswith("depth 4 ships: it has the best accuracy 0.667, and every cheaper depth's mean "
                                      "is more than the 0.01 tolerance below it (closest: depth 1 at 0.637; 90% "
                                      "interval of depth 1 \u2212 depth 4: ")


def test_a_depth_the_rows_show_within_the_tolerance_goes_cheaper_and_the_sentence_says_so(tmp_path: Path) -> None:
    decision = choose_depth(paired_sweep(tmp_path, 4000, 20, 4), PAIRED)  # −0.004, 24 discordant rows
    interval = decision.scores[0].vs_best
    low, high = (f"{value:+.3f}".replace("-", "\u2212") for value in (interval.low, interval.high))

    assert -0.01 < interval.low < interval.difference == pytest.approx(-0.004, abs=1e-6)
    assert decision.selected_depth == 1 and decision.rows_to_resolve is None
    assert decision.reason == (
        "depth 4 scores 0.004 higher (accuracy 0.975 vs 0.971), and the validation rows show depth 1 within the 0.01 "
        f"tolerance (90% interval of depth 1 \u2212 depth 4: {low} to {high}), so the cheaper depth 1 ships, at 25% "
        "of its FLOPs per example")


def test_when_the_interval_is_wider_than_the_tolerance_the_sentence_names_the_rows_that_would_resolve_it(
        tmp_path: Path) -> None:
    """Depth 1 is 0.003 below on the means, within the tolerance, but 59 discordant rows of 300 make its interval
    ±0.04: the rows cannot show it within, the best ships, and the decision says what would settle it."""
    sweep = paired_sweep(tmp_path, 300, 30, 29)
    decision = choose_depth(sweep, PAIRED)
    interval = decision.scores[0].vs_best
    needed = rows_to_resolve(300, interval.half_width, 0.01)

    assert interval.half_width > 0.03 and interval.low < -0.01
    assert decision.selected_depth == 4
    assert 300 * (interval.half_width / 0.01) ** 2 <= needed < 1.01 * 300 * (interval.half_width / 0.01) ** 2 + 100
    assert decision.rows_to_resolve == needed and decision.validation_rows == 300
    assert decision.to_dict()["rows_to_resolve"] == needed
    assert "the cheaper depth 1's 0.663 is within the 0.01 tolerance, but the validation rows do not show it within " \
        "(90% interval of depth 1 \u2212 depth 4: " in decision.reason
    assert decision.reason.endswith(
        f"; the 300 validation rows cannot settle depth 1: its interval (±{interval.half_width:.3f}) is wider than "
        f"the 0.01 tolerance, and one as narrow as the tolerance needs about {needed:,} validation rows (or several "
        "seeds, or a larger tolerance)")
    assert choose_depth(sweep, decision.settings) == decision
    # The fixed margin on the means alone would call this noise a tie and ship depth 1.
    assert choose_depth(sweep, PAIRED.model_copy(update={"confidence": None})).selected_depth == 1


def test_ties_is_the_margin_predicate_on_the_mean_and_the_lower_end() -> None:
    best = DepthScore(depth=6, mean=0.92, std_error=0, seeds=1, cost=6,
                      vs_best=Interval(difference=0, low=0, high=0))

    def score(mean: float, low: float, high: float) -> DepthScore:
        return DepthScore(depth=3, mean=mean, std_error=0, seeds=1, cost=3,
                          vs_best=Interval(difference=mean - 0.92, low=low, high=high))

    assert ties(score(0.915, -0.009, 0.0), best, 0.01)
    assert not ties(score(0.888, -0.060, -0.003), best, 0.01)  # reported: not shown worse, yet 0.032 below
    assert not ties(score(0.915, -0.030, 0.02), best, 0.01)  # within on the mean, not shown within
    assert ties(score(0.91, -0.01, 0.0), best, 0.01)  # on the boundary, in floats
    assert ties(score(0.915, 0, 0).model_copy(update={"vs_best": None}), best, 0.01)  # means only
