"""The unlabelled pool in the flow: the texts students are taught on set apart from those left as evidence, what the run
made of the pool, and, after the sweep's decision (and cross-fitting's), when the labelled rows leave a cheaper depth
unsettled (selection.pool), the best and each such depth predicting the pool's texts for the rule to judge again."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from prefect import get_run_logger

from depthfinder.evidence.metrics import ENTITY_METRICS
from depthfinder.flows.config import SweepConfig
from depthfinder.selection.candidate import Candidate
from depthfinder.selection.decision import Decision
from depthfinder.selection.pool import Pool, PoolUse, arms_to_bound, rows_to_label
from depthfinder.tasks.data import PreparedData
from depthfinder.tasks.pool import PoolTexts, class_shares, pool_labels, predict_pool, teaching_texts


def pool_evidence(sweep: SweepConfig, texts: PoolTexts | None, candidates: list[Candidate], decision: Decision,
                  dataset: PreparedData, workdir: Path) -> Pool | None:
    """The pool's predictions by the best and the cheaper depths `decision` left unsettled (every seed), the labels
    given for it and the classes' shares; None without a pool or when nothing is unsettled."""
    arms = arms_to_bound(decision)
    if texts is None or not arms or not is_evidence(sweep):
        return None
    predicting = [c for c in candidates if c.usable and c.bundle and (c.family, c.depth) in arms]
    get_run_logger().info("Bounding %d cheaper depths on %d unlabelled texts (%d labelled)", len(arms) - 1,
                          texts.rows, texts.labelled)
    predicted = {(c.family, c.depth, c.seed): np.load(predict_pool(c, texts, dataset.labels, workdir))
                 for c in predicting}
    return Pool(predicted, pool_labels(texts, dataset.labels), class_shares(dataset, sweep.confidence))


def texts_to_label(decision: Decision, bounds: Pool | None, metric: str) -> list[int]:
    """The pool's rows whose labels could settle what the pool left unsettled, as the rule counted them
    (decision.rows_to_label; selection.pool.rows_to_label orders them); none without a pool's bounds."""
    if bounds is None or not decision.rows_to_label:
        return []
    return rows_to_label(decision.scores, (decision.best_family, decision.best_depth),
                         (decision.selected_family, decision.selected_depth), bounds, metric)


def pool_use(sweep: SweepConfig, prepared: PoolTexts | None, taught: PoolTexts | None) -> PoolUse | None:
    """What the run made of its unlabelled texts (None without any): the copies left out, the new texts used, how
    many of them students were taught on, and whether the rest is evidence (not for a tagger)."""
    if prepared is None:
        return None
    return PoolUse(texts=prepared.read, of_held_out=prepared.of_held_out, of_train=prepared.of_train,
                   used=prepared.rows, taught=taught.rows if taught is not None else 0, labelled=prepared.labelled,
                   evidence=is_evidence(sweep))


def is_evidence(sweep: SweepConfig) -> bool:
    """Whether the pool bounds depths for this run's rule: not for a tagger's, the bound being one of a label per
    text."""
    return sweep.metric not in ENTITY_METRICS


def split_pool(sweep: SweepConfig, pool: PoolTexts | None, dataset: PreparedData,
               workdir: Path) -> tuple[PoolTexts | None, PoolTexts | None]:
    """The unlabelled texts students learn from (sweep.distill.unlabeled per train row) and the pool left as evidence;
    (None, pool) when nothing is distilled on it."""
    if pool is None or sweep.distill.mode == "off" or not sweep.distill.unlabeled:
        return None, pool
    return teaching_texts(pool, round(sweep.distill.unlabeled * dataset.split_rows.get("train", 0)), workdir)
