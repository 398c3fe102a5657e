"""The CLI is made from the config: every flag is a config field's, takes its default from it, and overrides the YAML
file only when given."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from depthfinder.cli import options
from depthfinder.cli.flags import declaration, settings_given
from depthfinder.cli.main import build_parser
from depthfinder.expectations.table.config import DataConfig
from depthfinder.flows.config import TRACKING_URI, RegistryConfig, RunConfig, load_run_config

# Settings set in the YAML file only. A field added to a section must declare a flag (json_schema_extra={"flag":
# "--name"}) or be named here: either way by a decision, never by omission.
YAML_ONLY = {
    "data": {"dataset_rows", "val_fraction", "test_fraction", "seed", "group_near_duplicates"},
    "audit": {"max_empty_text_fraction", "max_length_ratio", "near_duplicate_threshold", "max_near_duplicate_fraction",
              "label_token_min_purity", "label_token_min_coverage", "label_token_min_rows", "giveaway_min_lift",
              "ignore_columns", "label_noise_warn_fraction", "max_label_noise_fraction", "noise_max_rows",
              "max_imbalance_ratio", "min_class_rows", "examples"},
    "changes": {"retrain_added_fraction", "retrain_label_psi", "label_shift_p", "retrain_decay", "decay_min_rows",
                "warn_drift_auc", "stop_drift_auc", "foreign_rate", "stop_foreign_fraction",
                "stop_relabelled_fraction", "warn_length_shift", "max_rows", "examples"},
    "model": {"d_model", "n_heads", "d_ff", "dropout", "max_len", "vocab_size", "pooling"},
    "train": {"min_epochs", "patience", "batch_size", "learning_rate", "weight_decay", "warmup_fraction", "grad_clip",
              "class_weights", "accelerator", "precision", "seed", "finetune_learning_rate", "finetune_max_epochs",
              "finetune_min_epochs", "finetune_patience"},
    # The margins of the decisions besides the depth rule's tolerance: set in the file, so the CLI's contract holds.
    "sweep": {"alpha", "promotion_margin", "deployment_margin", "halving_margin",
              "convergence_gain"},
    "sweep.crossfit": {"folds"}, "sweep.distill": {"temperature", "alpha", "epochs", "unlabeled"},
    "sweep.pool": {"rows"}, "sweep.runner": set(), "sweep.halving": {"epochs"}, "sweep.extend": {"epochs"},
    "registry": set(),
}
# Where a command's own option (a dest without a section) is declared.
OPTION_MODELS = [model for model in vars(options).values()
                 if isinstance(model, type) and issubclass(model, options.Options)] + [RegistryConfig, DataConfig]


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def _field(dest: str) -> FieldInfo:
    """The config field a flag's destination names: `sweep.depths`, a part's `sweep.crossfit.mode`, or a command's
    own option such as `to`."""
    *sections, name = dest.split(".")
    if sections:
        model = RunConfig
        for section in sections:
            model = model.model_fields[section].annotation
        return model.model_fields[name]
    fields = [model.model_fields[dest] for model in OPTION_MODELS if dest in model.model_fields]
    assert fields, f"flag destination {dest!r} is no config field"
    return fields[0]


def _flags() -> list[tuple[str, argparse.Action]]:
    return [(name, action) for name, command in _commands().items() for action in command._actions
            if action.option_strings and action.dest != "help"]


def test_every_flag_maps_to_a_config_field_and_takes_its_default_from_it() -> None:
    flags = _flags()
    assert len(flags) > 60 and {name for name, _ in flags} >= {"run", "audit", "predict", "history"}

    for command, action in flags:
        field = _field(action.dest)
        declared = declaration(field)
        assert declared is not None, f"{command} {action.option_strings}: its field declares no flag"
        spelled = declared["flag"].format(action.const) if "each" in declared else declared["flag"]
        assert spelled in action.option_strings, (command, action.option_strings, declared)
        assert action.help.startswith(((declared.get("each") or {}).get(action.const) or field.description)[:40])
        default = field.get_default(call_default_factory=True)
        if "." in action.dest:  # a run's setting: absent unless given, so the file's value or the field's stands
            assert action.default is argparse.SUPPRESS, (command, action.dest)
            if default not in (None, False, []):
                shown = ",".join(map(str, default)) if isinstance(default, list) else str(default)
                assert f"(default: {shown})" in action.help, (command, action.dest, action.help)
        elif field.is_required():
            assert action.required, (command, action.dest)
        else:
            assert action.default == default, (command, action.dest, action.default, default)


def test_the_tracking_uri_has_one_default_everywhere() -> None:
    uris = {action.default for _, action in _flags() if action.dest == "tracking_uri"}
    assert uris == {TRACKING_URI} and RegistryConfig().tracking_uri == TRACKING_URI


def _settings() -> dict[str, dict[str, FieldInfo]]:
    """Every section's settings by its dotted name (`sweep`, and its parts `sweep.crossfit`, ...)."""
    sections = {}
    for name, field in RunConfig.model_fields.items():
        for key, setting in field.annotation.model_fields.items():
            if isinstance(setting.annotation, type) and issubclass(setting.annotation, BaseModel):
                sections[f"{name}.{key}"] = setting.annotation.model_fields
            else:
                sections.setdefault(name, {})[key] = setting
    return sections


def test_every_setting_declares_a_flag_or_is_set_in_the_yaml_file_only() -> None:
    sections = _settings()
    assert set(sections) == set(YAML_ONLY)
    for section, settings in sections.items():
        undecided = [name for name, setting in settings.items()
                     if declaration(setting) is None and name not in YAML_ONLY[section]]
        assert not undecided, (
            f"{section}.{', '.join(undecided)}: declare its flag on the field (json_schema_extra={{'flag': "
            f"'--{undecided[0].replace('_', '-')}'}}) or add it to YAML_ONLY in {Path(__file__).name}"
        )
        stale = [name for name in YAML_ONLY[section] if name not in settings or declaration(settings[name])]
        assert not stale, f"YAML_ONLY[{section!r}] names {stale}: no such setting, or it has a flag"


def test_a_declaration_with_an_unknown_key_is_refused() -> None:
    field = FieldInfo(default=1, json_schema_extra={"flag": "--x", "hepl": "typo"})
    with pytest.raises(TypeError, match="hepl"):
        declaration(field)


def _run(tmp_path: Path, yaml: str, *argv: str) -> RunConfig:
    (tmp_path / "c.yaml").write_text(yaml, encoding="utf-8")
    args = build_parser().parse_args(["run", "--config", str(tmp_path / "c.yaml"), *argv])
    return load_run_config(args.config, settings_given(args))


def test_a_flag_given_overrides_the_yaml_file_and_one_not_given_leaves_it(tmp_path: Path) -> None:
    yaml = ("data: {dataset: topics, text_col: body}\naudit: {drop: [conflicts]}\nchanges: {skip_minor: true}\n"
            "sweep: {tolerance: 0.02, depths: [2, 3], extend: {unconverged: true}, check_lr: true}\n"
            "registry: {tracking_uri: 'sqlite:///a.db', workdir: w}\n")

    kept = _run(tmp_path, yaml)
    assert (kept.data.text_col, kept.audit.drop, kept.changes.skip_minor) == ("body", ["conflicts"], True)
    assert (kept.sweep.tolerance, kept.sweep.depths, kept.sweep.extend.unconverged) == (0.02, [2, 3], True)
    assert (kept.registry.tracking_uri, kept.registry.workdir) == ("sqlite:///a.db", Path("w"))

    given = _run(tmp_path, yaml, "--data", "t.csv", "--drop-leaks", "--drop-empty", "--no-skip-minor",
                 "--tolerance", "0.05", "--depths", "1,4", "--no-extend-unconverged", "--tracking-uri", "sqlite:///b.db")
    assert (given.data.path, given.data.dataset, given.data.text_col) == (Path("t.csv"), None, "body")
    assert given.audit.drop == ["empty", "leaks"] and given.changes.skip_minor is False  # in the order of the kinds
    assert (given.sweep.tolerance, given.sweep.depths, given.sweep.extend.unconverged) == (0.05, [1, 4], False)
    assert given.sweep.check_lr is True and given.registry.workdir == Path("w")
    assert given.registry.tracking_uri == "sqlite:///b.db"


def test_no_flag_and_no_file_leave_every_default() -> None:
    args = build_parser().parse_args(["run", "--dataset", "topics"])
    assert settings_given(args) == {"data": {"dataset": "topics"}}
    assert load_run_config(None, settings_given(args)) == RunConfig(data={"dataset": "topics"})


def test_a_parts_flag_keeps_the_files_other_settings_of_that_part(tmp_path: Path) -> None:
    yaml = "data: {dataset: topics}\nsweep: {crossfit: {mode: all, folds: 3}, runner: processes}\n"

    config = _run(tmp_path, yaml, "--crossfit-budget", "2", "--workers", "2")

    assert (config.sweep.crossfit.mode, config.sweep.crossfit.folds, config.sweep.crossfit.budget) == ("all", 3, 2.0)
    assert (config.sweep.runner.kind, config.sweep.runner.workers) == ("processes", 2)  # the bare kind, then a flag
    assert _run(tmp_path, "data: {dataset: topics}\nsweep: {crossfit: off}\n").sweep.crossfit.mode == "off"


def test_an_earlier_versions_flat_sweep_settings_are_read_in_their_parts_and_said_so(tmp_path, capsys) -> None:
    flat = ("data: {dataset: topics}\nsweep: {crossfit: on, crossfit_folds: 4, distill_alpha: 0.2, unlabeled: u.csv,"
            " unlabeled_rows: 500, task_runner: processes, workers: 3, halving: off, halving_epochs: 2,"
            " extend_unconverged: true}\n")
    nested = ("data: {dataset: topics}\nsweep: {crossfit: {mode: on, folds: 4}, distill: {alpha: 0.2},"
              " pool: {unlabeled: u.csv, rows: 500}, runner: {kind: processes, workers: 3},"
              " halving: {mode: off, epochs: 2}, extend: {unconverged: true}}\n")

    read = _run(tmp_path, flat, "--crossfit-budget", "1.5")
    line = capsys.readouterr().err
    today = _run(tmp_path, nested, "--crossfit-budget", "1.5")

    assert read == today and read.sweep.crossfit.budget == 1.5
    assert line.count("\n") == 1 and "crossfit_folds -> crossfit.folds" in line and "task_runner -> runner.kind" in line
    assert capsys.readouterr().err == ""  # today's form: nothing to say
    with pytest.raises(ValueError, match="sweep.crossfit.folds"):
        _run(tmp_path, flat.replace("crossfit_folds: 4", "crossfit_folds: 1"))
