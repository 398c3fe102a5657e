"""The premise on a task with a known answer: a deeper problem needs a deeper encoder.

nested-ops-k (expectations/synthetic.py) nests max/min/first/last k levels deep. With the
same small model and recipe, one block evaluates one level; two levels need a second
block to reach the accuracy one block reaches on one level.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from depthfinder.encoder.config import ModelConfig, TrainConfig
from depthfinder.encoder.tokenizer import train_tokenizer
from depthfinder.encoder.training import TrainingData, TrainingSetup, train_candidate
from depthfinder.expectations.table.datasets import get_dataset
from depthfinder.expectations.table.split import assign_splits

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")

MODEL = ModelConfig(d_model=64, n_heads=4, d_ff=128, dropout=0.0, max_len=40, vocab_size=100)
RECIPE = TrainConfig(max_epochs=20, min_epochs=20, batch_size=64, learning_rate=1e-3, accelerator="cpu",
                     precision="32-true")
TARGET = 0.87  # validation accuracy; chance is 0.1 (ten digits)


def validation_accuracy(problem_depth: int, model_depth: int, out_dir: Path) -> float:
    frame = get_dataset(f"nested-ops-{problem_depth}").generate(5000, seed=1)
    frame = assign_splits(frame, 0.15, 0.15, seed=1, group_near_duplicates=False)
    tokenizer = train_tokenizer(frame.loc[frame["split"] == "train", "text"], vocab_size=MODEL.vocab_size)
    labels = sorted(frame["label"].unique())
    trained = train_candidate(TrainingData(frame, labels, tokenizer), model_depth, MODEL, RECIPE,
                              TrainingSetup(out_dir, progress=False))
    return trained.metrics["accuracy"]


@pytest.mark.slow  # `make test-slow`, which .ci/run runs
def test_two_nesting_levels_need_a_second_block_to_reach_what_one_block_reaches_on_one(tmp_path) -> None:
    easy_one_block = validation_accuracy(1, 1, tmp_path / "easy-1")
    hard_one_block = validation_accuracy(2, 1, tmp_path / "hard-1")
    hard_two_blocks = validation_accuracy(2, 2, tmp_path / "hard-2")

    assert easy_one_block >= TARGET  # measured 1.00
    assert hard_one_block < TARGET  # measured 0.83
    assert hard_two_blocks >= TARGET  # measured 0.90
