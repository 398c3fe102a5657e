"""Tonight's table next to the champion's: which rows were added, removed or relabelled, and the judgement.

Rows are matched by their normalised-text key (the key the audit and the split use) and
label: a row of tonight's table is `kept` while the champion's table holds as many rows of
the same text and label, `relabelled` when the champion's table holds its text only under
other labels, else `added`; the champion's rows are `kept`, `relabelled` or `removed` the
same way. So a duplicate that gains a copy is one row added, and a text whose label was
corrected is one row relabelled, not one removed and one added.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from depthfinder.expectations.audit.checks.base import KEY_COLUMN
from depthfinder.expectations.audit.run import prepare_audit_table
from depthfinder.expectations.changes.config import ChangesConfig
from depthfinder.expectations.table.labels import normalize_labels
from depthfinder.expectations.table.normalize import text_keys

SIDE_COLUMN = "_side"  # "champion" (the table it was trained on) or "tonight"
CHANGE_COLUMN = "_change"  # kept, added, removed or relabelled
WAS_COLUMN = "was"  # a relabelled row's label(s) in the champion's table
CHAMPION_LABEL_COLUMN = "champion_said"  # the champion's prediction, on the rows it was scored on
# The drift classifier's out-of-fold probability that a row is one added since the champion (rows it scored), and
# whether an added row is confidently unlike the champion's table (scored above nearly all of the champion's rows).
DRIFT_COLUMN, FOREIGN_COLUMN = "drift_score", "foreign"
COMPARED_COLUMNS = ["text", "label", "split", "row"]
SAMPLE_SEED = 0


@dataclass(frozen=True)
class ChampionScores:
    """The registered champion's quality on the rows added since and on its own test rows, and its predictions."""

    metric: str
    on_new: float | None
    on_test: float | None
    new_rows: int
    test_rows: int
    predicted: dict[int, str] = field(default_factory=dict)  # comparison-table index -> predicted label


@dataclass(frozen=True)
class Comparison:
    """What every change check is given besides the table: the thresholds, the champion's scores and version."""

    config: ChangesConfig
    champion_version: str
    champion: ChampionScores | None = None
    # Which of the settings that decide a model differ from the champion's (config_hash, code_version, ...).
    settings_changed: tuple[str, ...] = ()


def comparison_table(champion: pd.DataFrame, tonight: pd.DataFrame) -> pd.DataFrame:
    """Both tables stacked (the champion's first) with each row's side, text key and change."""
    sides = [frame[[c for c in COMPARED_COLUMNS if c in frame.columns]].assign(**{SIDE_COLUMN: side})
             for side, frame in (("champion", champion), ("tonight", tonight))]
    table = prepare_audit_table(pd.concat(sides, ignore_index=True))
    # A champion's table loaded before labels were normalised may spell one class several ways.
    table["label"] = normalize_labels(table["label"])
    table[CHANGE_COLUMN], table[WAS_COLUMN] = _row_changes(table)
    return table


def _row_changes(table: pd.DataFrame) -> tuple[np.ndarray, pd.Series]:
    """Each row's change (see the module docstring) and, for a relabelled row, the other side's labels."""
    label = table["label"].astype("str")
    side = table[SIDE_COLUMN]
    copy = table.groupby([SIDE_COLUMN, KEY_COLUMN, label], sort=False).cumcount()
    counts = table.groupby([SIDE_COLUMN, KEY_COLUMN, label], sort=False).size()
    other = side.map({"champion": "tonight", "tonight": "champion"})
    matching = pd.MultiIndex.from_arrays([other, table[KEY_COLUMN], label])
    kept = copy.to_numpy() < counts.reindex(matching, fill_value=0).to_numpy()
    labels_of = label.groupby([side, table[KEY_COLUMN]], sort=False).agg(lambda ls: ", ".join(sorted(set(ls))))
    others = pd.Series(labels_of.reindex(pd.MultiIndex.from_arrays([other, table[KEY_COLUMN]])).to_numpy(),
                       index=table.index)
    has_key = others.notna().to_numpy()
    fresh = np.where(side == "tonight", "added", "removed")
    label_elsewhere = _label_among(label, others)
    change = np.where(kept, "kept", np.where(has_key & ~label_elsewhere, "relabelled", fresh))
    return change, others.where(change == "relabelled")


def _label_among(labels: pd.Series, others: pd.Series) -> np.ndarray:
    """Whether each label is one of the comma-joined labels beside it."""
    return np.array([isinstance(joined, str) and label in joined.split(", ")
                     for label, joined in zip(labels, others, strict=True)], dtype=bool)


def side(table: pd.DataFrame, name: str, change: str | Sequence[str] | None = None) -> pd.DataFrame:
    """The rows of one side, optionally only those with the given change(s)."""
    rows = table[table[SIDE_COLUMN] == name]
    if change is None:
        return rows
    return rows[rows[CHANGE_COLUMN].isin([change] if isinstance(change, str) else change)]


def sample(rows: pd.DataFrame, limit: int) -> pd.DataFrame:
    """At most `limit` rows, drawn at random with a fixed seed (all of them when fewer)."""
    return rows if len(rows) <= limit else rows.sample(n=limit, random_state=SAMPLE_SEED)


def with_drift_scores(table: pd.DataFrame, config: ChangesConfig) -> pd.DataFrame:
    """The table with each sampled row's out-of-fold probability of being added (DRIFT_COLUMN), from hashed word
    n-grams and a logistic classifier telling (samples of) the champion's rows from the rows added, and each
    scored added row's FOREIGN_COLUMN: whether it scores above all but `config.foreign_rate` of the champion's own
    rows. An added row of the same task is scored like a champion's row (neither was seen by the fold that scored
    it), so it passes that bar with probability `foreign_rate`; a row of another task passes it however many rows
    of the same task dilute the block (a pooled AUC only says whether the rows added differ on average)."""
    from depthfinder.expectations.audit.baseline import FOLDS, out_of_fold_probabilities
    from depthfinder.expectations.audit.checks.base import NORMALIZED_COLUMN

    champion, added = side(table, "champion"), side(table, "tonight", "added")
    scored = table.assign(**{DRIFT_COLUMN: np.nan, FOREIGN_COLUMN: pd.NA})
    if min(len(champion), len(added)) < FOLDS:
        return scored
    # One row per text on the champion's side: a row added is new by its text, so without this the champion's
    # repeated texts (templates) would tell the sides apart by repetition alone.
    champion = sample(champion.drop_duplicates(KEY_COLUMN), config.max_rows)
    added = sample(added, config.max_rows)
    is_added = np.r_[np.zeros(len(champion), dtype=np.int64), np.ones(len(added), dtype=np.int64)]
    texts = pd.concat([champion[NORMALIZED_COLUMN], added[NORMALIZED_COLUMN]]).tolist()
    probability = out_of_fold_probabilities(texts, is_added)[:, 1]
    scored.loc[champion.index.append(added.index), DRIFT_COLUMN] = probability
    scored.loc[added.index, FOREIGN_COLUMN] = _foreign(champion[NORMALIZED_COLUMN].tolist(),
                                                       added[NORMALIZED_COLUMN].tolist(), probability, config)
    return scored


def foreign(rows: pd.DataFrame) -> pd.Series:
    """Which of `rows` the drift scores flagged as foreign (False for rows it did not score)."""
    return rows[FOREIGN_COLUMN].fillna(False).astype(bool)


def _foreign(champion: list[str], added: list[str], probability: np.ndarray, config: ChangesConfig) -> np.ndarray:
    """Which rows added score above all but `foreign_rate` of the champion's rows, in a second, focused pass that
    is cross-fitted: the first pass (every row added against the champion's) learns a small block of another
    task only weakly beside many rows of the same task, so the second learns from the rows added that the first
    scored above nine in ten of the champion's, against the champion's, on one half of each, and scores the other
    halves, then the other way round. A row is scored by a model that neither chose it nor saw it, so an added
    row of the same task scores like a champion's row of the other half, whose scores set the bar."""
    from depthfinder.expectations.audit.baseline import FOLDS, fit_and_score

    first = probability[len(champion):]
    suspect = first > np.quantile(probability[: len(champion)], 0.9)
    rng = np.random.default_rng(SAMPLE_SEED)
    added_half, champion_half = rng.integers(0, 2, len(added)), rng.integers(0, 2, len(champion))
    second, control = np.zeros(len(added)), np.zeros(len(champion))
    for half in (0, 1):
        train_added = [t for t, s, h in zip(added, suspect, added_half, strict=True) if s and h == half]
        train_champion = [t for t, h in zip(champion, champion_half, strict=True) if h == half]
        if len(train_added) < FOLDS:  # too few suspects to learn from: the first pass decides
            return first > np.quantile(probability[: len(champion)], 1 - config.foreign_rate)
        labels = np.r_[np.zeros(len(train_champion), dtype=np.int64), np.ones(len(train_added), dtype=np.int64)]
        other_added, other_champion = added_half != half, champion_half != half
        scored = fit_and_score([*train_champion, *train_added], labels,
                               [*np.asarray(added, dtype=object)[other_added],
                                *np.asarray(champion, dtype=object)[other_champion]])[:, 1]
        second[other_added], control[other_champion] = scored[: other_added.sum()], scored[other_added.sum():]
    return second > np.quantile(control, 1 - config.foreign_rate)


def rows_to_score(table: pd.DataFrame, config: ChangesConfig) -> tuple[pd.Index, pd.Index]:
    """The rows the champion is scored on: samples of the rows added and of the test rows of its own table."""
    tested = side(table, "champion")
    tested = tested[tested["split"] == "test"] if "split" in tested.columns else tested.iloc[:0]
    return sample(side(table, "tonight", "added"), config.max_rows).index, sample(tested, config.max_rows).index


# Where a row of tonight's table stands against the champion, for promotion (selection.promotion): a test
# row both models may fairly be asked about (the champion's table held its text in the test split only), or one to
# report apart: added since the champion, added and flagged foreign, or one whose text the champion learned from.
HELD_OUT, ADDED, FOREIGN, SEEN = "held out", "added", "foreign", "seen"


def standing(champion: pd.DataFrame, tonight: pd.DataFrame, foreign_rows: Collection[int] = ()) -> pd.Series:
    """Each row of `tonight` against the champion's table (same index): SEEN when the champion trained or validated
    on its text, HELD_OUT when its table held the text only in its test split, else ADDED, or FOREIGN when the
    what-changed check flagged it (`foreign_rows`: tonight's `row` numbers). Texts match by their normalised key, so
    a relabelled row of the champion's test split is still held out: neither model learned from it."""
    keys, known = text_keys(tonight["text"]), text_keys(champion["text"])
    tested = champion["split"] == "test" if "split" in champion.columns else pd.Series(False, index=champion.index)
    learned, held_out = set(known[~tested]), set(known[tested])
    flagged = (tonight["row"].isin(list(foreign_rows)) if "row" in tonight.columns
               else pd.Series(False, index=tonight.index))
    return pd.Series(np.select([keys.isin(learned), keys.isin(held_out), flagged], [SEEN, HELD_OUT, FOREIGN], ADDED),
                     index=tonight.index)
