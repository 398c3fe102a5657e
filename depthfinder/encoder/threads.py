"""How many CPU threads a training uses: chosen here, once, from the work and the cores it may use.

Two reasons to choose rather than take torch's default (one thread per core it sees):

- Sharing the machine. OpenMP threads meet at a barrier after every parallel operation; when another
  process holds one of the cores, a thread waits there for its descheduled peer, and a step that took
  10 ms takes 100 (docs/benchmarks.md, "Training beside other work"). A small model gains little from a
  second thread when the machine is quiet and loses several times over when it is not, so it gets one.
- Exactness. A reduction split over two threads adds in another order than one thread does, so the
  same training on 1 and on 2 threads ends in different weights. The count is a function of the model,
  the data and the machine, never of what the caller's process happened to set, and a resumed training
  takes the count its saved state was trained with (`encoder.trainer`).
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from depthfinder.runtime.environment import OPENMP_ENVIRONMENT

if TYPE_CHECKING:  # torch is imported where threads are set, so the process guard can set OpenMP's environment first
    from torch import nn

# The policy's other half, how long a waiting OpenMP thread spins, is environment that OpenMP reads once, when torch
# loads: the process guard (runtime.guard) sets OPENMP_ENVIRONMENT before the CLI imports torch; a user's value wins.
__all__ = ["MIN_WORK_PER_THREAD", "OPENMP_ENVIRONMENT", "torch_threads", "training_threads", "usable_cores"]

# Multiply-adds of one block per training step (batch x tokens x the block's weights) below which a
# second thread gains too little to risk the barrier: measured by bench/contention.py (1 vs 2 threads
# on a quiet 2-core machine: ~1.15x faster at 2e8, ~1.6x at 6e8).
MIN_WORK_PER_THREAD = 4e8


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity, capped by a cgroup CPU quota (a container's
    `--cpus`) and by OMP_NUM_THREADS when the user set it."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    quota = _cgroup_quota()
    if quota is not None:
        cores = min(cores, max(1, math.floor(quota)))
    user = os.environ.get("OMP_NUM_THREADS", "").strip()
    if user.isdigit() and int(user) > 0:
        cores = min(cores, int(user))
    return max(1, cores)


def _cgroup_quota() -> float | None:
    """CPUs the cgroup may use (cgroup v2 `cpu.max`, else v1 `cpu.cfs_quota_us`), or None without a quota."""
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        quota = int(Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").read_text())
        period = int(Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us").read_text())
        return None if quota <= 0 else quota / period
    except (OSError, ValueError):
        return None


def training_threads(network: nn.Module, depth: int, batch_size: int, tokens: float, concurrent: int = 1
                     ) -> int:
    """Threads for training `network` (either family's) on batches of `batch_size` texts of about `tokens`
    tokens, beside `concurrent - 1` other trainings on this machine: one per MIN_WORK_PER_THREAD of one
    block's work in a step, and at most this training's share of the cores."""
    block = network.num_params(embeddings=False) / max(1, depth)  # the weights outside the embeddings, per block
    work = block * batch_size * max(1.0, tokens)
    share = max(1, usable_cores() // max(1, concurrent))
    return max(1, min(share, int(work // MIN_WORK_PER_THREAD)))


@contextlib.contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """Run the body with `count` intra-op threads in this thread, and restore the count it had.

    torch applies the count per calling thread once that thread has run a parallel operation (its
    OpenMP settings are per thread), so trainings in threads of one process each keep their own."""
    import torch

    before = torch.get_num_threads()  # also makes this thread's later setting its own
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)
