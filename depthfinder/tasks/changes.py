"""Tasks of the what-changed step: find the table the champion learned from, score the champion, compare."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from prefect import task
from prefect.cache_policies import NONE

from depthfinder.expectations.changes.compare import ChampionScores
from depthfinder.expectations.changes.config import ChangesConfig
from depthfinder.expectations.changes.report import ChangeReport
from depthfinder.runtime.retries import RETRIES
from depthfinder.tasks.data import PreparedData


@dataclass(frozen=True)
class ChampionTable:
    """The champion's version, its tags, and the table it was trained on (None when it is not kept)."""

    version: str
    tags: dict[str, str] = field(default_factory=dict)
    path: str | None = None


@task(**RETRIES)
def find_champion_table(tracking_uri: str, model_name: str, workdir: Path) -> ChampionTable | None:
    """The champion and its training table: the work folder's copy, else its run's artifact (copied back into
    the work folder); None when there is no champion."""
    from depthfinder.tracking.registry import current_champion
    from depthfinder.tracking.runs import client_of, fetch_table

    client = client_of(tracking_uri)
    champion = current_champion(client, model_name)
    if champion is None:
        return None
    table_hash, tags = champion.tags.get("table_hash"), dict(champion.tags)
    if table_hash is None:  # registered before tables were kept
        return ChampionTable(str(champion.version), tags)
    local = Path(workdir) / "data" / f"{table_hash}.parquet"
    if not local.exists() and not fetch_table(client, champion.run_id, local):
        return ChampionTable(str(champion.version), tags)
    return ChampionTable(str(champion.version), tags, str(local))


@task(cache_policy=NONE)
def compare_with_champion(
    dataset: PreparedData, champion: ChampionTable, model_uri: str, config: ChangesConfig, metric: str,
    settings_changed: list[str], docs_dir: str,
) -> ChangeReport:
    """Tonight's table against the champion's: row changes, label mix, drift, the champion scored on the rows
    added and on its own test rows, each a GX validation; the report with the policy's decision."""
    from depthfinder.expectations.changes.compare import Comparison, comparison_table
    from depthfinder.expectations.changes.judge import judge_changes

    table = comparison_table(pd.read_parquet(champion.path), pd.read_parquet(dataset.path))
    scores = score_champion(model_uri, table, config, metric)
    comparison = Comparison(config, champion.version, scores, tuple(settings_changed))
    return judge_changes(table, comparison, Path(docs_dir)).model_copy(update={"champion_table": champion.path})


def score_champion(model_uri: str, table: pd.DataFrame, config: ChangesConfig, metric: str) -> ChampionScores | None:
    """The registered champion's `metric` on (samples of) the rows added and its own test rows; None when no
    row was added (nothing new to score it on)."""
    from depthfinder.evidence.metrics import quality_metrics
    from depthfinder.expectations.changes.compare import rows_to_score
    from depthfinder.expectations.table.labels import normalize_label
    from depthfinder.expectations.table.shape import model_inputs
    from depthfinder.tracking.registry import predict_labels

    added, tested = rows_to_score(table, config)
    if added.empty:
        return None
    rows = added.append(tested)
    said = predict_labels(model_uri, model_inputs(table.loc[rows]))
    # normalize_label: a champion trained before labels were normalised may name a class another way.
    predicted = pd.Series([normalize_label(label) for label in said], index=rows, dtype="object")
    labels = table["label"].astype("str")

    def quality(index: pd.Index) -> float | None:
        if not len(index):
            return None
        return quality_metrics(labels[index].tolist(), predicted[index].tolist(), metric)[metric]

    return ChampionScores(metric, quality(added), quality(tested), len(added), len(tested), predicted.to_dict())
