"""Tasks of cross-fitting (selection.crossfit): the folds' tables, each a prepared table of its own."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from prefect import task
from prefect.cache_policies import NONE

from depthfinder.expectations.table.shape import read_inputs
from depthfinder.selection.crossfit import assign_folds
from depthfinder.tasks.data import LABELLED_COLUMNS, PreparedData, write_table


@dataclass(frozen=True)
class Folds:
    """The folds of a prepared table's train and validation rows: each row's fold, in the table's order of those
    rows, and one prepared table per fold."""

    ids: np.ndarray
    tables: list[PreparedData]


@task(cache_policy=NONE)
def fold_tables(dataset: PreparedData, folds: int, workdir: Path) -> Folds:
    """One table per fold of `dataset`'s train and validation rows: the fold's rows its test split (what its models
    predict, never train or early-stop on), the other rows in their own split; the test rows in none. Written like
    a prepared table (once per content, atomically), so a fold's candidates are keyed, kept and resumed like the
    sweep's; the class list is the dataset's, so every fold numbers the classes alike."""
    frame = read_inputs(dataset.path, *LABELLED_COLUMNS)
    labelled = frame[frame["split"].isin(["train", "val"])].reset_index(drop=True)
    ids = assign_folds(labelled["label"].astype(str).tolist(), folds)
    tables = []
    for fold in range(folds):
        table = labelled.assign(split=np.where(ids == fold, "test", labelled["split"]))
        tables.append(replace(write_table(table, Path(workdir)), labels=dataset.labels))
    return Folds(ids=ids, tables=tables)
