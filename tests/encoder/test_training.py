from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from lightning.pytorch.callbacks import Callback
from tokenizers import Tokenizer

from depthfinder.encoder import trainer, training
from depthfinder.encoder.serving import TextClassifier, encode_texts
from depthfinder.encoder.tokenizer import train_tokenizer
from depthfinder.encoder.trainer import resolve_precision
from depthfinder.encoder.training import (
    TrainedCandidate,
    TrainingData,
    TrainingSetup,
    inverse_frequency_weights,
    train_candidate,
)
from depthfinder.evidence.metrics import METRICS, classification_metrics
from depthfinder.runtime.interrupt import STOP, Interrupted
from tests.encoder.keyword_task import LABELS, keyword_frame, tiny_model_config, tiny_train_config

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return keyword_frame(360)


@pytest.fixture(scope="module")
def tokenizer(frame: pd.DataFrame) -> Tokenizer:
    return train_tokenizer(frame.loc[frame["split"] == "train", "text"], vocab_size=200)


def train(frame: pd.DataFrame, tokenizer: Tokenizer, out_dir: Path, **overrides: object) -> TrainedCandidate:
    return train_candidate(TrainingData(frame, LABELS, tokenizer, class_weights=True), 2, tiny_model_config(),
                           tiny_train_config(**overrides), TrainingSetup(out_dir, progress=False))


@pytest.fixture(scope="module")
def trained(frame: pd.DataFrame, tokenizer: Tokenizer, tmp_path_factory) -> tuple[TrainedCandidate, Path]:
    out_dir = tmp_path_factory.mktemp("depth-2")
    return train(frame, tokenizer, out_dir), out_dir


def test_an_easy_keyword_task_is_learned_and_early_stopped(trained) -> None:
    candidate, _ = trained
    assert candidate.depth == 2
    assert set(candidate.metrics) == set(candidate.test_metrics) == set(METRICS)
    assert candidate.metrics["macro_f1"] > 0.9
    assert candidate.test_metrics["macro_f1"] > 0.9
    assert 2 <= candidate.epochs < 12
    assert candidate.train_seconds > 0


def test_the_best_checkpoint_is_restored_and_scored_by_the_shared_metrics(trained, frame, tokenizer) -> None:
    candidate, out_dir = trained
    (checkpoint,) = out_dir.glob("*-best-*.ckpt")
    best = torch.load(checkpoint, map_location="cpu", weights_only=True)["state_dict"]
    restored = candidate.network.state_dict()
    assert set(restored) == {key.removeprefix("network.") for key in best}
    assert all(torch.equal(value, best[f"network.{key}"]) for key, value in restored.items())
    assert not candidate.network.training
    assert next(candidate.network.parameters()).device.type == "cpu"
    for split, metrics in (("val", candidate.metrics), ("test", candidate.test_metrics)):
        rows = frame[frame["split"] == split]
        predicted = TextClassifier(candidate.network, tokenizer, LABELS).predict(rows["text"].tolist())
        assert classification_metrics(rows["label"].tolist(), predicted) == metrics


def test_median_length_is_that_of_the_train_split(trained, frame, tokenizer) -> None:
    train_texts = frame.loc[frame["split"] == "train", "text"].tolist()
    lengths = [len(ids) for ids in encode_texts(tokenizer, train_texts, tiny_model_config().max_len)]
    assert trained[0].median_length == int(np.median(lengths))


def test_training_is_reproducible_for_a_seed(frame, tokenizer, tmp_path) -> None:
    first = train(frame, tokenizer, tmp_path / "first", max_epochs=2)
    second = train(frame, tokenizer, tmp_path / "second", max_epochs=2)
    second_weights = second.network.state_dict()
    assert all(torch.equal(value, second_weights[key]) for key, value in first.network.state_dict().items())
    assert first.metrics == second.metrics


def test_a_run_stopped_at_a_budget_and_resumed_ends_as_one_trained_straight_through(
    frame, tokenizer, tmp_path
) -> None:
    """Successive halving continues a candidate from its checkpoint: same schedule, optimizer,
    early-stopping state, batch order and dropout masks as an uninterrupted run."""
    recipe = tiny_train_config(max_epochs=4, min_epochs=4)
    model = tiny_model_config().model_copy(update={"dropout": 0.1})

    def run(out_dir: Path, **budget: object) -> TrainedCandidate:
        return train_candidate(TrainingData(frame, LABELS, tokenizer), 2, model, recipe,
                               TrainingSetup(out_dir, progress=False, **budget))

    straight = run(tmp_path / "straight")
    rung = run(tmp_path / "halved", epochs=2)
    resumed = run(tmp_path / "halved", resume_from=rung.checkpoint)

    assert (rung.epochs, rung.finished) == (2, False)
    assert (resumed.epochs, resumed.finished) == (straight.epochs, straight.finished) == (4, True)
    weights = straight.network.state_dict()
    assert all(torch.equal(value, weights[key]) for key, value in resumed.network.state_dict().items())
    assert resumed.metrics == straight.metrics
    assert len(straight.history) == 4 and resumed.history == straight.history  # kept across the resume

    extended = run(tmp_path / "halved", epochs=6, resume_from=resumed.checkpoint)  # 2 epochs past max_epochs
    assert 4 < extended.epochs <= 6 and len(extended.history) == extended.epochs
    assert extended.history[:4] == straight.history  # continued from epoch 4, not retrained
    with pytest.raises(ValueError, match="epochs must be at least 1"):
        run(tmp_path / "none", epochs=0)


def test_a_run_killed_mid_epoch_resumes_from_its_last_epoch_and_ends_as_one_trained_straight_through(
    frame, tokenizer, tmp_path
) -> None:
    """The full state is written after every epoch: a run stopped in the middle of its third epoch
    (here by a stop request, as SIGTERM makes one) continues from the end of its second."""
    recipe = tiny_train_config(max_epochs=4, min_epochs=4)
    model = tiny_model_config().model_copy(update={"dropout": 0.1})

    class StopInEpoch3(Callback):
        def on_train_batch_end(self, trainer, *args) -> None:
            if trainer.current_epoch == 2:
                STOP.request("SIGTERM")

    def run(out_dir: Path, **options: object) -> TrainedCandidate:
        return train_candidate(TrainingData(frame, LABELS, tokenizer), 2, model, recipe,
                               TrainingSetup(out_dir, progress=False, **options))

    straight = run(tmp_path / "straight")
    try:
        with pytest.raises(Interrupted, match="SIGTERM while training depth 2 .seed 1. at epoch 3 of 4"):
            run(tmp_path / "killed", callbacks=[StopInEpoch3()])
    finally:
        STOP.clear()
    last = trainer.last_checkpoint(tmp_path / "killed", 2)
    assert trainer.checkpoint_epochs(last) == 2
    resumed = run(tmp_path / "killed", resume_from=last)

    assert (resumed.epochs, resumed.finished) == (straight.epochs, straight.finished) == (4, True)
    weights = straight.network.state_dict()
    assert all(torch.equal(value, weights[key]) for key, value in resumed.network.state_dict().items())
    assert resumed.metrics == straight.metrics
    assert resumed.train_seconds > 0
    assert trainer.checkpoint_epochs(tmp_path / "nowhere.ckpt") is None


def test_class_weights_are_inverse_frequencies_with_mean_one() -> None:
    weights = inverse_frequency_weights(["a", "a", "a", "b", "c", "c"], ["a", "b", "c"])
    assert weights.tolist() == pytest.approx([6 / 11, 18 / 11, 9 / 11])
    assert weights.mean().item() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="'d'"):
        inverse_frequency_weights(["a", "b"], ["a", "b", "d"])


def test_a_table_without_test_rows_is_refused(frame, tokenizer, tmp_path) -> None:
    with pytest.raises(ValueError, match="'test' split is empty"):
        train(frame[frame["split"] != "test"], tokenizer, tmp_path)


def test_bf16_mixed_precision_trains_on_cpu(frame, tokenizer, tmp_path) -> None:
    candidate = train(frame, tokenizer, tmp_path, precision="bf16-mixed")
    assert candidate.metrics["macro_f1"] > 0.9
    assert next(candidate.network.parameters()).dtype == torch.float32  # weights stay fp32


def test_early_stopping_waits_for_min_epochs(frame, tokenizer, tmp_path) -> None:
    """A model that never improves is stopped after `patience` epochs, but not before `min_epochs`."""
    stuck = {"learning_rate": 1e-9, "patience": 1, "max_epochs": 6}
    assert train(frame, tokenizer, tmp_path / "early", **stuck).epochs < 4
    assert train(frame, tokenizer, tmp_path / "held", **stuck, min_epochs=4).epochs >= 4


@pytest.mark.parametrize(
    ("cuda", "cuda_bf16", "cpu_bf16", "accelerator", "expected"),
    [
        (False, False, True, "auto", "bf16-mixed"),
        (False, False, False, "auto", "32-true"),
        (True, True, False, "auto", "bf16-mixed"),
        (True, False, True, "gpu", "32-true"),
        (True, True, False, "cpu", "32-true"),
    ],
)
def test_auto_precision_is_bf16_where_the_device_computes_bf16_natively(
    monkeypatch, cuda: bool, cuda_bf16: bool, cpu_bf16: bool, accelerator: str, expected: str
) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args, **kwargs: cuda_bf16)
    monkeypatch.setattr(trainer, "cpu_has_native_bf16", lambda: cpu_bf16)
    assert resolve_precision("auto", accelerator) == expected
    assert resolve_precision("16-mixed", accelerator) == "16-mixed"


def test_a_network_trained_with_probes_is_bit_for_bit_the_one_trained_without(frame, tokenizer, tmp_path) -> None:
    """The screen of the search strategy: the probes read detached layer outputs and initialise from a forked
    random stream, so the depth-L network is its own separate fine-tune, and each probe reports a depth below."""
    recipe = tiny_train_config(max_epochs=3, min_epochs=3)
    model = tiny_model_config().model_copy(update={"dropout": 0.1})

    def run(name: str, probes: bool) -> TrainedCandidate:
        return train_candidate(TrainingData(frame, LABELS, tokenizer), 3, model, recipe,
                               TrainingSetup(tmp_path / name, progress=False), probes=probes)

    plain, screened = run("plain", False), run("screened", True)

    weights = plain.network.state_dict()
    assert screened.network.state_dict().keys() == weights.keys()  # the probes are not part of the network
    assert all(torch.equal(value, weights[key]) for key, value in screened.network.state_dict().items())
    assert screened.metrics == plain.metrics and screened.history == plain.history
    assert len(screened.probe_metrics) == len(screened.probe_val_predicted) == 2  # depths 1 and 2 of 3
    assert all(len(said) == len(screened.val_true) for said in screened.probe_val_predicted)
    assert not plain.probe_metrics


class ThreadsSeen(Callback):
    """The CPU threads torch trains with, at every step."""

    def __init__(self) -> None:
        self.seen: set[int] = set()

    def on_train_batch_end(self, trainer, *args) -> None:
        self.seen.add(torch.get_num_threads())


def test_training_ends_the_same_whatever_threads_the_caller_left_set(frame, tokenizer, tmp_path) -> None:
    """A process's torch thread count is ambient state (a test, a library, the caller set it); sums split over two
    threads add in another order than on one, so the weights would differ. The training chooses its own."""
    results = []
    for caller_threads in (1, 2):
        torch.set_num_threads(caller_threads)
        seen = ThreadsSeen()
        results.append(train_candidate(TrainingData(frame, LABELS, tokenizer), 2, tiny_model_config(),
                                       tiny_train_config(), TrainingSetup(tmp_path / str(caller_threads),
                                                                          progress=False, callbacks=[seen])))
        assert seen.seen == {1}  # a tiny model gains nothing from a second thread
        assert torch.get_num_threads() == caller_threads  # and the caller's setting is given back
    one, two = (result.network.state_dict() for result in results)
    assert all(torch.equal(value, two[key]) for key, value in one.items())
    assert results[0].metrics == results[1].metrics and results[0].test_metrics == results[1].test_metrics


def test_a_resumed_training_keeps_the_threads_its_state_was_trained_with(
    frame, tokenizer, tmp_path, monkeypatch
) -> None:
    """Resumed where the chosen count would differ (another machine, another share of it), a training takes the
    count its checkpoint records, so it ends exactly as the uninterrupted training did."""
    recipe = tiny_train_config(max_epochs=4, min_epochs=4)

    def run(out_dir: Path, threads: int, **budget: object) -> tuple[TrainedCandidate, set[int]]:
        monkeypatch.setattr(training, "training_threads", lambda *args: threads)
        seen = ThreadsSeen()
        return train_candidate(TrainingData(frame, LABELS, tokenizer), 2, tiny_model_config(), recipe,
                               TrainingSetup(out_dir, progress=False, callbacks=[seen], **budget)), seen.seen

    straight, _ = run(tmp_path / "straight", 2)
    rung, _ = run(tmp_path / "resumed", 2, epochs=2)
    resumed, seen = run(tmp_path / "resumed", 1, resume_from=rung.checkpoint)

    assert trainer.checkpoint_threads(rung.checkpoint) == 2 and seen == {2}
    weights = straight.network.state_dict()
    assert all(torch.equal(value, weights[key]) for key, value in resumed.network.state_dict().items())
    assert resumed.test_metrics == straight.test_metrics


def test_two_trainings_at_once_in_threads_both_finish(frame, tokenizer, tmp_path) -> None:
    """`--workers 2` with the thread runner: two trainings share the process's one console, which holds one live
    progress display at a time (two made the later stop fail: IndexError in rich's Console.clear_live)."""
    from concurrent.futures import ThreadPoolExecutor

    def one(depth: int) -> TrainedCandidate:
        return train_candidate(TrainingData(frame, LABELS, tokenizer), depth, tiny_model_config(), tiny_train_config(),
                               TrainingSetup(tmp_path / str(depth), progress=True, concurrent=2))

    with ThreadPoolExecutor(2) as pool:
        trained = list(pool.map(one, (1, 2)))
    assert [candidate.depth for candidate in trained] == [1, 2]
    assert all(candidate.metrics["macro_f1"] > 0.5 for candidate in trained)


def test_progress_bars_are_drawn_only_on_a_terminal(monkeypatch) -> None:
    """Written to a file or a pipe, a bar's redraws land as wrapped fragments: off a terminal there are none (the
    epoch's log line says the same), and never two trainings' at once."""
    import io

    from depthfinder.encoder.trainer import progress_bars

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("sys.stderr", io.StringIO())
    assert not progress_bars(True, 1)
    monkeypatch.setattr("sys.stderr", Terminal())
    assert progress_bars(True, 1) and not progress_bars(True, 2) and not progress_bars(False, 1)
