"""Which candidates distillation trains, and which model teaches them (encoder.distillation has the loss).

After the sweep's decision the best candidate teaches cheaper depths: each continues from its trained plain twin
(sweep.distill.start twin; or starts from the twin's initialisation, init) on the teacher's soft labels and the
labels, early-stopped on the validation rows where the twin's own weights count as its first state: a student that no
taught epoch improved keeps them (Candidate.kept_twin) and is no arm of its own. A student is an arm of its own
(its family `scratch, distilled from depth 6`: selection.candidate.student_family), judged by the same rule beside
the plain ones, so the rule, the intervals, the plots and the summary need nothing new to hold it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from depthfinder.encoder.config import yaml_switch
from depthfinder.evidence.bootstrap import Interval, Predictions, compare_to_best
from depthfinder.selection.candidate import Candidate, arm_label, base_family, teacher_of
from depthfinder.selection.decision import Decision
from depthfinder.selection.predictions import load_predictions
from depthfinder.selection.settings import SweepPart

Arm = tuple[str, int]  # (family, depth)
DistillSetting = Literal["auto", "on", "off"]


class DistillConfig(SweepPart):
    """Distillation: the best candidate teaching cheaper depths (sweep.distill)."""

    mode: DistillSetting = Field(
        "auto", description="Distillation, after the sweep's decision: the best candidate teaches cheaper depths, "
        "each trained again from the same initialisation on alpha x T^2 x KL(teacher || student) at "
        "temperature T plus (1 - alpha) x the cross-entropy of the labels, with the "
        "teacher's soft labels on the train rows (and on unlabelled texts of --unlabeled: `unlabeled`) computed "
        "once and cached; each student is a candidate of its own (`depth 3, distilled from depth 6`) that the rule "
        "judges beside the plain ones. on = every depth cheaper than the best; auto = every depth cheaper than the "
        "rule's choice (none when the cheapest ships), only with --unlabeled texts to teach on; off = none "
        "(docs/training.md).",
        json_schema_extra={"flag": "--distill"},
    )
    temperature: float = Field(
        2.0, gt=0, description="Temperature T of the teacher's and the student's softmax in the distillation loss.",
    )
    alpha: float = Field(
        0.5, ge=0, le=1, description="Weight of the soft-label term in a student's loss (the labels' cross-entropy "
        "takes 1 - alpha); 0 trains a student exactly as its plain twin.",
    )
    epochs: int | None = Field(
        None, strict=True, ge=1, description="Most epochs of a student; null = its family's recipe's max_epochs "
        "(early stopping as for any candidate).",
    )
    start: Literal["twin", "init"] = Field(
        "twin", description="Where a student starts: twin = from its trained plain twin (same family, depth and "
        "seed), its teacher's soft labels refining it at half the recipe's peak learning rate, early-stopped on "
        "validation (docs/benchmarks.md: students from their initialisation lost to their twins where the teacher was "
        "far better); init = from the twin's initialisation, trained on the distillation loss from the start.",
        json_schema_extra={"flag": "--distill-start"},
    )
    unlabeled: float = Field(
        1.0, ge=0, description="With --unlabeled: students also learn the teacher's soft labels on this many of the "
        "unlabelled texts per train row (a teacher that fitted its train rows teaches most on texts it never saw), "
        "at most half of them: the texts taught on are left out of the pool's evidence (a student learnt to agree "
        "with its teacher there). 0 = the train rows alone.",
    )

    _switch = field_validator("mode", mode="before")(yaml_switch)


def arms_to_distill(decision: Decision, distill: DistillSetting, unlabeled: bool = False) -> list[Arm]:
    """The arms that train again as students, cheapest first: `on`, every plain arm cheaper than the best (by the
    rule's cost); `auto`, every plain arm cheaper than the rule's choice, those the validation rows could not show
    within the tolerance (none when the cheapest ships), and only when there are `unlabeled` texts to teach on (on
    the train rows alone a teacher that fitted them teaches nothing measurable: docs/benchmarks.md); `off`, none.
    Never when a student is the best already."""
    if distill == "off" or (distill == "auto" and not unlabeled) or teacher_of(decision.best_family) is not None:
        return []
    cost = {(s.family, s.depth): s.cost for s in decision.scores}
    bound = (decision.best_family, decision.best_depth) if distill == "on" else \
        (decision.selected_family, decision.selected_depth)
    cheaper = [arm for arm in cost if cost[arm] < cost[bound] and teacher_of(arm[0]) is None]
    return sorted(cheaper, key=lambda arm: (cost[arm], arm[1]))


def teacher_candidate(candidates: list[Candidate], decision: Decision, metric: str) -> Candidate:
    """The model that teaches: of the best arm's usable seeds, the one with the best validation metric (the first
    seed on a tie), with its bundle."""
    best = (decision.best_family, decision.best_depth)
    seeds = [c for c in candidates if c.usable and (c.family, c.depth) == best and c.bundle]
    if not seeds:
        raise ValueError(f"the best arm {best} has no usable candidate with a bundle to teach from")
    return max(seeds, key=lambda c: (c.metrics[metric], -c.seed))


def distillation_sentence(decision: Decision, candidates: list[Candidate], metric: str) -> str | None:
    """What distillation bought, per student arm against its plain twin (the same family and depth trained on the
    labels alone), in mean validation and test `metric` over their seeds, and which teacher taught; None when no
    student trained. `Distillation: depth 6 seed 1 taught on the train rows and 750 unlabelled texts; depth 2,
    distilled from depth 6 (ships): validation macro_f1 0.912 vs 0.880 plainly (+0.032), test 0.905 vs 0.871
    (+0.034)` (the texts only where it taught on some)."""
    students = [c for c in candidates if c.usable and c.teacher is not None]
    if not students:
        return None
    selected = (decision.selected_family, decision.selected_depth)
    clauses = []
    for family, depth in dict.fromkeys((c.family, c.depth) for c in students):
        twin = (base_family(family), depth)
        mine = [c for c in students if (c.family, c.depth) == (family, depth)]
        plain = [c for c in candidates if c.usable and (c.family, c.depth) == twin]
        text = f"{arm_label(family, depth)}{' (ships)' if (family, depth) == selected else ''}: "
        val, test = _mean(mine, "metrics", metric), _mean(mine, "test_metrics", metric)
        if all(c.kept_twin for c in mine):
            clauses.append(f"{text}no epoch taught beat its plain twin on the validation rows ({metric} {val:.3f}), "
                           "so it kept the twin's weights and is no candidate of its own")
            continue
        kept = sum(c.kept_twin for c in mine)
        text += f"{kept} of {len(mine)} seeds kept their twin's weights; " if kept else ""
        if plain:
            plain_val, plain_test = _mean(plain, "metrics", metric), _mean(plain, "test_metrics", metric)
            gain = _paired(mine, plain, decision.settings.confidence, metric)
            text += (f"validation {metric} {val:.3f} vs {plain_val:.3f} plainly ("
                     f"{gain.text() if gain else _signed(val - plain_val)}{_shown(gain)}), test {test:.3f} vs "
                     f"{plain_test:.3f} ({_signed(test - plain_test)})")
        else:
            text += f"validation {metric} {val:.3f}, test {test:.3f} (no plain twin to compare with)"
        clauses.append(text)
    confidence = decision.settings.confidence
    paired = f" ([low, high]: {confidence:.0%} paired bootstrap interval on the validation rows)" if any(
        "[" in clause for clause in clauses) else ""
    taught = max(c.taught_texts for c in students)
    on = f" on the train rows and {taught:,} unlabelled texts" if taught else ""
    return f"Distillation: {students[0].teacher} taught{on}; " + "; ".join(clauses) + paired


def _paired(students: list[Candidate], twins: list[Candidate], confidence: float | None, metric: str
            ) -> Interval | None:
    """The students' validation metric minus their plain twins' (means over seeds), with its paired bootstrap interval
    on the validation rows (evidence.bootstrap); None without saved predictions or a confidence (the means alone)."""
    predictions = load_predictions([*students, *twins]) if confidence is not None else None
    if not isinstance(predictions, Predictions):
        return None
    arms = {(c.family, c.depth): [] for c in [*students, *twins]}
    for c in [*students, *twins]:
        arms[c.family, c.depth].append(c.seed)
    twin = (twins[0].family, twins[0].depth)
    return compare_to_best(predictions, arms, twin, metric, confidence)[students[0].family, students[0].depth]


def _shown(gain: Interval | None) -> str:
    """`: shown better than its twin` or `: shown worse than its twin` where the interval excludes 0; "" otherwise."""
    if gain is None or gain.low <= 0 <= gain.high:
        return ""
    return f": shown {'better' if gain.low > 0 else 'worse'} than its twin"


def _signed(value: float) -> str:
    """`+0.046`, `−0.011`: signed as the intervals are."""
    return f"{value:+.3f}".replace("-", "\u2212")


def _mean(candidates: list[Candidate], field: str, metric: str) -> float:
    values = [getattr(c, field)[metric] for c in candidates if metric in getattr(c, field)]
    return sum(values) / len(values) if values else float("nan")
