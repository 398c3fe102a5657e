from __future__ import annotations

import threading

import pytest
import torch

from depthfinder.encoder import threads
from depthfinder.encoder.model import EncoderClassifier, EncoderConfig


def network(d_model: int, d_ff: int, depth: int = 2) -> EncoderClassifier:
    return EncoderClassifier(EncoderConfig(vocab_size=1000, n_classes=2, depth=depth, d_model=d_model, n_heads=4,
                                           d_ff=d_ff))


@pytest.fixture
def cores(monkeypatch):
    """Pretend this process may use `n` cores."""
    def use(n: int) -> None:
        monkeypatch.setattr(threads, "usable_cores", lambda: n)
    return use


def test_a_small_model_trains_on_one_thread_however_many_cores_there_are(cores) -> None:
    cores(16)
    assert threads.training_threads(network(128, 512), 2, batch_size=32, tokens=20) == 1


def test_a_larger_model_takes_more_threads_up_to_its_share_of_the_cores(cores) -> None:
    large = network(384, 1536)
    cores(16)
    wide = threads.training_threads(large, 2, batch_size=32, tokens=128)
    assert 1 < wide <= 16
    assert threads.training_threads(large, 2, batch_size=32, tokens=128, concurrent=4) == min(wide, 4)
    cores(2)
    assert threads.training_threads(large, 2, batch_size=32, tokens=128) == 2
    assert threads.training_threads(large, 2, batch_size=32, tokens=128, concurrent=2) == 1


def test_the_work_is_counted_per_block_so_depth_alone_adds_no_thread(cores) -> None:
    cores(16)
    shallow, deep = (threads.training_threads(network(256, 1024, depth), depth, 32, 64) for depth in (1, 6))
    assert shallow == deep


def test_usable_cores_honour_the_affinity_the_quota_and_the_users_omp_num_threads(monkeypatch) -> None:
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3, 4, 5, 6, 7})
    monkeypatch.setattr(threads, "_cgroup_quota", lambda: None)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert threads.usable_cores() == 8
    monkeypatch.setattr(threads, "_cgroup_quota", lambda: 2.5)  # a container started with --cpus 2.5
    assert threads.usable_cores() == 2
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert threads.usable_cores() == 1
    monkeypatch.setattr(threads, "_cgroup_quota", lambda: 0.5)
    monkeypatch.setenv("OMP_NUM_THREADS", "x")
    assert threads.usable_cores() == 1


def test_the_cgroup_quota_is_read_from_cpu_max(monkeypatch, tmp_path) -> None:
    real = threads.Path
    cpu_max = tmp_path / "cpu.max"
    monkeypatch.setattr(threads, "Path", lambda path: cpu_max if path == "/sys/fs/cgroup/cpu.max" else real(path))
    cpu_max.write_text("150000 100000\n")
    assert threads._cgroup_quota() == 1.5
    cpu_max.write_text("max 100000\n")
    assert threads._cgroup_quota() is None


def test_threads_set_in_one_thread_stay_that_threads_own() -> None:
    """Trainings in threads of one process (the thread task runner) each keep the count they chose."""
    seen: dict[str, int] = {}
    ready = threading.Barrier(2)

    def train(name: str, count: int) -> None:
        with threads.torch_threads(count):
            ready.wait()  # both have set their count before either looks
            torch.ones(64, 64) @ torch.ones(64, 64)
            seen[name] = torch.get_num_threads()
            ready.wait()

    workers = [threading.Thread(target=train, args=(name, count)) for name, count in (("one", 1), ("two", 2))]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert seen == {"one": 1, "two": 2}
