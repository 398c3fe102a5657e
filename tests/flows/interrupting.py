"""Run `depthfinder` in this process and signal it at a named moment, as an operator or the kernel would.

    python -m tests.flows.interrupting MOMENT SIGNAL [depthfinder arguments...]

MOMENT is one of MOMENTS; SIGNAL is SIGTERM, SIGKILL or SIGINT-GROUP (Ctrl-C in a terminal: SIGINT
to the whole process group, so start this in a session of its own). When the moment comes, the
process writes `fired` into the working directory and signals itself; a SIGKILL ends it on the
spot, as an out-of-memory kill or a power cut would.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import encoder.tracking.registry
import tasks.train
from flows.cli import main

INTERRUPTED_DEPTH = 2
INTERRUPTED_AFTER_EPOCH = 2


def fire(how: str) -> None:
    Path("fired").write_text(how)
    if how == "SIGINT-GROUP":
        os.killpg(os.getpgrp(), signal.SIGINT)
    else:
        os.kill(os.getpid(), getattr(signal, how))


def during_training(how: str) -> None:
    """After epoch 2 of depth 2 (its state saved), while epoch 3 starts."""
    original = tasks.train.EpochLog.on_train_epoch_end

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        original(self, trainer, pl_module)
        if self.name.startswith(f"depth {INTERRUPTED_DEPTH} ") and trainer.current_epoch + 1 == INTERRUPTED_AFTER_EPOCH:
            fire(how)

    tasks.train.EpochLog.on_train_epoch_end = on_train_epoch_end


def after_a_result(how: str) -> None:
    """Right after depth 1's result is written, before its MLflow run says FINISHED."""
    original = tasks.train._write_result

    def write_result(candidate_dir, epochs, result) -> None:
        original(candidate_dir, epochs, result)
        if result.depth == 1:
            fire(how)

    tasks.train._write_result = write_result


def while_registering(how: str) -> None:
    """After the new model version is created, while it is judged against the champion."""
    original = encoder.tracking.registry.promote_if_better

    def promote_if_better(*args, **kwargs):
        fire(how)
        return original(*args, **kwargs)

    encoder.tracking.registry.promote_if_better = promote_if_better


MOMENTS = {"training": during_training, "result": after_a_result, "registering": while_registering}

if __name__ == "__main__":
    moment, how, *argv = sys.argv[1:]
    MOMENTS[moment](how)
    sys.exit(main(argv))
