"""The DataModule: tokenise a labelled table once, batch it with dynamic padding.

Train batches come from a length-bucketing batch sampler, so each batch holds texts of
similar length and is padded only to its own longest text; validation and test batches
are cut from the split sorted by length (order does not matter to epoch-level metrics).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import lightning as L
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from depthfinder.encoder.distillation import UNLABELLED
from depthfinder.encoder.serving import encode_texts, encode_words, pad_batch
from depthfinder.encoder.tokenizer import PAD_ID
from depthfinder.expectations.table.shape import input_columns, model_inputs

if TYPE_CHECKING:
    import pandas as pd
    from tokenizers import Tokenizer

SPLITS = ("train", "val", "test")
REQUIRED_COLUMNS = ("text", "label", "split")
# (token ids, class id), and for a student's train rows the teacher's logits (K,) of that row; for token labels the
# class id of each token (its word's tag at the word's first piece, UNLABELLED elsewhere) instead of the row's
Example = tuple[list[int], int | np.ndarray] | tuple[list[int], int, np.ndarray]


class EncodedSplit(Dataset):
    """Token ids and class ids of one split, indexable by row position; for a student's train split also the
    teacher's logits of each row, which travel with the row through any batch order. For token labels `targets`
    holds each row's (tokens,) class ids."""

    def __init__(self, ids: list[list[int]], targets: np.ndarray | list[np.ndarray],
                 teacher_logits: np.ndarray | list[np.ndarray] | None = None) -> None:
        if teacher_logits is not None and len(teacher_logits) != len(ids):
            raise ValueError(f"teacher logits for {len(teacher_logits)} rows, but the split has {len(ids)}")
        self.ids = ids
        self.targets = targets
        self.teacher_logits = teacher_logits  # (n, K) or None
        self.lengths = np.fromiter((len(seq) for seq in ids), dtype=np.int64, count=len(ids))

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, index: int) -> Example:
        target = self.targets[index]
        target = target if isinstance(target, np.ndarray) else int(target)
        if self.teacher_logits is None:
            return self.ids[index], target
        return self.ids[index], target, self.teacher_logits[index]


class BucketBatchSampler(Sampler[list[int]]):
    """Batches of similar-length examples, reshuffled every epoch from (seed, epoch).

    Shuffle all indices, sort each chunk of `chunk_batches` batches by length, cut the
    chunk into batches, then shuffle the order of all batches. Every index appears
    exactly once per epoch. Each pass over the sampler advances the epoch, unless
    `set_epoch` is called first.
    """

    def __init__(self, lengths: Sequence[int], batch_size: int, seed: int, chunk_batches: int = 50) -> None:
        if batch_size < 1 or chunk_batches < 1:
            raise ValueError(f"batch_size and chunk_batches must be >= 1, got {batch_size} and {chunk_batches}")
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.batch_size = batch_size
        self.seed = seed
        self.chunk_size = batch_size * chunk_batches
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Make the next pass use the order of this epoch."""
        self.epoch = epoch

    def __len__(self) -> int:
        return -(-len(self.lengths) // self.batch_size)

    def __iter__(self) -> Iterator[list[int]]:
        rng = np.random.default_rng([self.seed, self.epoch])
        self.epoch += 1
        order = rng.permutation(len(self.lengths))
        batches: list[list[int]] = []
        for start in range(0, len(order), self.chunk_size):
            chunk = order[start : start + self.chunk_size]
            chunk = chunk[np.argsort(self.lengths[chunk], kind="stable")]
            batches.extend(chunk[i : i + self.batch_size].tolist() for i in range(0, len(chunk), self.batch_size))
        for b in rng.permutation(len(batches)):
            yield batches[b]


def per_token(ids: list[list[int]], firsts: list[list[int]], words: np.ndarray) -> list[np.ndarray]:
    """A teacher's logits per word (rows, words, K; NaN past a row's words or where the teacher read none) placed at
    the first piece the student reads each word at (`firsts`: encoder.serving.encode_words'), NaN at every other
    token and for a word the student's cut left out."""
    placed = []
    for row, (pieces, first) in enumerate(zip(ids, firsts, strict=True)):
        values = np.full((len(pieces), words.shape[-1]), np.nan, dtype=np.float32)
        for word, position in enumerate(first):
            if position >= 0:
                values[position] = words[row, word]
        placed.append(values)
    return placed


def length_sorted_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices sorted by length (stable), cut into consecutive batches."""
    order = np.argsort(np.asarray(lengths), kind="stable")
    return [order[i : i + batch_size].tolist() for i in range(0, len(order), batch_size)]


class Collate:
    """Pad a list of examples to their own longest one, with the tokenizer's pad id; a student's examples also
    give `teacher_logits` (B, K)."""

    def __init__(self, pad_id: int = PAD_ID) -> None:
        self.pad_id = pad_id

    def __call__(self, examples: list[Example]) -> dict[str, torch.Tensor]:
        input_ids, attention_mask = pad_batch([example[0] for example in examples], self.pad_id)
        if isinstance(examples[0][1], np.ndarray):  # a class per token: padding is not scored
            labels = torch.full(input_ids.shape, UNLABELLED, dtype=torch.long)
            for row, example in enumerate(examples):
                labels[row, : len(example[1])] = torch.from_numpy(example[1])
        else:
            labels = torch.tensor([example[1] for example in examples], dtype=torch.long)
        batch = {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}
        if len(examples[0]) == 3 and labels.dim() == 2:  # a teacher's logits per token: NaN where it has none
            teacher = torch.full((*input_ids.shape, examples[0][2].shape[-1]), float("nan"))
            for row, example in enumerate(examples):
                teacher[row, : len(example[2])] = torch.from_numpy(example[2])
            batch["teacher_logits"] = teacher
        elif len(examples[0]) == 3:
            batch["teacher_logits"] = torch.from_numpy(np.stack([example[2] for example in examples]))
        return batch


class TextDataModule(L.LightningDataModule):
    """Train/val/test loaders over a table with `text`, `label` and `split` columns.

    Args:
        frame: one row per example; columns `text`, `label` (str), `split` (train/val/test);
            other columns are ignored.
        tokenizer: a fitted tokenizer (see `encoder.tokenizer.train_tokenizer`).
        labels: the class order; a label's index is its class id.
        max_len: tokens kept per text.
        batch_size: examples per batch, for every split.
        seed: seed of the train batch order.
        num_workers: DataLoader worker processes.
        pad_id: the tokenizer's padding id.
        teacher_logits: for a student, a teacher's logits (n_train, K) on the train rows in the frame's order
            (encoder.distillation); its train batches then carry them. With `tokens`, each word's (n_train, words,
            K), carried at the word's first piece.
        unlabeled: for a student, a transfer set (encoder.distillation): texts and the teacher's logits on them,
            added to the train split with the class id UNLABELLED (their soft labels are their only target).
        tokens: label every token: `labels` are tags, and a row's `label` its words' tags joined by spaces (a token
            table's); each word's first piece is trained on its tag (encoder.serving.encode_words).
    """

    def __init__(
        self,
        frame: pd.DataFrame,
        tokenizer: Tokenizer,
        labels: list[str],
        max_len: int,
        batch_size: int,
        seed: int,
        num_workers: int = 0,
        pad_id: int = PAD_ID,
        teacher_logits: np.ndarray | None = None,
        unlabeled: tuple[Sequence[str], np.ndarray] | None = None,
        tokens: bool = False,
    ) -> None:
        super().__init__()
        missing = [col for col in REQUIRED_COLUMNS if col not in frame.columns]
        if missing:
            raise ValueError(f"frame lacks column(s) {missing}; expected {list(REQUIRED_COLUMNS)}")
        unknown_splits = sorted(set(frame["split"].astype(str)) - set(SPLITS))
        if unknown_splits:
            raise ValueError(f"unknown split value(s) {unknown_splits}; expected {list(SPLITS)}")
        values = frame["label"].astype(str)
        unknown_labels = sorted(set(values.str.split().explode() if tokens else values) - set(labels))
        if unknown_labels:
            raise ValueError(f"label(s) {unknown_labels[:5]} are not among labels {labels}")
        self.frame = frame[[*input_columns(frame), *REQUIRED_COLUMNS[1:]]]
        self.tokenizer = tokenizer
        self.labels = list(labels)
        self.max_len = max_len
        self.batch_size = batch_size
        self.seed = seed
        self.num_workers = num_workers
        self.collate = Collate(pad_id)
        self.teacher_logits = teacher_logits
        if unlabeled is not None and teacher_logits is None:
            raise ValueError("unlabelled texts are learnt from a teacher's soft labels: give teacher_logits too")
        if unlabeled is not None and len(unlabeled[0]) != unlabeled[1].shape[0]:
            raise ValueError(f"teacher logits for {unlabeled[1].shape[0]} unlabelled texts, but {len(unlabeled[0])} "
                             "texts")
        self.unlabeled = unlabeled
        self.tokens = tokens
        self.splits: dict[str, EncodedSplit] = {}

    def prepare_data(self) -> None:
        """Nothing to download or write: the table is already in memory."""

    def setup(self, stage: str | None = None) -> None:
        """Tokenise every split once; later calls do nothing."""
        if self.splits:
            return
        class_ids = {label: i for i, label in enumerate(self.labels)}
        for split in SPLITS:
            rows = self.frame[self.frame["split"] == split]
            if self.tokens:
                self.splits[split] = self._tagged_split(rows, class_ids, split == "train")
                continue
            ids = encode_texts(self.tokenizer, model_inputs(rows), self.max_len)
            targets = rows["label"].astype(str).map(class_ids).to_numpy(dtype=np.int64)
            logits = self.teacher_logits if split == "train" else None
            if split == "train" and self.unlabeled is not None:  # the transfer set: soft labels, no class
                texts, unlabeled_logits = self.unlabeled
                ids += encode_texts(self.tokenizer, list(texts), self.max_len)
                targets = np.concatenate([targets, np.full(len(texts), UNLABELLED, dtype=np.int64)])
                logits = np.concatenate([logits, unlabeled_logits])
            self.splits[split] = EncodedSplit(ids, targets, logits)
        for split in ("train", "val"):
            if len(self.splits[split]) == 0:
                raise ValueError(f"the {split!r} split is empty; every run needs train and val rows")

    def _tagged_split(self, rows: pd.DataFrame, class_ids: dict[str, int], train: bool) -> EncodedSplit:
        """A split of tagged sentences; a student's train split with its teacher's logits per word placed at its
        pieces, and the unlabelled sentences (the transfer set) after them: soft labels per word, no tag."""
        ids, targets, firsts = self._tagged(rows, class_ids)
        if not train or self.teacher_logits is None:
            return EncodedSplit(ids, targets)
        logits = per_token(ids, firsts, self.teacher_logits)
        if self.unlabeled is not None:
            texts, words = self.unlabeled
            pieces, first = map(list, zip(*encode_words(self.tokenizer, list(texts), self.max_len), strict=True))
            ids += pieces
            targets += [np.full(len(one), UNLABELLED, dtype=np.int64) for one in pieces]
            logits += per_token(pieces, first, words)
        return EncodedSplit(ids, targets, logits)

    def _tagged(self, rows: pd.DataFrame, class_ids: dict[str, int]
                ) -> tuple[list[list[int]], list[np.ndarray], list[list[int]]]:
        """Token ids of each row's words, each token's class id (its word's tag at the word's first piece) and the
        position of each word's first piece (-1: cut)."""
        ids, targets, firsts = [], [], []
        for (pieces, first), tags in zip(encode_words(self.tokenizer, rows["text"].astype(str).tolist(), self.max_len),
                                         rows["label"].astype(str).str.split(), strict=True):
            target = np.full(len(pieces), UNLABELLED, dtype=np.int64)
            for position, tag in zip(first, tags, strict=True):
                if position >= 0:
                    target[position] = class_ids[tag]
            ids.append(pieces)
            targets.append(target)
            firsts.append(first)
        return ids, targets, firsts

    def token_lengths(self, split: str) -> np.ndarray:
        """Token count of every labelled text of a split, after truncation, [CLS] included: a student's unlabelled
        texts are left out, so its cost per example is measured on the rows its plain twin's is."""
        self.setup()
        data = self.splits[split]
        if self.tokens:  # a tagged sentence scores its first word at least
            return data.lengths[[bool((targets != UNLABELLED).any()) for targets in data.targets]]
        return data.lengths[data.targets != UNLABELLED]

    def train_dataloader(self) -> DataLoader:
        data = self.splits["train"]
        sampler = BucketBatchSampler(data.lengths, self.batch_size, self.seed)
        # Its own generator: each epoch's iterator draws a base seed, which must not advance the
        # global generator that dropout uses (a run resumed from a checkpoint would diverge).
        generator = torch.Generator().manual_seed(self.seed)
        return DataLoader(
            data, batch_sampler=sampler, collate_fn=self.collate, num_workers=self.num_workers, generator=generator
        )

    def val_dataloader(self) -> DataLoader:
        return self._eval_loader("val")

    def test_dataloader(self) -> DataLoader:
        return self._eval_loader("test")

    def _eval_loader(self, split: str) -> DataLoader:
        data = self.splits[split]
        if len(data) == 0:
            raise ValueError(f"the {split!r} split is empty")
        batches = length_sorted_batches(data.lengths, self.batch_size)
        return DataLoader(data, batch_sampler=batches, collate_fn=self.collate, num_workers=self.num_workers)
