"""One name type for the families: the config's choices are exactly the family classes."""

from __future__ import annotations

from typing import get_args

from encoder.config import FamilyName
from encoder.families import FAMILIES


def test_the_family_name_type_names_exactly_the_family_classes() -> None:
    assert set(get_args(FamilyName)) == set(FAMILIES)
    assert all(family.name == name for name, family in FAMILIES.items())
