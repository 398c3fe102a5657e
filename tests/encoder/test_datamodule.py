from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from tokenizers import Tokenizer

from depthfinder.encoder.datamodule import BucketBatchSampler, TextDataModule
from depthfinder.encoder.serving import encode_texts
from depthfinder.encoder.tokenizer import PAD_ID, train_tokenizer
from tests.encoder.keyword_task import LABELS, keyword_frame


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return train_tokenizer(keyword_frame(240)["text"], vocab_size=200)


@pytest.fixture
def datamodule(tokenizer: Tokenizer) -> TextDataModule:
    data = TextDataModule(keyword_frame(240), tokenizer, LABELS, max_len=24, batch_size=8, seed=3)
    data.setup("fit")
    return data


def padding_tokens(lengths: np.ndarray, batches: list[list[int]]) -> int:
    return sum(int(lengths[b].max()) * len(b) - int(lengths[b].sum()) for b in batches)


def test_every_batch_is_padded_only_to_its_own_longest_text(datamodule: TextDataModule) -> None:
    widths = set()
    for loader in (datamodule.train_dataloader(), datamodule.val_dataloader(), datamodule.test_dataloader()):
        for batch in loader:
            assert set(batch) == {"input_ids", "attention_mask", "labels"}
            lengths = batch["attention_mask"].sum(dim=1)
            assert batch["input_ids"].shape[1] == lengths.max()
            assert (batch["input_ids"][~batch["attention_mask"]] == PAD_ID).all()
            widths.add(batch["input_ids"].shape[1])
    assert min(widths) < 24


def test_bucketing_sampler_yields_every_index_once_per_epoch() -> None:
    lengths = np.random.default_rng(0).integers(1, 100, size=1003)
    sampler = BucketBatchSampler(lengths, batch_size=16, seed=0, chunk_batches=5)
    for _ in range(3):
        batches = list(sampler)
        assert len(batches) == len(sampler) == 63
        assert sorted(i for batch in batches for i in batch) == list(range(1003))
        assert sorted(len(batch) for batch in batches)[1:] == [16] * 62


def test_bucketing_sampler_is_seeded_and_reshuffles_each_epoch() -> None:
    lengths = np.random.default_rng(0).integers(1, 100, size=500)
    first, again, other = (BucketBatchSampler(lengths, 16, seed=seed) for seed in (7, 7, 8))
    epochs = [list(first), list(first)]
    assert [list(again), list(again)] == epochs
    assert epochs[0] != epochs[1]
    assert list(other) != epochs[0]
    first.set_epoch(0)
    assert list(first) == epochs[0]


def test_bucketing_needs_far_less_padding_than_random_batches() -> None:
    lengths = np.random.default_rng(0).integers(1, 100, size=2000)
    bucketed = list(BucketBatchSampler(lengths, batch_size=16, seed=0))
    order = np.random.default_rng(0).permutation(len(lengths))
    shuffled = [order[i : i + 16].tolist() for i in range(0, len(order), 16)]
    assert padding_tokens(lengths, bucketed) < 0.1 * padding_tokens(lengths, shuffled)


def test_eval_loader_covers_its_split_once_with_the_right_class_ids(
    datamodule: TextDataModule, tokenizer: Tokenizer
) -> None:
    frame = keyword_frame(240)
    val = frame[frame["split"] == "val"]
    expected = Counter(
        (tuple(ids), LABELS.index(label))
        for ids, label in zip(encode_texts(tokenizer, val["text"].tolist(), 24), val["label"], strict=True)
    )
    seen: Counter = Counter()
    previous_width = 0
    for batch in datamodule.val_dataloader():
        assert batch["input_ids"].shape[1] >= previous_width
        previous_width = batch["input_ids"].shape[1]
        for ids, mask, label in zip(batch["input_ids"], batch["attention_mask"], batch["labels"], strict=True):
            seen[(tuple(ids[mask].tolist()), int(label))] += 1
    assert seen == expected


def test_setup_tokenises_once_and_ignores_extra_columns(datamodule: TextDataModule) -> None:
    train = datamodule.splits["train"]
    datamodule.setup("validate")
    assert datamodule.splits["train"] is train
    assert "source" not in datamodule.frame.columns
    assert len(train) == 144
    assert datamodule.token_lengths("train").max() <= 24


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda f: f.drop(columns="split"), "lacks column"),
        (lambda f: f.assign(label=f["label"].replace("tech", "science")), "science"),
        (lambda f: f.assign(split=f["split"].replace("val", "dev")), "dev"),
    ],
)
def test_bad_tables_are_refused_with_the_culprit_named(tokenizer: Tokenizer, change, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TextDataModule(change(keyword_frame(30)), tokenizer, LABELS, max_len=24, batch_size=8, seed=0)
