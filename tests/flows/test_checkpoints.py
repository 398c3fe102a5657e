"""Several pretrained checkpoints in one decision, end to end: each a family of its own named after its folder, with
its own depths (capped at its layers), the cheaper swept first, one decision over every (checkpoint, depth) whose
sentence names the other checkpoint's best, the chosen checkpoint's model registered and predicting in a fresh
process; a rerun after a stop (SIGTERM) in the second checkpoint trains only what was not finished (the run the
other tests read is that rerun); a budget says
what it left untried; the flag repeats, YAML takes a list or a string, and a checkpoint given twice or a path that
is not there is one line and exit 2."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import depthfinder.encoder.training
from depthfinder.cli.main import main
from depthfinder.expectations.table.datasets import DATASETS
from depthfinder.flows.summary import RunSummary
from depthfinder.runtime.interrupt import STOP
from depthfinder.selection.rule import choose_depth
from tests.encoder.tiny_checkpoint import tiny_checkpoint
from tests.flows.test_encoder_types import PREDICT

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")
CONFIG = """
data: {{dataset: topics, dataset_rows: 400}}
model: {{max_len: 32, pretrained: {pretrained}}}
train: {{batch_size: 32, finetune_learning_rate: 0.003, finetune_max_epochs: 3, finetune_min_epochs: 2,
        finetune_patience: 2}}
sweep: {{depths: [1, 2, 4], crossfit: off{sweep}}}
"""


def write_config(folder: Path, pretrained: str, sweep: str = "") -> Path:
    path = folder / "run.yaml"
    path.write_text(CONFIG.format(pretrained=pretrained, sweep=sweep))
    return path


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> Path:
    """Two checkpoints of different widths and depths: `small` (2 layers, hidden 16) and `wide` (4 layers, 48)."""
    folder = tmp_path_factory.mktemp("checkpoints")
    texts = DATASETS["topics"].generate(400, 1)["text"]
    tiny_checkpoint(folder / "wide", texts, layers=4, hidden=48, seed=1)
    tiny_checkpoint(folder / "small", texts, layers=2, hidden=16, seed=2)
    return folder


@dataclass(frozen=True)
class Attempts:
    """One run over both checkpoints, stopped (SIGTERM, as training checks for it) in the second checkpoint, then
    the same command again: each attempt's exit code and what it trained, and the finished run."""

    codes: tuple[int, int]
    stopped_lines: list[str]  # the first attempt's lines of its own on stderr
    first: list[tuple[str, int]]
    second: list[tuple[str, int]]
    folder: Path
    summary: RunSummary


@pytest.fixture(scope="module")
def run(prefect_server, checkpoints, tmp_path_factory) -> Attempts:
    """Both checkpoints given by the repeated flag, the costlier first (the sweep orders them by cost); halving
    across checkpoints has its own tests (tests/selection/test_strategies.py). The first attempt stops as it
    starts the wide checkpoint's depth 2; the rerun finishes it, and the tests of the decision read the rerun's."""
    folder = tmp_path_factory.mktemp("both")
    write_config(folder, "null", ", halving: off")
    real_train = depthfinder.encoder.training.train_candidate
    trained: list[tuple[str, int]] = []
    stop = True

    def stops_in_wide_depth_2(data, depth, *args, **kwargs):
        if (kwargs["family"].name, depth) == ("wide", 2) and stop:
            STOP.request("SIGTERM")
            STOP.raise_if_requested("training wide depth 2")
        trained.append((kwargs["family"].name, depth))
        return real_train(data, depth, *args, **kwargs)

    command = ["run", "--config", "run.yaml", "--pretrained", str(checkpoints / "wide"), "--pretrained",
               str(checkpoints / "small"), "--summary-json", "summary.json"]
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        patch.setattr(depthfinder.encoder.training, "train_candidate", stops_in_wide_depth_2)
        with contextlib.redirect_stderr(io.StringIO()) as stderr:
            first = main(command)
        before, stop = list(trained), False
        second = main(command)
    summary = RunSummary.from_dict(json.loads((folder / "summary.json").read_text()))
    lines = [line for line in stderr.getvalue().splitlines() if line.startswith("depthfinder:")]
    return Attempts((first, second), lines, before, trained[len(before):], folder, summary)


def test_each_checkpoint_sweeps_its_own_depths_capped_at_its_layers_cheaper_first(run) -> None:
    summary = run.summary
    assert [(c.family, c.depth) for c in summary.candidates] == [
        ("small", 1), ("small", 2), ("wide", 1), ("wide", 2), ("wide", 4)]
    costs = {(c.family, c.depth): c.cost.flops_per_example for c in summary.candidates if c.cost}
    assert costs["small", 2] < costs["wide", 2]  # the same depth of the wider checkpoint costs more


def test_one_decision_over_every_checkpoint_names_the_others_best(run) -> None:
    summary = run.summary
    rule = summary.rule
    chosen, other = rule.selected_family, ({"small", "wide"} - {rule.selected_family}).pop()
    assert {s.family for s in rule.scores} == {"small", "wide"}
    assert f"{chosen} depth {rule.selected_depth}" in rule.reason
    named = (f"at {other} depth {rule.best_depth}" if rule.best_family == other
             else f"; {other} best {rule.metric}")  # the other checkpoint's best, as the best or beside it
    assert named in rule.reason
    assert choose_depth(summary.candidates, rule.settings) == rule
    assert (summary.model.family, summary.model.depth) == (chosen, summary.selected_depth)


def test_the_chosen_checkpoints_model_predicts_in_a_fresh_process(run) -> None:
    folder = run.folder
    served = subprocess.run(
        [sys.executable, "-c", PREDICT, f"sqlite:///{folder / 'mlflow.db'}", "models:/depthfinder@champion",
         "The striker scored twice.", "Whisk the eggs into the flour."],
        capture_output=True, text=True, timeout=300, cwd=folder,
    )
    assert served.returncode == 0, served.stderr[-2000:]
    labels = served.stdout.split()
    assert len(labels) == 2 and set(labels) <= set(DATASETS["topics"].generate(400, 1)["label"])


def test_the_card_has_every_checkpoints_curve_and_the_version_names_its_checkpoint(run, checkpoints) -> None:
    from mlflow import MlflowClient

    from depthfinder.encoder.checkpoint import resolve_checkpoint

    folder, summary = run.folder, run.summary
    version = MlflowClient(tracking_uri=f"sqlite:///{folder / 'mlflow.db'}").get_model_version(
        "depthfinder", summary.model.version)
    curves = version.description.split("**Every family's curve**")[1].split("\n\n**")[0]
    rows = {line.split(" | ")[0].strip("| "): line for line in curves.splitlines() if line.startswith("| ")}
    assert set(rows) == {"family", "small", "wide"}
    assert rows["small"].count(" / ") == 2 and rows["wide"].count(" / ") == 3  # one cell per depth it has
    chosen = checkpoints / summary.rule.selected_family
    assert version.tags["family"] == summary.rule.selected_family
    assert version.tags["checkpoint"] == resolve_checkpoint(str(chosen)).content_hash


def test_a_rerun_after_a_stop_in_the_second_checkpoint_trains_only_what_was_not_finished(run) -> None:
    assert run.codes == (143, 0)  # stopped by SIGTERM; then done
    # one line, the stop's, though the flow ended on the training thread's Interrupted before the signal reached it
    assert len(run.stopped_lines) == 1 and run.stopped_lines[0].startswith("depthfinder: stopped by SIGTERM while")
    assert run.first[:3] == [("small", 1), ("small", 2), ("wide", 1)]  # the cheaper checkpoint first
    # the rerun trains what the stop left: wide depth 2, and wide depth 4, which the same stop ended if it had begun
    assert sorted(run.second) == [("wide", 2), ("wide", 4)]
    statuses = {(c.family, c.depth): c.status for c in run.summary.candidates}
    assert statuses == {("small", 1): "cached", ("small", 2): "cached", ("wide", 1): "cached",
                        ("wide", 2): "trained", ("wide", 4): "trained"}
    assert list(statuses) == [("small", 1), ("small", 2), ("wide", 1), ("wide", 2), ("wide", 4)]


def test_a_budget_stops_the_sweep_and_the_decision_says_what_it_left_untried(
        prefect_server, checkpoints, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_config(tmp_path, f"[{checkpoints / 'wide'}, {checkpoints / 'small'}]", ", halving: off, budget_flops: 1")

    assert main(["run", "--config", "run.yaml", "--summary-json", "summary.json"]) == 0

    summary = RunSummary.from_dict(json.loads((tmp_path / "summary.json").read_text()))
    assert [(c.family, c.status) for c in summary.candidates] == [("small", "trained")] * 2
    assert summary.budget.untried == ["wide depth 1", "wide depth 2", "wide depth 4"]
    assert summary.budget.spent_flops > summary.budget.flops == 1
    assert summary.rule.reason.endswith("left untried: wide depth 1, wide depth 2, wide depth 4")


@pytest.mark.parametrize(("given", "expected"), [
    (["--pretrained", "{a}", "--pretrained", "{a}"], "checkpoint {a} is given twice"),
    (["--pretrained", "{a}", "--pretrained", "{a}/"], "are the same checkpoint"),
    (["--pretrained", "{a}", "--pretrained", "{missing}"], "{missing}"),
    (["--pretrained", "{a}", "--pretrained", "{b}", "--depths", "1,8"], "depth 8 is beyond the layers of every"),
])
def test_bad_checkpoints_exit_2_in_one_line_before_any_work(
        checkpoints, tmp_path, monkeypatch, capsys, given: list[str], expected: str) -> None:
    monkeypatch.chdir(tmp_path)
    paths = {"a": str(checkpoints / "small"), "b": str(checkpoints / "wide"), "missing": str(tmp_path / "nowhere")}
    code = main(["run", "--dataset", "topics", *[arg.format(**paths) for arg in given]])

    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert expected.format(**paths) in err
    assert list(tmp_path.iterdir()) == []
