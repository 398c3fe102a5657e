"""One torch thread for tests of tiny models, shared by the test folders whose tests train or run one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch


@pytest.fixture(autouse=True)
def one_torch_thread() -> Iterator[None]:
    """Tiny models gain nothing from a second thread, and on a shared 2-core machine the
    OpenMP workers of two threads wait on each other whenever another process holds a
    core: the cost tests ran 10-50x slower that way."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
