"""Run `depthfinder` in this process and signal it at a named moment, as an operator or the kernel would.

    python -m tests.flows.interrupting MOMENT SIGNAL [depthfinder arguments...]

MOMENT is one of MOMENTS; SIGNAL is SIGTERM, SIGKILL, SIGINT or SIGINT-GROUP (Ctrl-C in a terminal:
SIGINT to the whole process group, so start this in a session of its own). When the moment comes, the
process writes `fired` (the signal and the time) into the working directory and signals itself; a
SIGKILL ends it on the spot, as an out-of-memory kill or a power cut would.
"""

from __future__ import annotations

import functools
import logging
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

import depthfinder.tasks.train
import depthfinder.tracking.registry
from depthfinder.cli.main import main

INTERRUPTED_DEPTH = 2
INTERRUPTED_AFTER_EPOCH = 2


def fire(how: str) -> None:
    if Path("fired").exists():  # once per process
        return
    Path("fired").write_text(f"{how} {time.time()}")
    if how == "SIGINT-GROUP":
        os.killpg(os.getpgrp(), signal.SIGINT)
    else:
        os.kill(os.getpid(), getattr(signal, how))


def fire_when(owner: object, name: str, how: str, before: bool = False,
              when: Callable[..., bool] = lambda *args, **kwargs: True) -> None:
    """Replace `owner.name` by a call that fires `how` after it (or before it) returns, if `when` says so."""
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapped(*args, **kwargs):
        if before and when(*args, **kwargs):
            fire(how)
        result = original(*args, **kwargs)
        if not before and when(*args, **kwargs):
            fire(how)
        return result

    setattr(owner, name, wrapped)


class _FireOnRecord(logging.Handler):
    """Fires while the logging module holds its locks, on the first record that starts with `text`."""

    def __init__(self, text: str, how: str) -> None:
        super().__init__()
        self.text, self.how = text, how

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith(self.text):
            fire(self.how)


def server_start(how: str) -> None:
    """While Prefect logs that its temporary server is starting (inside the logging module)."""
    logging.getLogger("prefect").addHandler(_FireOnRecord("Starting temporary server", how))


def prepare(how: str) -> None:
    """Once the table is loaded and split, before it is written."""
    import depthfinder.tasks.data

    fire_when(depthfinder.tasks.data, "prepare_table", how)


def what_changed(how: str) -> None:
    """Once tonight's table has been set against the champion's, before the champion is scored."""
    import depthfinder.expectations.changes.compare

    fire_when(depthfinder.expectations.changes.compare, "comparison_table", how)


def audit(how: str) -> None:
    """When the audit has run, before its report is logged."""
    import depthfinder.expectations.audit.run

    fire_when(depthfinder.expectations.audit.run, "run_audit", how)


def tokenizer(how: str) -> None:
    """When the scratch family's tokenizer is trained, before it is saved."""
    import depthfinder.encoder.tokenizer

    fire_when(depthfinder.encoder.tokenizer, "train_tokenizer", how)


def during_training(how: str) -> None:
    """After epoch 2 of depth 2 (its state saved), while epoch 3 starts."""
    original = depthfinder.tasks.train.EpochLog.on_train_epoch_end

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        original(self, trainer, pl_module)
        if self.name.startswith(f"depth {INTERRUPTED_DEPTH} ") and trainer.current_epoch + 1 == INTERRUPTED_AFTER_EPOCH:
            fire(how)

    depthfinder.tasks.train.EpochLog.on_train_epoch_end = on_train_epoch_end


def after_a_result(how: str) -> None:
    """Right after depth 1's result is written, before its MLflow run says FINISHED."""
    fire_when(depthfinder.tasks.train, "_write_result", how,
              when=lambda candidate_dir, epochs, result: result.depth == 1)


def version_created(how: str) -> None:
    """Just as the new model version is created, before it is judged."""
    fire_when(depthfinder.tracking.registry, "register_version", how)


def while_registering(how: str) -> None:
    """After the new model version is created and scored, as it is judged against the champion."""
    fire_when(depthfinder.tracking.registry, "promote_if_better", how, before=True)


def alias_moved(how: str) -> None:
    """Right after champion moves to the new version, before the move is recorded."""
    from mlflow import MlflowClient

    fire_when(MlflowClient, "set_registered_model_alias", how,
              when=lambda client, name, alias, version: alias == "champion")


def summary(how: str) -> None:
    """When everything is registered, as the summary is written."""
    import depthfinder.cli.pipeline

    fire_when(depthfinder.cli.pipeline, "_write_json", how, before=True)


MOMENTS = {
    "server": server_start, "prepare": prepare, "what-changed": what_changed, "audit": audit,
    "tokenizer": tokenizer, "training": during_training, "result": after_a_result, "version": version_created,
    "registering": while_registering, "alias": alias_moved, "summary": summary,
}

if __name__ == "__main__":
    moment, how, *argv = sys.argv[1:]
    if how.startswith("SIGINT"):  # as in a terminal, even when started where SIGINT is ignored (a background job)
        signal.signal(signal.SIGINT, signal.default_int_handler)
    MOMENTS[moment](how)
    sys.exit(main(argv))
