"""What "the same label" means, and what normalising a table's labels changed."""

from __future__ import annotations

import unicodedata

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from depthfinder.expectations.table.normalize import strip_invisible

EXAMPLES = 5  # changed spellings shown, one row each


def normalize_label(label: str) -> str:
    """A label as its class: invisible characters removed, Unicode NFC, surrounding white space stripped.

    Args:
        label: one label as read.

    Returns:
        The class it names: "ne\\u0301gatif" (NFD), "négatif\\u200b" and " négatif " are all "négatif". Case
        and number format are kept ("Négatif" is another spelling, which loading refuses); "" when nothing
        visible is left.
    """
    if label.isascii():  # NFC and the invisible characters leave ASCII alone
        return label.strip()
    # Invisible characters first: one between a letter and its accent would keep NFC from composing them.
    return unicodedata.normalize("NFC", strip_invisible(label)).strip()


def spelled_out(label: str) -> str:
    """`label` as repr() writes it, with the combining marks and invisible characters that repr() leaves as
    they are escaped too: 'ne\\u0301gatif', 'négatif\\u200b'."""
    text = repr(label)
    for char in {char for char in label if unicodedata.category(char).startswith("M") or not strip_invisible(char)}:
        text = text.replace(char, ascii(char)[1:-1])
    return text


def normalize_labels(labels: pd.Series) -> pd.Series:
    """normalize_label of every label (missing stays missing), each distinct label normalised once."""
    codes, uniques = pd.factorize(labels)  # a missing label's code is -1: the None appended below
    forms = np.array([*(normalize_label(str(label)) for label in uniques), None], dtype=object)
    return pd.Series(forms[codes], index=labels.index, dtype="str", name=labels.name)


class NormalizedLabel(BaseModel):
    """One spelling of a label that loading normalised, at the first row that had it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    row: int = Field(description="The row's position in the input (0-based).")
    raw: str = Field(description="The label as written, quoted, with invisible characters and combining marks "
                     "escaped: 'ne\\u0301gatif' (NFD), 'négatif\\u200b'.")
    label: str = Field(description="The class it became.")


class LabelNormalization(BaseModel):
    """How many labels loading made their class (Unicode NFC, invisible characters removed, surrounding white
    space stripped: normalize_label), and a few of them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rows: int = Field(0, description="Rows whose label changed when normalised (0: every label was written as "
                      "its class).")
    spellings: int = Field(0, description="Distinct labels as written that changed.")
    examples: list[NormalizedLabel] = Field([], description="The first row of each of the first changed "
                                            f"spellings (at most {EXAMPLES}).")


def label_normalization(raw: pd.Series, normalized: pd.Series) -> LabelNormalization:
    """What normalising `raw` into `normalized` changed (missing labels left out); a row is a position."""
    rows = np.flatnonzero((raw.notna() & (raw != normalized)).to_numpy(dtype=bool))
    changed = pd.Series(raw.to_numpy(dtype=object)[rows])
    firsts = rows[changed.drop_duplicates().index.to_numpy()]
    examples = [NormalizedLabel(row=int(row), raw=spelled_out(str(raw.iloc[row])), label=str(normalized.iloc[row]))
                for row in firsts[:EXAMPLES]]
    return LabelNormalization(rows=len(rows), spellings=len(firsts), examples=examples)
