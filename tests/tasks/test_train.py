"""A candidate's cache key: what decides it, a checkpoint by its content."""

from __future__ import annotations

from encoder.architectures import ARCHITECTURES
from encoder.checkpoint import PretrainedCheckpoint
from encoder.config import ModelConfig, TrainConfig
from encoder.families import Pretrained
from tasks.train import Training, candidate_key


def checkpoint(path: str, content: str) -> PretrainedCheckpoint:
    return PretrainedCheckpoint(path, "bert", 4, 32, content * 16, ARCHITECTURES["bert"])


def test_the_cache_key_holds_the_checkpoints_content_not_its_name(tmp_path) -> None:
    """Two different folders with the same name never share a cached candidate; one checkpoint named otherwise
    beside other checkpoints does."""
    def key(family: Pretrained) -> str:
        return candidate_key(Training(family, Data(), "", ModelConfig(), Pretrained.recipe(TrainConfig()), False,
                                      None, tmp_path), 2, 1)

    one, other = checkpoint("/a/model", "1"), checkpoint("/b/model", "2")
    assert key(Pretrained(one, "model")) != key(Pretrained(other, "model"))
    assert key(Pretrained(one, "model")) == key(Pretrained(one, "a-model"))


class Data:
    data_hash = "d" * 16
