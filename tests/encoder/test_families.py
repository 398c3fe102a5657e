"""One name type for the families; and a family knows, before training, the fewest parameters a candidate of a
depth can have (the hard limit on parameters is refused up front only when no candidate can meet it)."""

from __future__ import annotations

from typing import get_args

import pytest

from encoder.config import FamilyName, ModelConfig
from encoder.families import FAMILIES, Pretrained, Scratch
from encoder.tokenizer import train_tokenizer
from tests.encoder.tiny_checkpoint import tiny_checkpoint

TEXTS = ["a great film with a fine cast", "an awful mess of a plot", "music and acting, truly fun"] * 20


@pytest.mark.parametrize("model_type", ["bert", "distilbert"])
@pytest.mark.parametrize("pooling", ["mean", "head"])
def test_a_pretrained_candidates_fewest_parameters_are_those_of_its_network_with_two_classes(
    model_type: str, pooling: str, tmp_path
) -> None:
    model = ModelConfig(pretrained=str(tiny_checkpoint(tmp_path / "ckpt", TEXTS, layers=3, model_type=model_type)),
                        pretrained_pooling=pooling)
    family = Pretrained.open(model)

    for depth in (1, 3):
        fewest = family.fewest_params(depth, model)
        assert fewest == family.network(depth, 2, model, None).num_params()
        assert fewest < family.network(depth, 5, model, None).num_params()
    assert family.fewest_params(1, model) < family.fewest_params(3, model)


def test_a_scratch_candidates_fewest_parameters_bound_every_vocabulary_it_can_learn() -> None:
    model = ModelConfig(d_model=16, n_heads=2, d_ff=32, vocab_size=300, max_len=32)
    family = Scratch()
    for texts in (["a b"], TEXTS):
        tokenizer = train_tokenizer(texts, model.vocab_size)
        for depth in (1, 2):
            assert family.fewest_params(depth, model) < family.network(depth, 2, model, tokenizer).num_params()
    assert family.fewest_params(1, model) < family.fewest_params(2, model)


def test_counting_a_huge_candidate_allocates_nothing() -> None:
    """64 blocks of width 4096 would be about 13 billion parameters: 52 GB if the count built the network."""
    model = ModelConfig(d_model=4096, n_heads=32, d_ff=16384, vocab_size=8000)

    assert Scratch().fewest_params(64, model) > 12 * 10**9


def test_the_family_name_type_names_exactly_the_family_classes() -> None:
    assert set(get_args(FamilyName)) == set(FAMILIES)
    assert all(family.name == name for name, family in FAMILIES.items())
