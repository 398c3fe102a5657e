"""The registry of audit checks: every check class by its unique name."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pandas as pd

from depthfinder.expectations.audit.checks.base import Check
from depthfinder.expectations.audit.checks.class_imbalance import ClassImbalanceCheck
from depthfinder.expectations.audit.checks.conflicting_labels import ConflictingLabelsCheck
from depthfinder.expectations.audit.checks.cross_split_duplicates import CrossSplitDuplicatesCheck
from depthfinder.expectations.audit.checks.cross_split_near_duplicates import CrossSplitNearDuplicatesCheck
from depthfinder.expectations.audit.checks.cross_split_shared_sides import CrossSplitSharedSidesCheck
from depthfinder.expectations.audit.checks.empty_text import EmptyTextCheck
from depthfinder.expectations.audit.checks.entities_seen_in_train import EntitiesSeenInTrainCheck
from depthfinder.expectations.audit.checks.entity_type_imbalance import EntityTypeImbalanceCheck
from depthfinder.expectations.audit.checks.inconsistent_span_tags import InconsistentSpanTagsCheck
from depthfinder.expectations.audit.checks.label_giveaway_columns import LabelGiveawayColumnsCheck
from depthfinder.expectations.audit.checks.label_in_text import LabelInTextCheck
from depthfinder.expectations.audit.checks.one_side_baseline import OneSideBaselineCheck
from depthfinder.expectations.audit.checks.schema import SchemaCheck
from depthfinder.expectations.audit.checks.suspected_label_noise import SuspectedLabelNoiseCheck
from depthfinder.expectations.audit.checks.swapped_pairs import SwappedPairsCheck
from depthfinder.expectations.audit.checks.tag_scheme_violations import TagSchemeViolationsCheck
from depthfinder.expectations.audit.checks.token_label_noise import TokenLabelNoiseCheck
from depthfinder.expectations.audit.pairs import is_pairs_table
from depthfinder.expectations.audit.token_labels import is_token_table


class CheckRegistry:
    """An ordered collection of check classes; a second check with a taken name is an error."""

    def __init__(self, checks: Iterable[type[Check]] = ()) -> None:
        self._checks: dict[str, type[Check]] = {}
        for check in checks:
            self.register(check)

    def register(self, check: type[Check]) -> type[Check]:
        """Add a check class (usable as a class decorator); ValueError on a duplicate name."""
        for attribute in ("name", "category", "severity", "description"):
            if not getattr(check, attribute, None):
                raise ValueError(f"check class {check.__name__} has no {attribute!r}")
        if check.name in self._checks:
            raise ValueError(
                f"duplicate check name {check.name!r}: {check.__name__} and {self._checks[check.name].__name__}"
            )
        self._checks[check.name] = check
        return check

    def get(self, name: str) -> type[Check]:
        """The check class called `name`; ValueError naming the known ones otherwise."""
        if name not in self._checks:
            raise ValueError(f"unknown check {name!r}; expected one of: {', '.join(self._checks)}")
        return self._checks[name]

    def names(self) -> list[str]:
        """Names of the registered checks, in registration order."""
        return list(self._checks)

    def __iter__(self) -> Iterator[type[Check]]:
        return iter(self._checks.values())

    def __len__(self) -> int:
        return len(self._checks)


# The default audit, in the order its results are reported. A new check: one module
# under expectations/checks/ and one line here.
REGISTRY = CheckRegistry([
    SchemaCheck,
    EmptyTextCheck,
    CrossSplitDuplicatesCheck,
    CrossSplitNearDuplicatesCheck,
    LabelInTextCheck,
    LabelGiveawayColumnsCheck,
    ConflictingLabelsCheck,
    SuspectedLabelNoiseCheck,
    ClassImbalanceCheck,
])

# The audit of a text-pairs table (a `pair` column beside `text`): the default checks, which read a pair as one
# example, and the checks of what only pairs can get wrong, each reported after the default check it is kin to.
PAIR_CHECKS_AFTER: dict[str, tuple[type[Check], ...]] = {
    CrossSplitDuplicatesCheck.name: (SwappedPairsCheck, CrossSplitSharedSidesCheck),
    LabelInTextCheck.name: (OneSideBaselineCheck,),
}
PAIR_REGISTRY = CheckRegistry(
    check for default in REGISTRY for check in (default, *PAIR_CHECKS_AFTER.get(default.name, ()))
)


# The audit of a token-labels table (`tokens` and `tags` beside `text`, one row per sentence; see token_labels.py).
# The text checks read a sentence as one example and its tag string as its label, so the same sentence tagged two
# ways conflicts. Left out, as meaningless per sentence: label_in_text and label_giveaway_columns (a tag string
# is nearly unique), suspected_label_noise and class_imbalance, whose token-level counterparts replace them.
TOKEN_REGISTRY = CheckRegistry([
    SchemaCheck,
    EmptyTextCheck,
    CrossSplitDuplicatesCheck,
    CrossSplitNearDuplicatesCheck,
    EntitiesSeenInTrainCheck,
    ConflictingLabelsCheck,
    TagSchemeViolationsCheck,
    InconsistentSpanTagsCheck,
    TokenLabelNoiseCheck,
    EntityTypeImbalanceCheck,
])


def checks_for(table: pd.DataFrame) -> CheckRegistry:
    """The checks for the table's shape: TOKEN_REGISTRY for a token table, PAIR_REGISTRY for a pairs table,
    REGISTRY otherwise."""
    if is_token_table(table):
        return TOKEN_REGISTRY
    return PAIR_REGISTRY if is_pairs_table(table) else REGISTRY
