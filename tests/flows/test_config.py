from __future__ import annotations

from pathlib import Path

import pytest

from depthfinder.encoder.architectures import ARCHITECTURES
from depthfinder.encoder.checkpoint import PretrainedCheckpoint
from depthfinder.encoder.families import Pretrained, Scratch
from depthfinder.flows.config import RunConfig, SweepConfig, load_run_config


def test_yaml_sections_are_loaded_and_cli_overrides_win(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    path.write_text("data: {dataset: topics}\nsweep: {depths: [4, 1], tolerance: 0.05}\ntrain: {max_epochs: 3}\n")

    config = load_run_config(path, {"sweep": {"tolerance": 0.02, "depths": None}, "train": {}})

    assert config.data.dataset == "topics"
    assert config.sweep.depths == [1, 4]  # sorted
    assert config.sweep.tolerance == 0.02  # the flag beats the file
    assert config.train.max_epochs == 3


def test_cli_data_path_replaces_the_files_builtin_dataset(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    path.write_text("data: {dataset: topics}\n")

    config = load_run_config(path, {"data": {"path": Path("mine.csv"), "dataset": None}})

    assert config.data.path == Path("mine.csv")
    assert config.data.dataset is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("data: {dataset: topics}\nsweep: {depths: [0, 2]}\n", "sweep.depths"),
        ("data: {dataset: topics}\ntrain: {max_epochs: 3, lr: 1}\n", "train.lr"),
        ("data: {dataset: topics}\nsweep: [1, 2]\n", "must map sections"),
        ("data: [unclosed\n", "not valid YAML"),
        ("audit: {strict: true}\n", "data"),
    ],
)
def test_bad_config_names_the_setting(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "run.yaml"
    path.write_text(text)

    with pytest.raises(ValueError, match=message):
        load_run_config(path, {})


def test_missing_config_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="nope.yaml does not exist"):
        load_run_config(tmp_path / "nope.yaml", {})


@pytest.mark.parametrize(("written", "read"), [("off", "off"), ("on", "on"), ("auto", "auto"), ("false", "off")])
def test_halving_reads_yaml_switches(tmp_path, written: str, read: str) -> None:
    path = tmp_path / "run.yaml"
    path.write_text(f"data: {{dataset: topics}}\nsweep: {{halving: {written}}}\n")
    assert load_run_config(path, {}).sweep.halving.mode == read


def test_halving_is_on_by_default_from_four_depths() -> None:
    assert [SweepConfig().halving.halves(depths) for depths in (4, 3, 5)] == [True, False, True]
    assert SweepConfig(halving="on").halving.halves(2) and not SweepConfig(halving="off").halving.halves(6)


def test_class_weights_read_a_bare_yaml_on(tmp_path) -> None:
    path = tmp_path / "run.yaml"
    path.write_text("data: {dataset: topics}\ntrain: {class_weights: on}\n")
    assert load_run_config(path, {}).train.class_weights == "on"


def test_the_first_halving_rung_defaults_to_the_recipes_min_epochs() -> None:
    from depthfinder.encoder.config import TrainConfig

    sweep = SweepConfig()
    assert sweep.halving.rung_budgets(4, TrainConfig()) == [10]  # min_epochs 10, max_epochs 20
    assert sweep.halving.rung_budgets(4, TrainConfig(min_epochs=3)) == [3]
    assert SweepConfig(halving={"epochs": 2}).halving.rung_budgets(6, TrainConfig()) == [2, 4]
    assert sweep.halving.rung_budgets(4, TrainConfig(min_epochs=10, max_epochs=8)) == []  # no rung before the end
    assert sweep.halving.rung_budgets(3, TrainConfig()) == []  # auto: off below four depths
    # The fine-tuning recipe has budgets of its own: two epochs first, out of five.
    assert sweep.halving.rung_budgets(4, Pretrained.recipe(TrainConfig())) == [2]


def test_each_family_sweeps_its_default_depths_unless_depths_are_given() -> None:
    def pretrained(layers: int) -> Pretrained:
        return Pretrained(PretrainedCheckpoint("/x", "bert", layers, 32, "0" * 16, ARCHITECTURES["bert"]))

    assert Scratch().depths(SweepConfig().depths) == [1, 2, 4, 6]
    assert [pretrained(layers).depths(SweepConfig().depths) for layers in (1, 4, 6, 12)] == [
        [1], [1, 2, 4], [1, 2, 4, 6], [1, 2, 4, 8, 12]]
    assert pretrained(6).depths(SweepConfig(depths=[3, 1]).depths) == [1, 3]
    with pytest.raises(ValueError, match="depth 8 is beyond the 6 layers of the pretrained checkpoint /x"):
        pretrained(6).check_depths([2, 8])


def test_checkpoints_are_a_list_and_a_single_one_in_an_older_yaml_config_still_reads(tmp_path) -> None:
    one, several = tmp_path / "one.yaml", tmp_path / "several.yaml"
    one.write_text("data: {dataset: topics}\nmodel: {pretrained: some/where}\n")
    several.write_text("data: {dataset: topics}\nmodel:\n  pretrained:\n    - some/where\n    - /else/where\n")

    assert load_run_config(one, {}).model.pretrained == ["some/where"]
    assert load_run_config(several, {}).model.pretrained == ["some/where", "/else/where"]
    assert load_run_config(several, {"model": {"pretrained": ["x"]}}).model.pretrained == ["x"]  # the flags win
    with pytest.raises(ValueError, match=r"setting model.pretrained \(in .*\): checkpoint some/where is given twice"):
        load_run_config(several, {"model": {"pretrained": ["some/where", "some/where"]}})


def test_a_pretrained_family_needs_a_checkpoint_and_is_the_default_with_one() -> None:
    topics = {"dataset": "topics"}
    assert RunConfig(data=topics).families == ["scratch"]
    assert RunConfig(data=topics, model={"pretrained": "some/where"}).families == ["pretrained"]
    both = RunConfig(data=topics, model={"pretrained": "x"}, sweep={"families": ["scratch", "pretrained"]})
    assert both.families == ["scratch", "pretrained"]
    with pytest.raises(ValueError, match="families holds pretrained but no checkpoint is given"):
        RunConfig(data=topics, sweep={"families": ["pretrained"]})


def test_each_decision_has_its_own_setting_each_defaulting_to_the_tolerances_value(tmp_path: Path) -> None:
    margins = ("tolerance", "promotion_margin", "deployment_margin", "halving_margin", "convergence_gain")
    assert {name: getattr(SweepConfig(), name) for name in margins} == dict.fromkeys(margins, 0.01)
    path = tmp_path / "run.yaml"
    path.write_text("data: {dataset: topics}\nsweep: {tolerance: 0.05, promotion_margin: 0.02, deployment_margin: "
                    "0.005, halving_margin: 0.03, convergence_gain: 0.004}\n")

    sweep = load_run_config(path, {}).sweep

    assert [getattr(sweep, name) for name in margins] == [0.05, 0.02, 0.005, 0.03, 0.004]  # loosening one moves none
    with pytest.raises(ValueError, match="sweep.deployment_margin"):
        load_run_config(path, {"sweep": {"deployment_margin": -0.01}})
