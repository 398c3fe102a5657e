"""The unlabelled pool, after the sweep's decision (and cross-fitting's), when the labelled rows leave a cheaper depth
unsettled (selection.pool): the best and each such depth predict the pool's texts, and the rule judges again."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from prefect import get_run_logger

from depthfinder.flows.config import SweepConfig
from depthfinder.selection.candidate import Candidate
from depthfinder.selection.decision import Decision
from depthfinder.selection.pool import Pool, arms_to_bound
from depthfinder.tasks.data import PreparedData
from depthfinder.tasks.pool import PoolTexts, class_shares, pool_labels, predict_pool


def pool_evidence(sweep: SweepConfig, texts: PoolTexts | None, candidates: list[Candidate], decision: Decision,
                  dataset: PreparedData, workdir: Path) -> Pool | None:
    """The pool's predictions by the best and the cheaper depths `decision` left unsettled (every seed), the labels
    given for it and the classes' shares; None without a pool or when nothing is unsettled."""
    arms = arms_to_bound(decision)
    if texts is None or not arms:
        return None
    predicting = [c for c in candidates if c.usable and c.bundle and (c.family, c.depth) in arms]
    get_run_logger().info("Bounding %d cheaper depths on %d unlabelled texts (%d labelled)", len(arms) - 1,
                          texts.rows, texts.labelled)
    predicted = {(c.family, c.depth, c.seed): np.load(predict_pool(c, texts, dataset.labels, workdir))
                 for c in predicting}
    return Pool(predicted, pool_labels(texts, dataset.labels), class_shares(dataset, sweep.confidence))
