"""Load the user's table (or a built-in dataset) into depthfinder's canonical frame."""

from __future__ import annotations

import codecs
import contextlib
import csv
import io
import json
import math
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from depthfinder.expectations.table.config import DataConfig
from depthfinder.expectations.table.datasets import get_dataset
from depthfinder.expectations.table.labels import LabelNormalization, label_normalization, normalize_labels
from depthfinder.expectations.table.shape import PAIR_COLUMN
from depthfinder.expectations.table.tokens import CONLL_SUFFIXES, is_conll, read_conll, token_table

SPLITS = ("train", "val", "test")
# Columns depthfinder writes; an extra input column of the same name would be overwritten.
RESERVED_COLUMNS = ("text", PAIR_COLUMN, "label", "split", "row", "group")


@dataclass(frozen=True)
class LoadedTable:
    """The canonical frame (see load_table) and what loading normalised in its labels."""

    table: pd.DataFrame
    normalized_labels: LabelNormalization


def load_table(config: DataConfig) -> pd.DataFrame:
    """Read the configured file or generate the configured built-in dataset.

    Args:
        config: where the data comes from and which columns hold text, label and split.

    Returns:
        A frame with columns `text` (str; a null text becomes ""), `pair` (a pairs task's second text, as
        `text`), `label` (str, each
        label as its class: see expectations.table.labels.normalize_label), `split`
        (only when `config.split_col` is set; train/val/test), `row` (0-based position
        in the input), then every other input column under its own name.

    Raises:
        ValueError: one line naming the file, column or value at fault and what was expected.
    """
    return load_labelled_table(config).table


def load_labelled_table(config: DataConfig) -> LoadedTable:
    """load_table, and how many labels it normalised (reported by the audit)."""
    if config.dataset is not None:
        raw = get_dataset(config.dataset).generate(config.dataset_rows, config.seed)
        return canonical_table(raw, config, source=f"dataset {config.dataset!r}")
    path = Path(config.path)
    if is_conll(path) and config.task != "tokens":
        raise ValueError(f"{path}: a CoNLL file holds a tag per token: pass --task tokens")
    with _fits_in_memory(path):
        return canonical_table(read_table(path), config, source=str(path))


# --- reading --------------------------------------------------------------------------


def read_table(path: Path) -> pd.DataFrame:
    """The file as written (columns untouched), read by extension; ValueError on anything unreadable."""
    existing_file(path)
    reader = _READERS.get(path.suffix.lower())
    if reader is None:
        raise ValueError(
            f"{path}: unknown file type {path.suffix or '(no extension)'!r}; "
            f"expected one of {', '.join(sorted(_READERS))}"
        )
    with _fits_in_memory(path):
        return reader(path)


def existing_file(path: Path) -> Path:
    """`path`, a file; ValueError (one line) when it is missing or not a file."""
    if not path.exists():
        raise ValueError(f"{path}: no such file")
    if not path.is_file():
        raise ValueError(f"{path}: is not a file (expected a CSV, TSV, Parquet or JSONL file)")
    return path


@contextlib.contextmanager
def _fits_in_memory(path: Path) -> Iterator[None]:
    """A MemoryError (pyarrow's ArrowMemoryError is one too) while the block reads `path`, said in one line."""
    try:
        yield
    except MemoryError:
        raise ValueError(f"{path}: the file ({_size(path)}) does not fit in the memory this process may use; give "
                         "it more memory, or a sample of the table") from None


def _size(path: Path) -> str:
    """A file's size in the largest unit that keeps it at 1 or more: `6.2 GB`."""
    size, unit = float(path.stat().st_size), "bytes"
    for larger in ("KB", "MB", "GB", "TB"):
        if size < 1000:
            break
        size, unit = size / 1000, larger
    return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"


def read_utf8(path: Path) -> str:
    """The file's text; ValueError if it is empty, binary or not UTF-8."""
    data = path.read_bytes()
    if not data.strip():
        raise ValueError(f"{path}: file is empty (expected a header row and data rows)")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise ValueError(f"{path}: file is UTF-16 encoded; expected UTF-8 (re-save it as UTF-8)")
    nul = data.find(b"\x00")
    if nul >= 0:
        raise ValueError(f"{path}: looks binary (NUL byte at offset {nul}); expected a UTF-8 text file")
    bom = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return data[bom:].decode("utf-8")
    except UnicodeDecodeError as error:
        offset = bom + error.start
        line = data.count(b"\n", 0, offset) + 1
        raise ValueError(
            f"{path}: not UTF-8: byte 0x{data[offset]:02x} at offset {offset} (line {line}); "
            "re-save the file as UTF-8"
        ) from None


def _read_delimited(path: Path, sep: str) -> pd.DataFrame:
    """CSV/TSV with every value read as written ("0" stays "0"); only empty fields are missing."""
    text = read_utf8(path)
    kind = "TSV" if sep == "\t" else "CSV"
    try:
        header = next(csv.reader(io.StringIO(text), delimiter=sep), [])
    except csv.Error as error:  # e.g. an unclosed quote that swallows the file into one huge field
        raise ValueError(f"{path}: not a readable {kind} file: its header: {error}") from None
    repeated = [name for position, name in enumerate(header) if name in header[:position]]
    if repeated:
        positions = [str(position + 1) for position, name in enumerate(header) if name == repeated[0]]
        raise ValueError(
            f"{path}: column {repeated[0]!r} appears {len(positions)} times in the header (fields "
            f"{', '.join(positions)}); give every column its own name"
        )
    try:
        with warnings.catch_warnings():
            # index_col=False: a row with an extra field must not silently become the index.
            warnings.simplefilter("error", pd.errors.ParserWarning)
            return pd.read_csv(
                io.StringIO(text), sep=sep, dtype=str, keep_default_na=False, na_values=[""], index_col=False
            )
    except pd.errors.ParserWarning:
        raise ValueError(f"{path}: not a readable {kind} file: {_field_count_mismatch(text, sep)}") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as error:
        if "out of memory" in str(error):  # pandas' C tokenizer says so in a ParserError
            raise MemoryError(str(error)) from None
        raise ValueError(f"{path}: not a readable {kind} file: {_first_line(error)}") from None


def _field_count_mismatch(text: str, sep: str) -> str:
    """Which record has a different number of fields than the header."""
    records = csv.reader(io.StringIO(text), delimiter=sep)
    header, number = next(records), 0
    try:
        for number, record in enumerate(records, start=1):
            if record and len(record) != len(header):
                return f"row {number - 1} has {len(record)} fields, the header has {len(header)}"
    except csv.Error as error:
        return f"after row {number - 1}: {error}"
    return "rows and header have different numbers of fields"


def _read_jsonl(path: Path) -> pd.DataFrame:
    """One JSON object per line; blank lines are skipped."""
    records = []
    for number, line in enumerate(read_utf8(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}: line {number} is not valid JSON ({error.msg}, column {error.colno})") from None
        except RecursionError:  # the decoder recurses once per level
            raise ValueError(f"{path}: line {number} nests deeper than it can be read; expected an object of "
                             "texts, labels and other plain values") from None
        if not isinstance(record, dict):
            raise ValueError(f"{path}: line {number} is a JSON {type(record).__name__}; expected an object")
        records.append(record)
    return pd.DataFrame.from_records(records)


def _read_parquet(path: Path) -> pd.DataFrame:
    """A Parquet file via pyarrow."""
    try:
        return pd.read_parquet(path)
    except MemoryError:
        raise
    except Exception as error:  # pyarrow raises several unrelated types for a bad file
        raise ValueError(f"{path}: not a readable Parquet file: {_first_line(error)}") from None


def _first_line(error: BaseException) -> str:
    """The first non-empty line of an exception's message."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


# The 1-based line of a file's first data row, by type: after the header (CSV, TSV), the first (JSON lines).
FIRST_DATA_LINE = {".csv": 2, ".tsv": 2, ".jsonl": 1, ".ndjson": 1}


def first_data_line(config: DataConfig) -> int | None:
    """The 1-based line of the data file's row 0 (header counted); None for Parquet or a built-in dataset."""
    return FIRST_DATA_LINE.get(Path(config.path).suffix.lower()) if config.path else None


_READERS: dict[str, Callable[[Path], pd.DataFrame]] = {
    ".csv": lambda path: _read_delimited(path, ","),
    ".tsv": lambda path: _read_delimited(path, "\t"),
    ".parquet": _read_parquet,
    ".pq": _read_parquet,
    ".jsonl": _read_jsonl,
    ".ndjson": _read_jsonl,
    **{suffix: (lambda path: read_conll(path, read_utf8(path))) for suffix in CONLL_SUFFIXES},
}


# --- canonical frame ------------------------------------------------------------------


def canonical_table(raw: pd.DataFrame, config: DataConfig, source: str) -> LoadedTable:
    """Validate `raw` and rename/convert it to the canonical columns (see load_table; a token table's are
    expectations.table.tokens')."""
    columns = [str(column) for column in raw.columns]
    raw = raw.set_axis(columns, axis=1).reset_index(drop=True)  # a Parquet file may store an index
    if config.task == "tokens":
        table = token_table(raw, config, source)
        if config.split_col is not None:
            table.insert(4, "split", _splits(raw[config.split_col], source, config.split_col))
        return LoadedTable(table, LabelNormalization())
    pair_col = config.pair_col if config.task == "pairs" else None
    flags = {"--text-col": config.text_col, "--pair-col": pair_col, "--label-col": config.label_col,
             "--split-col": config.split_col}
    for flag, column in flags.items():
        if column is not None and column not in columns:
            raise ValueError(f"{source}: no column {column!r} (columns: {', '.join(columns) or 'none'}); set {flag}")
    if len(raw) == 0:
        raise ValueError(f"{source}: table has no rows (expected at least one row under the header)")
    if pair_col == config.text_col:
        raise ValueError(f"{source}: --text-col and --pair-col both name column {pair_col!r}; a pair is two columns")
    sources = {"text": config.text_col, PAIR_COLUMN: pair_col, "label": config.label_col, "split": config.split_col}
    extras = [column for column in columns if column not in sources.values()]
    clashes = [column for column in extras if column in RESERVED_COLUMNS]
    if clashes:
        raise ValueError(
            f"{source}: column {clashes[0]!r} clashes with a column depthfinder writes "
            f"({', '.join(RESERVED_COLUMNS)}); rename it"
            + (" or pass --split-col split" if clashes[0] == "split" else "")
            + (" or pass --task pairs" if clashes[0] == PAIR_COLUMN else "")
        )
    table = pd.DataFrame(index=pd.RangeIndex(len(raw)))
    table["text"] = as_texts(raw[config.text_col], source, config.text_col)
    if pair_col is not None:
        table[PAIR_COLUMN] = as_texts(raw[pair_col], source, pair_col)
    table["label"], normalized = _labels(raw[config.label_col], source, config.label_col)
    if config.split_col is not None:
        table["split"] = _splits(raw[config.split_col], source, config.split_col)
    table["row"] = np.arange(len(raw), dtype=np.int64)
    for column in extras:
        table[column] = raw[column]
    return LoadedTable(table, normalized)


def as_strings(values: pd.Series, source: str, column: str) -> pd.Series:
    """Values as str, missing stays missing; ValueError on nested or undecodable values."""
    if pd.api.types.is_string_dtype(values.dtype) and not pd.api.types.is_object_dtype(values.dtype):
        return values.astype("str")
    if pd.api.types.is_bool_dtype(values.dtype) or pd.api.types.is_integer_dtype(values.dtype):
        return values.astype("str")
    converted = [_to_string(value, source, column, row) for row, value in enumerate(values.tolist())]
    return pd.Series(converted, dtype="str")


def _to_string(value: object, source: str, column: str, row: int) -> str | None:
    """One value as str: 1.0 -> "1", None/NaN -> None, bytes decoded as UTF-8."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (bool, int, float, np.generic)):
        return str(value)
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"{source}: column {column!r} row {row} holds bytes that are not UTF-8") from None
    raise ValueError(
        f"{source}: column {column!r} row {row} holds a {type(value).__name__}; expected text or a number"
    )


def as_texts(values: pd.Series, source: str, column: str) -> pd.Series:
    """Texts as str (a missing one becomes ""); ValueError when the column holds numbers only (ids, not text)."""
    texts = as_strings(values, source, column).fillna("")
    given = texts[texts.str.strip() != ""]
    if len(given) and pd.to_numeric(given, errors="coerce").notna().all():
        raise ValueError(
            f"{source}: column {column!r} holds only numbers (e.g. {given.iloc[0]!r}), not text; "
            "set --text-col to the column with the text"
        )
    return texts


def _labels(values: pd.Series, source: str, column: str) -> tuple[pd.Series, LabelNormalization]:
    """Labels as their classes (normalize_label) and what that changed; ValueError when any is missing (or
    invisible), two differ only in case or number format ("Positive" and "positive", "1" and "1.0"), or there
    is only one class."""
    written = as_strings(values, source, column)
    labels = normalize_labels(written)
    missing = labels.isna() | (labels == "")
    if missing.any():
        first = ", ".join(str(row) for row in np.flatnonzero(missing.to_numpy())[:5])
        raise ValueError(
            f"{source}: {int(missing.sum())} of {len(labels)} rows have no label in column {column!r} "
            f"(first rows: {first}); every row needs a label"
        )
    classes = labels.unique()
    _refuse_colliding_labels(classes, source, column)
    if len(classes) < 2:
        raise ValueError(f"{source}: column {column!r} has a single class {classes[0]!r}; need at least two classes")
    return labels, label_normalization(written, labels)


def _label_key(label: str) -> str:
    """What two spellings of one label share: case-folded text, or the number it writes."""
    try:
        number = float(label)
    except ValueError:
        return label.casefold()
    return repr(number) if math.isfinite(number) else label.casefold()


def _refuse_colliding_labels(classes: np.ndarray, source: str, column: str) -> None:
    spellings: dict[str, list[str]] = {}
    for label in classes:
        spellings.setdefault(_label_key(str(label)), []).append(str(label))
    for same in spellings.values():
        if len(same) > 1:
            raise ValueError(
                f"{source}: labels {' and '.join(map(repr, sorted(same)))} in column {column!r} differ only in case "
                "or number format, so they would train as different classes; write each class one way"
            )


def _splits(values: pd.Series, source: str, column: str) -> pd.Series:
    """Split names; ValueError naming the first rows whose value is not train/val/test."""
    splits = as_strings(values, source, column).str.strip()
    bad = ~splits.isin(SPLITS)
    if bad.any():
        rows = np.flatnonzero(bad.to_numpy())
        shown = ", ".join(f"row {row} = {splits.iloc[row]!r}" for row in rows[:3])
        raise ValueError(
            f"{source}: column {column!r} has {len(rows)} rows not in train/val/test ({shown}); "
            "expected train, val or test"
        )
    return splits
