"""Every command of `depthfinder`: its name, what it does, the flags it takes (from the config's fields) and its
handler."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from depthfinder.cli import pipeline, registry
from depthfinder.cli.flags import Flag, flags_of
from depthfinder.cli.options import (
    AuditOptions,
    ConfigFile,
    DeployOptions,
    ExportOptions,
    HistoryOptions,
    PredictOptions,
    RollbackOptions,
    RunOptions,
)
from depthfinder.expectations.table.config import DataConfig
from depthfinder.flows.config import RegistryConfig, RunConfig

# history and rollback name the model as the CLI contract writes them: `depthfinder history --model NAME`.
MODEL_NAME = {"model_name": ("--model", "--model-name")}


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    handler: Callable[[argparse.Namespace], int]
    flags: list[Flag]


def section_flags(*sections: str, only: tuple[str, ...] = ()) -> list[Flag]:
    """The flags of the run's settings in `sections`: given, each overrides its setting in the YAML file."""
    return [flag for section in sections
            for flag in flags_of(RunConfig.model_fields[section].annotation, *only, section=section, parts=True)]


def commands() -> list[Command]:
    """The commands in the order `depthfinder --help` lists them (their handlers looked up now: a test may replace
    one)."""
    data = [*section_flags("data", "audit"), *flags_of(ConfigFile)]
    return [
        Command("run", "audit the data, sweep depth, register the chosen model", pipeline.run,
                [*data, *section_flags("changes", "model", "train", "sweep", "registry"), *flags_of(RunOptions)]),
        Command("audit", "audit a labelled table without training", pipeline.audit,
                [*data, *section_flags("registry", only=("workdir",)), *flags_of(AuditOptions)]),
        Command("predict", "label texts with a registered model", registry.predict,
                [*flags_of(PredictOptions), *flags_of(DataConfig, "text_col"),
                 *flags_of(RegistryConfig, "tracking_uri")]),
        Command("export", "write the files of a registered model to a folder", registry.export,
                [*flags_of(ExportOptions), *flags_of(RegistryConfig, "tracking_uri")]),
        Command("deploy", "serve the nightly retrain (and the audit, on demand) from this machine; needs a Prefect "
                "server", pipeline.deploy, [*data, *flags_of(DeployOptions)]),
        Command("datasets", "list the built-in datasets", pipeline.datasets, []),
        Command("unlock", "free the retrain lock of a model that a dead run of an older depthfinder left taken",
                registry.unlock, flags_of(RegistryConfig, "model_name", "workdir")),
        Command("history", "every move of a model's aliases; which version was champion when", registry.history,
                [*flags_of(HistoryOptions),
                 *flags_of(RegistryConfig, "model_name", "tracking_uri", spelled=MODEL_NAME)]),
        Command("rollback", "move champion back to previous-champion (recorded as a move)", registry.rollback,
                [*flags_of(RollbackOptions),
                 *flags_of(RegistryConfig, "model_name", "tracking_uri", "workdir", spelled=MODEL_NAME)]),
    ]
