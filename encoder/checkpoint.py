"""A pretrained checkpoint on disk: found, opened and checked before any work, and named by its content.

A checkpoint is a Hugging Face folder (config.json, weights in safetensors, and its tokenizer: a
tokenizer.json, or the files `transformers` converts to one, such as vocab.txt or a SentencePiece
model) or a hub id, which `resolve_checkpoint` fetches into the hub cache first (never pickled
weights). Everything a run would otherwise find out after the audit is checked here, each failure
one line: the config asks for no code of its own and describes a model `transformers` builds, whose
layers depthfinder can tell (encoder.architectures); every safetensors header reads and the data it
announces is there; every tensor the config implies is in the weights with the shape it implies (the
model is built on the meta device: no memory, no weights read); the tokenizer loads. Opening the same
unchanged folder again in a process costs nothing (the result is kept).
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from encoder.architectures import Architecture, architecture_of, layer_count

CONFIG_FILE, WEIGHTS_FILE, TOKENIZER_FILE = "config.json", "model.safetensors", "tokenizer.json"
# A tokenizer as checkpoints ship it: the fast tokenizer's own file, or what transformers converts to one
# (WordPiece vocab.txt, SentencePiece models, BPE vocab.json + merges.txt), with their settings.
TOKENIZER_FILES = (TOKENIZER_FILE, "vocab.txt", "spm.model", "sentencepiece.bpe.model", "tokenizer.model",
                   "vocab.json", "merges.txt", "tokenizer_config.json", "special_tokens_map.json",
                   "added_tokens.json")
# What a hub snapshot needs: config, safetensors weights, the tokenizer.
HUB_FILES = (CONFIG_FILE, "*.safetensors", *TOKENIZER_FILES)
# Tensors a base model may lack in a checkpoint without harm: a pooler depthfinder does not use.
OPTIONAL_TENSORS = ("pooler.",)


@dataclass(frozen=True)
class PretrainedCheckpoint:
    """A pretrained encoder on disk: where it is, what it is, and a hash of its content."""

    path: str  # a folder with config.json, safetensors weights and a tokenizer
    model_type: str
    layers: int  # its number of layers L; candidate depths are 1..L
    hidden_size: int
    content_hash: str  # of config, weights and tokenizer files: the same checkpoint under any path
    architecture: Architecture  # what its bottom k layers are

    @property
    def tokenizer_path(self) -> str | None:
        """Its tokenizer.json, or None when its tokenizer ships in another form (see open_tokenizer)."""
        path = Path(self.path) / TOKENIZER_FILE
        return str(path) if path.is_file() else None


def resolve_checkpoint(path_or_id: str) -> PretrainedCheckpoint:
    """The checkpoint at a local folder, or fetched from the hub by id; ValueError in one line when unusable.

    Raises:
        ValueError: the folder or id does not exist, lacks safetensors weights or a tokenizer.json, holds
            an architecture that is not supported or asks for remote code, or its files do not agree.
    """
    folder = Path(path_or_id).expanduser()
    if not folder.exists():
        if path_or_id.startswith((".", "/", "~")) or path_or_id.count("/") > 1:
            raise ValueError(f"pretrained checkpoint {path_or_id}: no such folder")
        folder = _from_hub(path_or_id)
    return _checkpoint_at(folder)


def _from_hub(repo_id: str) -> Path:
    """Download the files a checkpoint needs (not its pickled weights) into the hub cache."""
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(repo_id, allow_patterns=list(HUB_FILES)))
    except Exception as exc:  # offline, unknown id, no access: the hub raises many kinds
        raise ValueError(
            f"pretrained checkpoint {repo_id!r}: not a local folder, and the hub gave none ({_first_line(exc)})"
        ) from None


def _checkpoint_at(folder: Path) -> PretrainedCheckpoint:
    if not folder.is_dir():
        raise ValueError(
            f"pretrained checkpoint {folder}: not a folder (expected {CONFIG_FILE}, {WEIGHTS_FILE}, {TOKENIZER_FILE})"
        )
    files = tuple(sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in folder.iterdir() if p.is_file()))
    return _opened(str(folder.resolve()), files)


@functools.lru_cache(maxsize=8)
def _opened(path: str, files: tuple[tuple[str, int, int], ...]) -> PretrainedCheckpoint:
    """The checkpoint at `path`, checked; kept while its files (names, sizes, times) stay as they are."""
    folder = Path(path)
    _check_config(folder)
    weights = sorted(folder.glob("*.safetensors"))
    if not weights:
        pickled = [p.name for p in folder.glob("*.bin")] + [p.name for p in folder.glob("*.pt")]
        found = f" (found {', '.join(pickled)}: a pickle, which is never loaded)" if pickled else ""
        raise ValueError(f"pretrained checkpoint {folder}: no weights in safetensors format{found}")
    tokenizer_files = [folder / name for name in TOKENIZER_FILES if (folder / name).is_file()]
    if not tokenizer_files:
        raise ValueError(f"pretrained checkpoint {folder}: no tokenizer ({TOKENIZER_FILE}, vocab.txt or a "
                         "SentencePiece model)")
    model = _meta_model(folder)
    try:
        architecture = architecture_of(model.config, model)
    except ValueError as exc:
        raise ValueError(f"pretrained checkpoint {folder}: {exc}") from None
    _check_weights(folder, weights, model)
    open_tokenizer(folder)
    return PretrainedCheckpoint(str(folder), model.config.model_type, layer_count(model.config),
                                int(model.config.hidden_size), _content_hash([folder / CONFIG_FILE, *weights,
                                                                              *tokenizer_files]), architecture)


def _check_config(folder: Path) -> None:
    """config.json reads, asks for no code of the checkpoint's own, and names its model_type."""
    try:
        config = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"pretrained checkpoint {folder}: no {CONFIG_FILE}") from None
    except (OSError, ValueError) as exc:
        raise ValueError(f"pretrained checkpoint {folder}: {CONFIG_FILE} is not readable JSON ({exc})") from None
    if not isinstance(config, dict):
        raise ValueError(f"pretrained checkpoint {folder}: {CONFIG_FILE} is not a JSON object")
    if "auto_map" in config or list(folder.glob("modeling_*.py")):
        raise ValueError(f"pretrained checkpoint {folder}: it asks for code of its own (auto_map or modelling "
                         "files); depthfinder never runs code that comes with a checkpoint")
    if not isinstance(config.get("model_type"), str):
        raise ValueError(f"pretrained checkpoint {folder}: {CONFIG_FILE} names no model_type")


def _check_weights(folder: Path, weights: list[Path], model) -> None:
    """Every safetensors file reads, and holds each tensor the config (its `model`) implies with that shape."""
    found = _tensor_shapes(folder, weights)
    prefix = f"{model.base_model_prefix}."
    missing = []
    for key, tensor in model.state_dict().items():
        shape = found.get(key, found.get(prefix + key))
        if shape is None:
            if not key.startswith(OPTIONAL_TENSORS):
                missing.append(key)
        elif shape != tuple(tensor.shape):
            raise ValueError(f"pretrained checkpoint {folder}: tensor {key} has shape {list(shape)} in the weights "
                             f"but {CONFIG_FILE} implies {list(tensor.shape)}; the config does not match the weights")
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        raise ValueError(f"pretrained checkpoint {folder}: the weights lack {missing[0]}{more} that {CONFIG_FILE} "
                         f"implies ({layer_count(model.config)} layers); the config does not match the weights")


def _tensor_shapes(folder: Path, weights: list[Path]) -> dict[str, tuple[int, ...]]:
    """The shape of every tensor in the safetensors files, read from their headers (which are checked)."""
    from safetensors import safe_open

    shapes = {}
    for path in weights:
        try:
            with safe_open(str(path), framework="pt") as handle:
                for key in handle.keys():  # noqa: SIM118 (a safetensors handle is not a dict)
                    shapes[key] = tuple(handle.get_slice(key).get_shape())
        except Exception as exc:  # safetensors raises its own error type for every kind of damage
            raise ValueError(f"pretrained checkpoint {folder}: {path.name} is not a readable safetensors file "
                             f"({_first_line(exc)})") from None
    return shapes


def _meta_model(folder: Path):
    """The base model config.json describes, on the meta device (shapes, no storage)."""
    import torch
    from transformers import MODEL_MAPPING, AutoConfig, AutoModel

    from encoder.serving import base_model_kwargs

    try:
        config = AutoConfig.from_pretrained(folder)  # code of the checkpoint's own is refused before this
        with torch.device("meta"):
            return AutoModel.from_config(config, **base_model_kwargs(MODEL_MAPPING[type(config)]))
    except Exception as exc:  # transformers raises many types for a config it cannot build
        raise ValueError(f"pretrained checkpoint {folder}: {CONFIG_FILE} does not describe a model transformers can "
                         f"build ({_first_line(exc)})") from None


def open_tokenizer(folder: Path):
    """The checkpoint's tokenizer as a `tokenizers.Tokenizer`: its tokenizer.json, or the fast tokenizer
    `transformers` converts its vocab.txt or SentencePiece model to (no code of the checkpoint's runs)."""
    from tokenizers import Tokenizer

    folder = Path(folder)
    try:
        if (folder / TOKENIZER_FILE).is_file():
            return Tokenizer.from_file(str(folder / TOKENIZER_FILE))
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(folder, use_fast=True, trust_remote_code=False).backend_tokenizer
    except ImportError as exc:
        raise ValueError(f"pretrained checkpoint {folder}: converting its tokenizer needs {exc.name or exc} (pip "
                         "install 'depthfinder[sentencepiece]')") from None
    except Exception as exc:  # the Rust library and transformers raise many types for a damaged tokenizer
        found = ", ".join(name for name in TOKENIZER_FILES if (folder / name).is_file())
        raise ValueError(f"pretrained checkpoint {folder}: its tokenizer ({found}) is not readable "
                         f"({_first_line(exc)})") from None


def _content_hash(paths: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.name.encode() + b"\0")
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:16]


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
