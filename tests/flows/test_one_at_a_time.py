"""Only one retrain of a registered model name runs at a time; another name is not held up."""

from __future__ import annotations

import threading
import time

from prefect import flow

from flows.lock import one_retrain_at_a_time


def test_a_second_retrain_of_the_same_model_waits_for_the_first(prefect_server, tmp_path) -> None:
    events: list[tuple[str, float]] = []
    first_inside, release = threading.Event(), threading.Event()

    @flow
    def first() -> None:
        with one_retrain_at_a_time("shared-name", tmp_path):
            events.append(("first in", time.monotonic()))
            first_inside.set()
            release.wait(60)
            events.append(("first out", time.monotonic()))

    @flow
    def second(model_name: str) -> None:
        with one_retrain_at_a_time(model_name, tmp_path):
            events.append((f"{model_name} in", time.monotonic()))

    holder = threading.Thread(target=first)
    holder.start()
    assert first_inside.wait(60)
    second("other-name")  # a different model does not wait
    threading.Timer(3, release.set).start()
    second("shared-name")
    holder.join(60)

    assert [name for name, _ in events] == ["first in", "other-name in", "first out", "shared-name in"]
