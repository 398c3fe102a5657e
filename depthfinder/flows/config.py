"""The run's settings: one frozen model per concern, loaded from YAML with CLI overrides.

The same objects are the CLI's target, the Prefect flow's parameters (so the UI renders
them as forms) and what is logged to MLflow. A setting that is also a flag of `depthfinder
run` says so on its field, `json_schema_extra={"flag": "--name"}`: the CLI is built from
these declarations (cli/flags.py), and so is the flag column of docs/configuration.md.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError, field_validator, model_validator

from depthfinder.encoder.config import SCRATCH_DEPTHS, SEED_MAX, TOKENS_POOLING, FamilyKind, ModelConfig, TrainConfig
from depthfinder.evidence.metrics import ENTITY_METRICS
from depthfinder.expectations.audit.config import AuditConfig
from depthfinder.expectations.changes.config import ChangesConfig
from depthfinder.expectations.table.config import DataConfig
from depthfinder.flows.older import upgrade_sweep
from depthfinder.runtime.credentials import hide_credentials
from depthfinder.selection.crossfit import CrossfitConfig
from depthfinder.selection.distillation import DistillConfig
from depthfinder.selection.halving import HalvingConfig
from depthfinder.selection.pool import PoolConfig
from depthfinder.selection.settings import SelectionRule, SweepPart
from depthfinder.selection.strategies import StrategyName

DATA_SOURCES = {"path", "dataset"}
MAX_WORKERS = 256  # more candidates at once than any one machine or local cluster trains: a typo
MAX_DEPTH = 64  # deeper than any encoder in use (BERT-large: 24 layers): a typo, not a candidate
# A registered model name also names a lock file and a Prefect limit, and sits in models:/NAME/VERSION URIs.
MODEL_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
# Where runs and models are recorded unless told: MLflow's own default store, a SQLite file in the working folder.
TRACKING_URI = "sqlite:///mlflow.db"
WORKDIR = Path(".depthfinder")  # the work folder: prepared data, tokenizers, checkpoints, logs


class RunnerConfig(SweepPart):
    """Where candidates train (sweep.runner)."""

    kind: Literal["threads", "processes", "dask"] = Field(
        "threads", description="Where candidates train: threads of this process, worker processes, or a Dask cluster.",
        json_schema_extra={"flag": "--task-runner"},
    )
    workers: int = Field(
        1, strict=True, ge=1, le=MAX_WORKERS,
        description="Candidates trained at once (Dask: workers of a local cluster).",
        json_schema_extra={"flag": "--workers"},
    )
    dask_address: str | None = Field(
        None, description="Scheduler of an existing Dask cluster; a local one otherwise.",
        json_schema_extra={"flag": "--dask-address"},
    )

    @property
    def per_machine(self) -> int:
        """Candidates training at once on one machine: the workers, except on an existing Dask cluster, whose
        machines this one cannot see (there each worker takes its machine's cores, or its OMP_NUM_THREADS)."""
        return 1 if self.kind == "dask" and self.dask_address else self.workers


class ExtendConfig(SweepPart):
    """More epochs for candidates still improving when their budget ended (sweep.extend)."""

    unconverged: bool | None = Field(
        None,
        description="Give candidates still improving when their budget ended (not_converged) `epochs` more, "
        "from their last state with a restarted learning-rate schedule, before the rule decides; null = on in the "
        "nightly deployment, off in `depthfinder run`.",
        json_schema_extra={"flag": "--extend-unconverged"},
    )
    epochs: int | None = Field(
        None, strict=True, ge=1, description="Epochs of such an extension; null = half the recipe's max_epochs."
    )

    def epochs_for(self, recipe: TrainConfig) -> int:
        """Epochs a not-converged candidate of a family with this recipe gets more (0: no extension)."""
        if not self.unconverged:
            return 0
        return self.epochs or max(1, recipe.max_epochs // 2)


class SweepConfig(SelectionRule):
    """Which depths to try and how to choose among them (the selection rule's settings, and the sweep's)."""

    depths: list[StrictInt] | None = Field(
        None, min_length=1,
        description=f"Candidate depths (encoder blocks; 1 to {MAX_DEPTH}) of every family; null = "
        f"{', '.join(map(str, SCRATCH_DEPTHS))} from scratch, and 1, 2, 4, ... up to and including the pretrained "
        "checkpoint's layer count.",
        json_schema_extra={"flag": "--depths"},
    )
    families: list[FamilyKind] | None = Field(
        None, min_length=1,
        description="Which encoders to sweep, chosen among together: scratch (depthfinder's own, trained from "
        "scratch) and pretrained (the bottom layers of each checkpoint of model.pretrained, fine-tuned: one family "
        "per checkpoint, named after it); null = pretrained when model.pretrained is set, else scratch.",
        json_schema_extra={"flag": "--families"},
    )
    seeds: list[Annotated[StrictInt, Field(ge=0, le=SEED_MAX)]] = Field(
        [1], min_length=1, description="Seeds trained per depth (0 to 2^32 - 1); the rule uses their mean.",
        json_schema_extra={"flag": "--seeds"},
    )
    strategy: StrategyName = Field(
        "grid", description="How depths are learned: grid, one fine-tune of each depth (halving may prune); search, "
        "every depth 1..L of a family screened by one fine-tune of depth L with a probe on each layer, then separate "
        "fine-tunes only of the depths the screen cannot rule out (about log2(L) of them; none once the validation "
        "rows could not show one within the tolerance): every depth answered for at most about two fine-tunes "
        "(docs/selection.md).",
        json_schema_extra={"flag": "--strategy"},
    )
    halving: HalvingConfig = Field(
        HalvingConfig(), description="Successive halving (its mode alone may be given: `halving: off`).")
    extend: ExtendConfig = Field(
        ExtendConfig(), description="More epochs for candidates still improving (`extend: true` turns it on).")
    check_lr: bool = Field(
        False,
        description="Before the sweep, train the shallowest and deepest depth of each family for the first halving "
        "budget at 1/3, 1 and 3 times the recipe's peak learning rate, and report whether the best rate moves with "
        "depth (the 1x runs are the sweep's own first epochs, reused).",
        json_schema_extra={"flag": "--check-lr"},
    )
    budget_flops: float | None = Field(
        None, gt=0,
        description="Training FLOPs the sweep may spend (3 x FLOPs per example x train rows x epochs, over every "
        "candidate): families run cheapest first, and once it is spent no further step starts; the decision says "
        "what it left untried. null = no budget.",
        json_schema_extra={"flag": "--budget-flops"},
    )
    crossfit: CrossfitConfig = Field(
        CrossfitConfig(), description="Cross-fitting (its mode alone may be given: `crossfit: off`).")
    distill: DistillConfig = Field(
        DistillConfig(), description="Distillation (its mode alone may be given: `distill: on`).")
    pool: PoolConfig = Field(PoolConfig(), description="Unlabelled texts from the labelled rows' source.")
    runner: RunnerConfig = Field(
        RunnerConfig(), description="Where candidates train (its kind alone may be given: `runner: processes`).")

    @model_validator(mode="before")
    @classmethod
    def _read_older(cls, values: object) -> object:
        return upgrade_sweep(values)[0]

    @field_validator("depths")
    @classmethod
    def _positive_unique(cls, depths: list[int] | None) -> list[int] | None:
        if depths is None:
            return None
        if any(not 1 <= d <= MAX_DEPTH for d in depths) or len(set(depths)) != len(depths):
            raise ValueError(f"depths must be distinct integers from 1 to {MAX_DEPTH}, got {depths}")
        return sorted(depths)

    @field_validator("families")
    @classmethod
    def _distinct_families(cls, families: list[str] | None) -> list[str] | None:
        if families is not None and len(set(families)) != len(families):
            raise ValueError(f"families must be distinct, got {families}")
        return families


    @field_validator("seeds")
    @classmethod
    def _unique(cls, seeds: list[int]) -> list[int]:
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"seeds must be distinct, got {seeds}")
        return seeds


class RegistryConfig(BaseModel):
    """Where runs and models are recorded."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    tracking_uri: str = Field(
        TRACKING_URI, description="MLflow tracking and registry URI.", json_schema_extra={"flag": "--tracking-uri"}
    )
    experiment: str = Field(
        "depthfinder", min_length=1, pattern=r"\S", description="MLflow experiment of the sweep runs.",
        json_schema_extra={"flag": "--experiment"},
    )
    model_name: str = Field(
        "depthfinder", pattern=MODEL_NAME_PATTERN,
        description="Registered model name: letters, digits, '.', '_' and '-', starting with a letter or digit.",
        json_schema_extra={"flag": "--model-name"},
    )
    workdir: Path = Field(
        WORKDIR, description="Folder for prepared data, tokenizers and checkpoints.",
        json_schema_extra={"flag": "--workdir"},
    )


class RunConfig(BaseModel):
    """Everything one retraining run needs."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    data: DataConfig
    audit: AuditConfig = AuditConfig()
    changes: ChangesConfig = ChangesConfig()
    model: ModelConfig = ModelConfig()
    train: TrainConfig = TrainConfig()
    sweep: SweepConfig = SweepConfig()
    registry: RegistryConfig = RegistryConfig()

    @model_validator(mode="before")
    @classmethod
    def _token_defaults(cls, values: object) -> object:
        """A run of token labels pools by token and chooses by entity F1 unless told otherwise (and is refused then,
        by `_token_labels_settings`)."""
        data = values.get("data") if isinstance(values, dict) else None
        if (data.get("task") if isinstance(data, dict) else getattr(data, "task", None)) != "tokens":
            return values
        return {**values, "model": _defaulted(values.get("model"), TOKEN_DEFAULTS["model"]),
                "sweep": _defaulted(values.get("sweep"), TOKEN_DEFAULTS["sweep"])}

    @model_validator(mode="after")
    def _token_labels_settings(self) -> RunConfig:
        tokens = self.data.task == "tokens"
        poolings = {"--pooling": self.model.pooling, "--pretrained-pooling": self.model.pretrained_pooling}
        for flag, pooling in poolings.items():
            if tokens != (pooling == TOKENS_POOLING):
                raise ValueError(f"{flag} {pooling}: " + ("a model of token labels labels every token: leave it out"
                                                          if tokens else "tokens is the pooling of --task tokens"))
        if tokens != (self.sweep.metric in ENTITY_METRICS):
            raise ValueError(f"--metric {self.sweep.metric}: " + (
                f"token labels are scored by their entities: {' or '.join(ENTITY_METRICS)}" if tokens else
                f"{self.sweep.metric} scores token labels (--task tokens)"))
        if tokens:
            pool = self.sweep.pool.unlabeled is not None
            refused = {"--labels (a tagger's pool teaches students; it bounds no depth)": self.sweep.pool.labels
                       is not None,
                       "--unlabeled with --distill off (a tagger's pool teaches students alone)":
                           pool and self.sweep.distill.mode == "off"}
            if given := [setting for setting, on in refused.items() if on]:
                raise ValueError(f"--task tokens does not take {', '.join(given)}")
        return self

    @model_validator(mode="after")
    def _pretrained_family_needs_a_checkpoint(self) -> RunConfig:
        if "pretrained" in self.families and self.model.pretrained is None:
            raise ValueError("sweep.families holds pretrained but no checkpoint is given (--pretrained)")
        return self

    @property
    def families(self) -> list[FamilyKind]:
        """The kinds of family this run sweeps, in order: as configured, else the one the model settings imply
        (pretrained: one family per checkpoint)."""
        return self.sweep.families or (["pretrained"] if self.model.pretrained else ["scratch"])


# What a run of token labels sets where its settings leave it out.
TOKEN_DEFAULTS = {"model": {"pooling": TOKENS_POOLING, "pretrained_pooling": TOKENS_POOLING},
                  "sweep": {"metric": "entity_f1"}}


def _defaulted(section: object, defaults: dict[str, Any]) -> object:
    """A config section (its mapping, or the model itself) with `defaults` where it does not set them."""
    if section is None:
        return dict(defaults)
    if isinstance(section, dict):
        return {**defaults, **section}
    unset = {key: value for key, value in defaults.items() if key not in section.model_fields_set}
    return section.model_validate({**section.model_dump(exclude_unset=True), **unset}) if unset else section


def settings_used(config: RunConfig) -> RunConfig:
    """`config` as a run applies it, for the parameters it logs: a switch left null (on in the nightly deployment,
    which sets it, off in `depthfinder run`) is off, so MLflow shows the value used, not `None`."""
    extend = config.sweep.extend.model_copy(update={"unconverged": bool(config.sweep.extend.unconverged)})
    sweep = config.sweep.model_copy(update={"extend": extend})
    changes = config.changes.model_copy(update={"skip_minor": bool(config.changes.skip_minor)})
    return config.model_copy(update={"sweep": sweep, "changes": changes})


def without_credentials(config: RunConfig) -> RunConfig:
    """`config` with the credentials of its tracking URI kept in this process's environment (runtime.credentials):
    what is passed on, logged and stored from here on carries none."""
    registry = config.registry
    hidden = registry.model_copy(update={"tracking_uri": hide_credentials(registry.tracking_uri)})
    return config.model_copy(update={"registry": hidden})


def check_model_name(name: str) -> None:
    """ValueError in one line when `name` cannot be a registered model's name (the rule of RegistryConfig)."""
    if not re.fullmatch(MODEL_NAME_PATTERN, name):
        rule = RegistryConfig.model_fields["model_name"].description.removeprefix("Registered model name: ")
        raise ValueError(f"model name {name!r} is not one depthfinder registers: {rule[:-1]}, at most 100 characters")


def load_run_config(path: Path | None, overrides: dict[str, dict[str, Any]]) -> RunConfig:
    """Read a YAML config (sections named like RunConfig's fields) and apply CLI overrides.

    Raises ValueError naming the file or the setting at fault.
    """
    sections: dict[str, dict[str, Any]] = {}
    if path is not None:
        sections = _read_yaml(path)
    if "sweep" in sections:
        sections["sweep"], moved = upgrade_sweep(sections["sweep"])
        if moved:
            print(f"depthfinder: {path}: the sweep's settings of an earlier version read in their parts "
                  f"({', '.join(moved)}); write them so to silence this", file=sys.stderr)
    for section, values in overrides.items():
        given = {k: v for k, v in values.items() if v is not None}
        if section == "data" and given.keys() & DATA_SOURCES:
            for source in DATA_SOURCES - given.keys():  # the CLI's data source wins over the file's
                sections.get("data", {}).pop(source, None)
        _merge(sections.setdefault(section, {}), given)
    try:
        return RunConfig.model_validate(sections)
    except ValidationError as exc:
        raise ValueError(first_error(exc, path)) from None


def _merge(settings: dict[str, Any], given: dict[str, Any]) -> None:
    """`given` written over `settings`, a part's mapping merged setting by setting (`--crossfit-budget` keeps the
    file's crossfit.folds)."""
    for key, value in given.items():
        if isinstance(value, dict) and isinstance(settings.get(key), dict):
            _merge(settings[key], value)
        else:
            settings[key] = value


def _read_yaml(path: Path) -> dict[str, dict[str, Any]]:
    if not path.exists():
        raise ValueError(f"config file {path} does not exist")
    if not path.is_file():
        raise ValueError(f"config file {path} is not a file")
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise ValueError(f"config file {path} cannot be read: {exc.strerror or exc}") from None
    except RecursionError:  # the parser recurses once per level
        raise ValueError(f"config file {path} nests deeper than it can be read; a config is sections "
                         f"({', '.join(RunConfig.model_fields)}) of settings") from None
    except UnicodeDecodeError as exc:
        byte = exc.object[exc.start]
        raise ValueError(f"config file {path} is not UTF-8 (byte 0x{byte:02x} at offset {exc.start})") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"config file {path} is not valid YAML: {_yaml_problem(exc)}") from None
    if not isinstance(loaded, dict) or not all(isinstance(v, dict) for v in loaded.values()):
        raise ValueError(f"config file {path} must map sections ({', '.join(RunConfig.model_fields)}) to settings")
    return loaded


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """Where and what, on one line: `line 3, column 7: mapping values are not allowed here`."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}" if mark is not None else problem


def first_error(exc: ValidationError, path: Path | None) -> str:
    """A validation error's first problem in one line: `setting sweep.depths (in c.yaml): ...`."""
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or "config"
    source = f" (in {path})" if path is not None else ""
    # A validator's ValueError reads "Value error, <what>" in pydantic's message: the user needs only the what.
    message = str(error["ctx"]["error"]) if error["type"] == "value_error" and "error" in error.get("ctx", {}) \
        else error["msg"]
    return f"setting {where}{source}: {message}"
