"""The chosen model's vocabulary pruned to the task: the tokens its texts use, and what every text needs.

A task's texts use a few thousand of a checkpoint's 30k-250k tokens, and the embedding matrix is most of a shallow
model's size (all-MiniLM-L6-v2: 11.7 M of the 15.5 M parameters of depth 2). Pruning keeps

- every token the task's texts use at least `min_count` times (as the original tokenizer cuts them): every text the
  run may read without its label deciding anything (`vocabulary_texts`: the train and validation splits, and for the
  deployed form the unlabelled pool too; the cost table weighs each candidate without it, so that adding a pool
  retrains nothing; never the test split, which stands for the texts the model will meet). Pruned to the train split
  alone, a broader test vocabulary was cut into pieces the network never learned (a 6-class question file lost
  0.033 macro-F1 on test);
- the special tokens (every added token: [PAD], [UNK], [CLS], [SEP], [MASK]), and
- every single character and every single-character continuation (`##x`), so that any text still tokenises: a word
  the task never used falls back to shorter pieces, at worst to its characters, never to [UNK] where the original
  gave a piece.

Kept tokens keep their order (so [PAD] stays first, and ids only shrink). WordPiece cuts a word greedily, longest
piece first: with a subset of the vocabulary, a word whose original pieces were all kept is cut into the same
pieces, so a text made of kept tokens gets the same ids, renumbered, and the pruned network (its embedding rows
gathered in the new id order) gives the same logits. The tokenizer is rebuilt from its own JSON (the `tokenizers`
library's format: model vocabulary, added tokens, post-processor and padding ids renumbered), so what serves the
model needs nothing but `tokenizers`.

WordPiece only (BERT, MiniLM, ELECTRA, DistilBERT, and depthfinder's own tokenizer): byte-level BPE would have to
drop every merge whose parts or result were removed, and a SentencePiece Unigram model its pieces' scores; both are
refused in one line, and such a model ships unpruned.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import pandas as pd
import torch
from tokenizers import Tokenizer
from torch import nn

from depthfinder.encoder.serving import Network, PretrainedEncoderClassifier
from depthfinder.expectations.table.shape import side_texts

VOCAB_FILE = "vocab.txt"  # what a WordPiece tokenizer's `transformers` classes (BertTokenizer) read
# Config keys that hold a token id, renumbered with the vocabulary (those a type has; pad_token_id in every one).
TOKEN_ID_KEYS = ("pad_token_id", "bos_token_id", "eos_token_id", "cls_token_id", "sep_token_id", "mask_token_id",
                 "unk_token_id")


def vocabulary_texts(frame: pd.DataFrame, extra: Iterable[str] = ()) -> list[str]:
    """The texts a pruned vocabulary keeps the tokens of: `frame`'s train and validation rows (`text`, `split`) and
    the `extra` texts (the unlabelled pool); never its test rows."""
    return [*side_texts(frame[frame["split"].isin(["train", "val"])]), *extra]


def prunable(tokenizer: Tokenizer, network: Network | None = None) -> str | None:
    """Why the tokenizer's vocabulary cannot be pruned (with `network`'s embedding), in a clause; None when it can:
    WordPiece, and no token id past the embedding's rows (a checkpoint whose tokenizer holds more tokens than its
    model embeds: those ids have no row to keep)."""
    kind = json.loads(tokenizer.to_str())["model"]["type"]
    if kind != "WordPiece":
        return (f"its tokenizer is {kind}, and vocabulary pruning supports WordPiece (BERT, MiniLM, ELECTRA, "
                "DistilBERT) only: it ships with its full vocabulary")
    tokens = tokenizer.get_vocab_size(with_added_tokens=True)
    if network is not None and tokens > (rows := word_embedding(network).num_embeddings):
        return (f"its tokenizer holds {tokens:,} tokens and its embedding {rows:,} rows, so the ids past them have no "
                "row to keep: it ships with its full vocabulary")
    return None


def word_embedding(network: Network) -> nn.Embedding:
    """The network's word embedding, either family's."""
    if isinstance(network, PretrainedEncoderClassifier):
        return network.encoder.get_input_embeddings()
    return network.tok_emb


def set_word_embedding(network: Network, embedding: nn.Module) -> None:
    """Put `embedding` in the network's word embedding's place, either family's."""
    if isinstance(network, PretrainedEncoderClassifier):
        network.encoder.set_input_embeddings(embedding)
    else:
        network.tok_emb = embedding


def token_counts(tokenizer: Tokenizer, texts: Iterable[str]) -> Counter[int]:
    """How often each token id occurs in the texts, as the tokenizer cuts them whole (no truncation, no specials)."""
    plain = Tokenizer.from_str(tokenizer.to_str())
    plain.no_truncation()
    plain.no_padding()
    counts: Counter[int] = Counter()
    for encoding in plain.encode_batch(list(texts), add_special_tokens=False):
        counts.update(encoding.ids)
    return counts


def kept_ids(tokenizer: Tokenizer, counts: Counter[int], min_count: int = 1) -> list[int]:
    """The ids a pruned vocabulary keeps, in their original order: used `min_count` times or more, special, or one
    character (alone or as a continuation)."""
    if min_count < 1:
        raise ValueError(f"min_count must be at least 1, got {min_count}")
    if (reason := prunable(tokenizer)) is not None:
        raise ValueError(f"the vocabulary cannot be pruned: {reason}")
    model = json.loads(tokenizer.to_str())["model"]
    prefix = model.get("continuing_subword_prefix") or "##"
    special = set(tokenizer.get_added_tokens_decoder())
    special.add(model["vocab"][model["unk_token"]])

    def one_character(token: str) -> bool:
        return len(token) == 1 or (token.startswith(prefix) and len(token) == len(prefix) + 1)

    used = {index for token, index in model["vocab"].items() if counts[index] >= min_count or one_character(token)}
    return sorted(used | special)


def prune_tokenizer(tokenizer: Tokenizer, kept: list[int]) -> Tokenizer:
    """The tokenizer with only the `kept` ids, renumbered 0.. in their order (its model vocabulary, added tokens,
    post-processor and padding alike)."""
    new_id = {old: new for new, old in enumerate(kept)}
    spec = json.loads(tokenizer.to_str())
    spec["model"]["vocab"] = {token: new_id[index] for token, index in
                              sorted(spec["model"]["vocab"].items(), key=lambda item: item[1]) if index in new_id}
    for added in spec.get("added_tokens") or []:
        added["id"] = new_id[added["id"]]
    if spec.get("post_processor"):
        spec["post_processor"] = _renumbered(spec["post_processor"], new_id)
    if spec.get("padding"):
        spec["padding"]["pad_id"] = new_id[spec["padding"]["pad_id"]]
    return Tokenizer.from_str(json.dumps(spec))


def _renumbered(processor: dict, new_id: dict[int, int]) -> dict:
    """A post-processor's token ids renumbered: TemplateProcessing's special tokens, BERT's and RoBERTa's (token, id)
    pairs, and the processors of a Sequence."""
    processor = copy.deepcopy(processor)
    kind = processor.get("type")
    if kind == "TemplateProcessing":
        for special in processor["special_tokens"].values():
            special["ids"] = [new_id[index] for index in special["ids"]]
    elif kind in ("BertProcessing", "RobertaProcessing"):
        for key in ("sep", "cls"):
            token, index = processor[key]
            processor[key] = [token, new_id[index]]
    elif kind == "Sequence":
        processor["processors"] = [_renumbered(inner, new_id) for inner in processor["processors"]]
    return processor


def prune_network(network: Network, kept: list[int]) -> Network:
    """A copy of the network whose word embedding holds only the `kept` rows, in that order, and whose config says
    the new vocabulary size and token ids; the original is left as it was."""
    network = copy.deepcopy(network)
    new_id = {old: new for new, old in enumerate(kept)}
    set_word_embedding(network, _gathered(word_embedding(network), kept, new_id))
    if isinstance(network, PretrainedEncoderClassifier):
        model = network.encoder
        ids = {key: new_id.get(value) for key, value in network.cfg.encoder.items()
               if key in TOKEN_ID_KEYS and isinstance(value, int)}
        for key, value in {"vocab_size": len(kept), **ids}.items():
            setattr(model.config, key, value)
        encoder = {**network.cfg.encoder, "vocab_size": len(kept), **ids}
        after = network.cfg.segment_after
        network.cfg = dataclasses.replace(network.cfg, encoder=encoder, pad_id=new_id[network.cfg.pad_id],
                                          segment_after=None if after is None else new_id[after])
    else:
        network.cfg = dataclasses.replace(network.cfg, vocab_size=len(kept), pad_id=new_id[network.cfg.pad_id])
    return network


def _gathered(embedding: nn.Embedding, kept: list[int], new_id: dict[int, int]) -> nn.Embedding:
    """A new embedding of the `kept` rows, in order (its padding row renumbered)."""
    padding = None if embedding.padding_idx is None else new_id.get(embedding.padding_idx)
    gathered = nn.Embedding(len(kept), embedding.embedding_dim, padding_idx=padding)
    with torch.no_grad():
        gathered.weight.copy_(embedding.weight[torch.tensor(kept, dtype=torch.long)])  # (V', H)
    gathered.weight.requires_grad_(embedding.weight.requires_grad)
    return gathered


def prune(network: Network, tokenizer: Tokenizer, texts: Iterable[str], min_count: int = 1
          ) -> tuple[Network, Tokenizer]:
    """The network and its tokenizer with the vocabulary pruned to what `texts` (the training texts) use at least
    `min_count` times, plus what every text needs (see the module's docstring).

    Args:
        network: The trained network (either family); not changed.
        tokenizer: The WordPiece tokenizer it was trained with; ValueError for another kind.
        texts: The task's training texts.
        min_count: How often a token must occur in them to be kept (single characters and special tokens always are).

    Returns:
        The pruned network (a copy) and its tokenizer.
    """
    if (reason := prunable(tokenizer, network)) is not None:
        raise ValueError(f"the vocabulary cannot be pruned: {reason}")
    kept = kept_ids(tokenizer, token_counts(tokenizer, texts), min_count)
    return prune_network(network, kept), prune_tokenizer(tokenizer, kept)


def save_vocab_file(directory: Path, tokenizer: Tokenizer) -> Path | None:
    """A WordPiece tokenizer's vocab.txt (one token a line, in id order), as BERT's `transformers` tokenizer reads it
    beside tokenizer.json; None for another kind of tokenizer."""
    if prunable(tokenizer) is not None:
        return None
    vocab = sorted(tokenizer.get_vocab(with_added_tokens=True).items(), key=lambda item: item[1])
    path = Path(directory) / VOCAB_FILE
    path.write_text("".join(f"{token}\n" for token, _ in vocab), encoding="utf-8")
    return path
