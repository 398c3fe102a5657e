"""The change checks, in the order the what-changed report lists them."""

from __future__ import annotations

from depthfinder.expectations.audit.registry import CheckRegistry
from depthfinder.expectations.changes.checks.champion import ChampionDecayCheck
from depthfinder.expectations.changes.checks.labels import ClassesCheck, LabelShiftCheck
from depthfinder.expectations.changes.checks.rows import ChampionTestRowsCheck, RelabelledRowsCheck, RowsAddedCheck
from depthfinder.expectations.changes.checks.text import ForeignRowsCheck, LengthShiftCheck, TextDriftCheck

CHANGE_CHECKS = CheckRegistry([
    RowsAddedCheck,
    RelabelledRowsCheck,
    LabelShiftCheck,
    ClassesCheck,
    TextDriftCheck,
    ForeignRowsCheck,
    LengthShiftCheck,
    ChampionDecayCheck,
    ChampionTestRowsCheck,
])
