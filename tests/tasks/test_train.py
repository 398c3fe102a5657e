"""A candidate's cache key: what decides it, a checkpoint by its content."""

from __future__ import annotations

from depthfinder.encoder.architectures import ARCHITECTURES
from depthfinder.encoder.checkpoint import PretrainedCheckpoint
from depthfinder.encoder.config import ModelConfig, TrainConfig
from depthfinder.encoder.families import Pretrained, Scratch
from depthfinder.tasks.train import Teacher, Training, candidate_key


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


def test_a_students_key_holds_its_teachers_content_and_recipe_not_its_path_or_name(tmp_path) -> None:
    """A student is not its plain twin; another teacher (by content) or recipe is another student; the same teacher
    found at another path, or named otherwise in another run, is the same one (resume and the cache find it)."""
    def key(teacher: Teacher | None) -> str:
        return candidate_key(Training(Scratch(), Data(), "", ModelConfig(), TrainConfig(), False, None, tmp_path,
                                      teacher=teacher), 2, 1)

    teacher = Teacher(bundle="/a/bundle", digest="c" * 16, label="depth 6", seed=1, temperature=2.0, alpha=0.5)
    assert key(teacher) != key(None)
    assert key(teacher) != key(Teacher("/a/bundle", "e" * 16, "depth 6", 1, 2.0, 0.5))  # retrained: other content
    assert key(teacher) != key(Teacher("/a/bundle", "c" * 16, "depth 6", 1, 4.0, 0.5))
    assert key(teacher) == key(Teacher("/elsewhere", "c" * 16, "scratch depth 6", 1, 2.0, 0.5))


class Data:
    data_hash = "d" * 16


def test_a_student_starts_from_the_twin_of_its_own_family() -> None:
    """Two families hold a depth 1: each student of depth 1 starts from its own family's twin, never the other's
    (whose weights do not fit its network)."""
    teacher = Teacher("/t", "c" * 16, "bert depth 2", 1, 2.0, 0.5,
                      twins=(("scratch", 1, 1, "/scratch-1"), ("bert", 1, 1, "/bert-1")))
    assert teacher.twin_of("bert", 1, 1) == "/bert-1" and teacher.twin_of("scratch", 1, 1) == "/scratch-1"
    assert teacher.twin_of("bert", 1, 2) is None
