"""Tiny pretrained checkpoints built in the test, never downloaded: random encoders of each type depthfinder
truncates, saved with `save_pretrained` (safetensors) beside a tokenizer made with `tokenizers` (a
tokenizer.json, or only its vocab.txt) or with `sentencepiece` (an spm.model, as DeBERTa-v3 ships); and the
same weights in the other forms checkpoints ship them in: legacy names, a pickle, shards with an index, a task
model's (base-model prefix and head)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import torch
from tokenizers import processors

from depthfinder.encoder.tokenizer import CLS, SEP, train_tokenizer

WORDS = [
    "the", "a", "of", "and", "to", "in", "is", "was", "for", "on", "with", "it", "this", "that", "football", "pizza",
    "computer", "great", "awful", "film", "fun", "plot", "cast", "music", "acting", "mess", "truly",
]
# The seven encoder types of encoder.architectures, each with what its tiny config needs besides the shared sizes.
TYPES = {
    "bert": {}, "roberta": {}, "xlm-roberta": {},
    "distilbert": {},
    "deberta-v2": {"relative_attention": True, "position_buckets": 8, "pos_att_type": ["p2c", "c2p"],
                   "position_biased_input": False, "norm_rel_ebd": "layer_norm", "max_relative_positions": -1},
    "electra": {"embedding_size": 16},  # smaller than hidden: the model projects its embeddings
    "modernbert": {"global_attn_every_n_layers": 3, "local_attention": 8, "bos_token_id": 2, "eos_token_id": 3,
                   "cls_token_id": 2, "sep_token_id": 3},
}
HIDDEN = 32


def tiny_checkpoint(folder: Path, texts: Iterable[str] = (), layers: int = 4, model_type: str = "bert",
                    seed: int = 0, tokenizer: str = "json", hidden: int = HIDDEN, type_vocab_size: int = 1) -> Path:
    """A `layers`-layer encoder (hidden 32, or `hidden`) of `model_type` in `folder`; its tokenizer, trained on
    `texts`, as a tokenizer.json (`json`), only a vocab.txt (`vocab`), or a SentencePiece model (`spm`); with
    `type_vocab_size` 2 its token type embedding tells a pair's texts apart, as BERT's does."""
    from transformers import AutoConfig, AutoModel

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    texts = [*texts, " ".join(WORDS)]
    vocab_size = _spm_tokenizer(folder, texts) if tokenizer == "spm" else _wordpiece_tokenizer(folder, texts, tokenizer)
    config = AutoConfig.for_model(
        model_type, vocab_size=vocab_size, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=2,
        intermediate_size=2 * hidden, max_position_embeddings=66, pad_token_id=0, type_vocab_size=type_vocab_size,
        **TYPES[model_type],
    )
    if model_type == "distilbert":  # its own names for the sizes
        config.update({"dim": hidden, "hidden_dim": 2 * hidden, "n_heads": 2})
    torch.manual_seed(seed)
    AutoModel.from_config(config).save_pretrained(folder, safe_serialization=True)
    return folder


def _wordpiece_tokenizer(folder: Path, texts: list[str], form: str) -> int:
    """A WordPiece tokenizer ([CLS] text [SEP]; a pair: [CLS] text [SEP] pair [SEP], the pair's of type 1, as BERT's)
    as tokenizer.json, or as vocab.txt alone; its vocabulary size."""
    tokenizer = train_tokenizer(texts, vocab_size=200)
    tokenizer.add_special_tokens([SEP])
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{CLS} $A {SEP}", pair=f"{CLS} $A {SEP} $B:1 {SEP}:1",
        special_tokens=[(CLS, tokenizer.token_to_id(CLS)), (SEP, tokenizer.token_to_id(SEP))],
    )
    if form == "json":
        tokenizer.save(str(folder / "tokenizer.json"))
    else:
        vocab = sorted(tokenizer.get_vocab().items(), key=lambda item: item[1])
        (folder / "vocab.txt").write_text("".join(f"{token}\n" for token, _ in vocab), encoding="utf-8")
    return tokenizer.get_vocab_size()


def _spm_tokenizer(folder: Path, texts: list[str]) -> int:
    """A SentencePiece unigram model spm.model (ids: [PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3, [MASK] 4), as DeBERTa-v3
    ships its tokenizer; its vocabulary size."""
    import io

    import sentencepiece

    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(texts * 4), model_writer=model, vocab_size=120, model_type="unigram",
        pad_id=0, unk_id=1, bos_id=2, eos_id=3, pad_piece="[PAD]", unk_piece="[UNK]", bos_piece="[CLS]",
        eos_piece="[SEP]", user_defined_symbols=["[MASK]"], hard_vocab_limit=False, minloglevel=2,
    )
    (folder / "spm.model").write_bytes(model.getvalue())
    (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": False, "vocab_type": "spm"}))
    return sentencepiece.SentencePieceProcessor(model_proto=model.getvalue()).get_piece_size()


def without(folder: Path, *names: str) -> Path:
    """The checkpoint folder with these files removed."""
    for name in names:
        (folder / name).unlink()
    return folder


def with_model_type(folder: Path, model_type: str) -> Path:
    """The checkpoint folder with its config.json claiming another architecture."""
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | {"model_type": model_type}))
    return folder


def with_config(folder: Path, **changes: object) -> Path:
    """The checkpoint folder with config.json changed (a value None removes the key)."""
    config = json.loads((folder / "config.json").read_text()) | changes
    (folder / "config.json").write_text(json.dumps({key: value for key, value in config.items() if value is not None}))
    return folder


def cut(folder: Path, name: str, keep: float = 0.5) -> Path:
    """The checkpoint folder with file `name` cut to a share of its bytes."""
    data = (folder / name).read_bytes()
    (folder / name).write_bytes(data[: int(len(data) * keep)])
    return folder


def with_legacy_names(folder: Path) -> Path:
    """model.safetensors with its LayerNorm tensors named as older checkpoints name them (gamma, beta)."""
    from safetensors.torch import load_file, save_file

    legacy = {"LayerNorm.weight": "LayerNorm.gamma", "LayerNorm.bias": "LayerNorm.beta"}
    state = load_file(folder / "model.safetensors")
    renamed = {}
    for key, value in state.items():
        for new, old in legacy.items():
            key = key.replace(new, old)
        renamed[key] = value
    save_file(renamed, folder / "model.safetensors", metadata={"format": "pt"})
    return folder


def resaved(folder: Path, pickled: bool = False, shards: int = 1) -> Path:
    """The weights in model.safetensors saved again: as a pickle (`torch.save`; transformers 5 writes safetensors
    only) and in `shards` files with an index naming each tensor's file, as transformers names them."""
    from safetensors.torch import load_file, save_file

    state = load_file(folder / "model.safetensors")
    (folder / "model.safetensors").unlink()
    stem, suffix = ("pytorch_model", ".bin") if pickled else ("model", ".safetensors")
    keys = list(state)
    parts = [keys[i::shards] for i in range(shards)]
    names = [f"{stem}{suffix}"] if shards == 1 else [f"{stem}-{i + 1:05d}-of-{shards:05d}{suffix}" for i in
                                                     range(shards)]
    for name, part in zip(names, parts, strict=True):
        tensors = {key: state[key] for key in part}
        if pickled:
            torch.save(tensors, folder / name)
        else:
            save_file(tensors, folder / name, metadata={"format": "pt"})
    if shards > 1:
        index = {"metadata": {"total_size": sum(t.numel() * t.element_size() for t in state.values())},
                 "weight_map": {key: name for name, part in zip(names, parts, strict=True) for key in part}}
        (folder / f"{stem}{suffix}.index.json").write_text(json.dumps(index))
    return folder


def with_task_head(folder: Path, task: str, num_labels: int = 2) -> Path:
    """The weights saved as a task model's (`masked-lm` or `sequence-classification`): the base model's tensors
    under its prefix (`bert.`) beside the task's own head."""
    from transformers import AutoConfig, AutoModel, AutoModelForMaskedLM, AutoModelForSequenceClassification

    config = AutoConfig.from_pretrained(folder, num_labels=num_labels)
    model = {"masked-lm": AutoModelForMaskedLM, "sequence-classification": AutoModelForSequenceClassification}[
        task].from_config(config)
    base = AutoModel.from_pretrained(folder).state_dict()
    model.base_model.load_state_dict({key: value for key, value in base.items() if key in
                                      model.base_model.state_dict()})
    (folder / "model.safetensors").unlink()
    model.save_pretrained(folder)
    return folder


def with_huge_header(folder: Path) -> Path:
    """model.safetensors whose header claims 2^62 bytes."""
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes((2**62).to_bytes(8, "little") + data[8:])
    return folder
