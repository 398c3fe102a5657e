"""Tasks that turn the user's table into a prepared, split, content-addressed file."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd
from prefect import task
from prefect.cache_policies import NONE

from depthfinder.expectations.audit.config import AuditConfig
from depthfinder.expectations.table.config import DataConfig
from depthfinder.expectations.table.labels import LabelNormalization
from depthfinder.expectations.table.load import LoadedTable, load_labelled_table
from depthfinder.expectations.table.shape import class_labels, input_columns
from depthfinder.expectations.table.split import assign_splits
from depthfinder.runtime.files import written_whole

# What training reads besides the inputs (expectations.table.shape.input_columns); the data hash is of both.
LABELLED_COLUMNS = ["label", "split"]


@dataclass(frozen=True)
class PreparedData:
    """A prepared table on disk and what identifies it."""

    path: str
    data_hash: str  # what training sees: texts, labels and splits
    table_hash: str  # everything the audit sees: every column; names the file
    rows: int
    labels: list[str]
    dropped: dict[str, int] = field(default_factory=dict)  # rows removed before the audit, per reason
    normalized_labels: LabelNormalization = field(default_factory=LabelNormalization)  # when loaded
    split_rows: dict[str, int] = field(default_factory=dict)  # rows per split (train, val, test)
    inputs: list[str] = field(default_factory=lambda: ["text"])  # the columns of one example: its task's shape


def prepare_table(data: DataConfig) -> LoadedTable:
    """Load the table and give every row a split (the user's, or a stable grouped one)."""
    loaded = load_labelled_table(data)
    if data.split_col is not None:
        return loaded
    split = assign_splits(loaded.table, data.val_fraction, data.test_fraction, data.seed, data.group_near_duplicates)
    return replace(loaded, table=split)


def table_hash(table: pd.DataFrame, columns: list[str] | None = None) -> str:
    """A content hash of `columns` (default: all): their names and values, row by row, in order."""
    columns = [str(column) for column in table.columns] if columns is None else columns
    digest = hashlib.sha256(json.dumps(columns).encode())
    for column in columns:
        values = table[column]
        if values.dtype == object:  # may hold lists or dicts (JSONL), which do not hash
            values = values.map(repr)
        digest.update(pd.util.hash_pandas_object(values, index=False).to_numpy().tobytes())
    return digest.hexdigest()[:16]


@task(cache_policy=NONE)
def prepare_dataset(data: DataConfig, workdir: Path) -> PreparedData:
    """Load, split and write the table to `workdir/data/<hash>.parquet`."""
    loaded = prepare_table(data)
    return replace(write_table(loaded.table, workdir), normalized_labels=loaded.normalized_labels)


@task(cache_policy=NONE)
def drop_flagged_rows(dataset: PreparedData, audit: AuditConfig, workdir: Path) -> PreparedData:
    """Drop the rows `audit.drop` names (empty texts, label conflicts, leaking copies) and write what is kept."""
    if not audit.drop:
        return dataset
    from depthfinder.expectations.audit.drops import drop_rows

    kept, dropped = drop_rows(pd.read_parquet(dataset.path), audit)
    if kept.empty:
        raise ValueError(f"dropping {', '.join(audit.drop)} removed all {dataset.rows} rows; nothing is left to train")
    return replace(write_table(kept, workdir), dropped={**dataset.dropped, **dropped},
                   normalized_labels=dataset.normalized_labels)


def write_table(table: pd.DataFrame, workdir: Path) -> PreparedData:
    """Write `table` to `workdir/data/<hash of all its columns>.parquet` (once per content) and describe it."""
    whole = table_hash(table)
    path = Path(workdir) / "data" / f"{whole}.parquet"
    if not path.exists():
        with written_whole(path) as partial:
            table.to_parquet(partial, index=False)
    labels = class_labels(table)
    splits = {str(split): int(rows) for split, rows in table["split"].value_counts().items()}
    return PreparedData(
        path=str(path), data_hash=table_hash(table, [*input_columns(table), *LABELLED_COLUMNS]), table_hash=whole,
        rows=len(table), labels=labels, split_rows=splits, inputs=input_columns(table),
    )
