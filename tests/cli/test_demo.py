"""`make run`, the first command a new user types: the Makefile's RUN_ARGS are a valid run of the built-in demo, and
the README quotes them as they are."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from depthfinder.cli.flags import settings_given
from depthfinder.cli.main import build_parser
from depthfinder.flows.config import load_run_config

ROOT = Path(__file__).resolve().parents[2]


def run_args() -> list[str]:
    """The Makefile's RUN_ARGS, its continuation lines joined."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8").replace("\\\n", " ")
    (line,) = [line for line in makefile.splitlines() if line.startswith("RUN_ARGS ?=")]
    return shlex.split(line.removeprefix("RUN_ARGS ?="))


def test_make_run_sweeps_the_built_in_demo_by_halving_on_two_workers_of_their_own() -> None:
    args = build_parser().parse_args(["run", *run_args()])
    config = load_run_config(args.config, settings_given(args))

    assert config.data.dataset == "reviews-negation" and config.sweep.depths == [1, 2, 4]
    assert config.sweep.halving.halves(len(config.sweep.depths))  # three depths: halving on by the flag, not by auto
    # Worker processes, not threads: each candidate keeps its own random stream, so the decision is the one a
    # sweep one candidate at a time makes (threads share torch's generator: dropout masks interleave).
    assert (config.sweep.runner.workers, config.sweep.runner.kind) == (2, "processes")


def test_the_readme_quotes_make_runs_command_as_the_makefile_runs_it() -> None:
    readme = re.sub(r"\s+", " ", (ROOT / "README.md").read_text(encoding="utf-8"))
    assert f"`make run` is `depthfinder run {' '.join(run_args())}`" in readme
