"""A pretrained checkpoint on disk: found, opened and checked before any work, and named by its content.

A checkpoint is a Hugging Face folder (config.json, its weights as `transformers` finds them, and its tokenizer:
a tokenizer.json, or the files `transformers` converts to one, such as vocab.txt or a SentencePiece model) or a
hub id, which `resolve_checkpoint` fetches into the hub cache first. What loads is `transformers`' answer, not a
list of names kept here: the base model config.json describes is loaded by `from_pretrained` (which renames
legacy names such as LayerNorm `gamma`/`beta`, strips a task model's base-model prefix such as the `bert.` of a
`*ForMaskedLM` checkpoint, and leaves its head unread), and the loader's own loading report says which weights
it missed or found with another shape. Everything a run would otherwise find out after the audit is checked
here, each failure one line: the config asks for no code of its own (no code that comes with a checkpoint ever
runs) and describes a model `transformers` builds, whose layers depthfinder can tell (encoder.architectures);
the weights are where `transformers` looks (model.safetensors, pytorch_model.bin, or the index of either's
shards) and every file reads (safetensors headers are checked; a pickle is only ever unpickled with
`weights_only=True`, which reads tensors and runs no code); no encoder weight would be left newly initialised or
found with another shape (a pooler excepted: OPTIONAL_TENSORS); the tokenizer loads. Opening the same
unchanged folder again in a process costs nothing (the result is kept).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import pickle
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from depthfinder.encoder.architectures import Architecture, architecture_of, layer_count

CONFIG_FILE, TOKENIZER_FILE = "config.json", "tokenizer.json"
# Where transformers looks for a folder's weights, in its order: one file, else the index of its shards; safetensors
# first (transformers.utils' SAFE_WEIGHTS_NAME, SAFE_WEIGHTS_INDEX_NAME, WEIGHTS_NAME, WEIGHTS_INDEX_NAME).
WEIGHTS_FILES = (("model.safetensors", "model.safetensors.index.json"),
                 ("pytorch_model.bin", "pytorch_model.bin.index.json"))
# A tokenizer as checkpoints ship it: the fast tokenizer's own file, or what transformers converts to one
# (WordPiece vocab.txt, SentencePiece models, BPE vocab.json + merges.txt), with their settings.
TOKENIZER_FILES = (TOKENIZER_FILE, "vocab.txt", "spm.model", "sentencepiece.bpe.model", "tokenizer.model",
                   "vocab.json", "merges.txt", "tokenizer_config.json", "special_tokens_map.json",
                   "added_tokens.json")
# What a hub snapshot needs: config, safetensors weights (one file or shards and their index), the tokenizer;
# pickled weights only where a checkpoint has no safetensors.
HUB_FILES = (CONFIG_FILE, "*.safetensors", "*.safetensors.index.json", *TOKENIZER_FILES)
HUB_PICKLED_FILES = ("pytorch_model*.bin", "pytorch_model.bin.index.json")
# Tensors a base model may lack in a checkpoint without harm: a pooler (mean and [CLS] pooling do not use it; the
# type's own head, `--pretrained-pooling head`, then starts from a new one).
OPTIONAL_TENSORS = ("pooler.",)


@dataclass(frozen=True)
class PretrainedCheckpoint:
    """A pretrained encoder on disk: where it is, what it is, and a hash of its content."""

    path: str  # a folder with config.json, its weights and a tokenizer
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
        ValueError: the folder or id does not exist, lacks weights or a tokenizer, holds an architecture that is
            not supported or asks for remote code, its weights do not read, or they lack an encoder weight (or
            hold one with another shape) that its config implies.
    """
    folder = Path(path_or_id).expanduser()
    if not folder.exists():
        if path_or_id.startswith((".", "/", "~")) or path_or_id.count("/") > 1:
            raise ValueError(f"pretrained checkpoint {path_or_id}: no such folder")
        folder = _from_hub(path_or_id)
    return _checkpoint_at(folder)


def _from_hub(repo_id: str) -> Path:
    """Download the files a checkpoint needs into the hub cache: its safetensors weights, or where it has none
    its pickled ones (which are unpickled as tensors only)."""
    from huggingface_hub import snapshot_download

    try:
        folder = Path(snapshot_download(repo_id, allow_patterns=list(HUB_FILES)))
        if not any(folder.glob("*.safetensors")):
            folder = Path(snapshot_download(repo_id, allow_patterns=[*HUB_FILES, *HUB_PICKLED_FILES]))
        return folder
    except Exception as exc:  # offline, unknown id, no access: the hub raises many kinds
        raise ValueError(
            f"pretrained checkpoint {repo_id!r}: not a local folder, and the hub gave none ({_first_line(exc)})"
        ) from None


def _checkpoint_at(folder: Path) -> PretrainedCheckpoint:
    if not folder.is_dir():
        raise ValueError(f"pretrained checkpoint {folder}: not a folder (expected {CONFIG_FILE}, its weights and "
                         f"a tokenizer)")
    files = tuple(sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in folder.iterdir() if p.is_file()))
    return _opened(str(folder.resolve()), files)


@functools.lru_cache(maxsize=8)
def _opened(path: str, files: tuple[tuple[str, int, int], ...]) -> PretrainedCheckpoint:
    """The checkpoint at `path`, checked; kept while its files (names, sizes, times) stay as they are."""
    folder = Path(path)
    weights = _weights_files(folder, _read_config(folder))
    for file in weights:
        _check_readable(folder, file)
    tokenizer_files = [folder / name for name in TOKENIZER_FILES if (folder / name).is_file()]
    if not tokenizer_files:
        raise ValueError(f"pretrained checkpoint {folder}: no tokenizer ({TOKENIZER_FILE}, vocab.txt or a "
                         "SentencePiece model)")
    model, report = _loaded_model(folder)
    try:
        architecture = architecture_of(model.config, model)
    except ValueError as exc:
        raise ValueError(f"pretrained checkpoint {folder}: {exc}") from None
    _check_report(folder, model, report)
    open_tokenizer(folder)
    return PretrainedCheckpoint(str(folder), model.config.model_type, layer_count(model.config),
                                int(model.config.hidden_size), _content_hash([folder / CONFIG_FILE, *weights,
                                                                              *tokenizer_files]), architecture)


def _read_config(folder: Path) -> dict:
    """config.json, which reads, asks for no code of the checkpoint's own, and names its model_type."""
    try:
        config = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"pretrained checkpoint {folder}: no {CONFIG_FILE}") from None
    except (OSError, ValueError) as exc:
        raise ValueError(f"pretrained checkpoint {folder}: {CONFIG_FILE} is not readable JSON ({exc})") from None
    if not isinstance(config, dict):
        raise ValueError(f"pretrained checkpoint {folder}: {CONFIG_FILE} is not a JSON object")
    # A checkpoint that names its own classes is defined by its code: loading its weights into a built-in class
    # instead could run without an error and compute something else.
    code = [f"auto_map {json.dumps(config['auto_map'])[:80]}"] if "auto_map" in config else []
    code += sorted(p.name for p in folder.glob("modeling_*.py"))
    if code:
        raise ValueError(f"pretrained checkpoint {folder}: it asks for code of its own ({code[0]}); depthfinder "
                         "never runs code that comes with a checkpoint")
    if not isinstance(config.get("model_type"), str):
        raise ValueError(f"pretrained checkpoint {folder}: {CONFIG_FILE} names no model_type")
    return config


def _weights_files(folder: Path, config: dict) -> list[Path]:
    """The weights files `transformers` loads from `folder`: the one its config names, else the first of
    WEIGHTS_FILES there (an index comes with the shards it names); ValueError where it would find none."""
    named = config.get("transformers_weights")
    if named is not None:  # transformers then looks for nothing else
        if not isinstance(named, str) or Path(named).name != named or not (folder / named).is_file():
            raise ValueError(f"pretrained checkpoint {folder}: {CONFIG_FILE} names its weights "
                             f"transformers_weights={named!r}, which is not a file in the folder")
        return [folder / named, *_shards(folder, folder / named)] if named.endswith(".json") else [folder / named]
    for single, index in WEIGHTS_FILES:
        if (folder / single).is_file():
            return [folder / single]
        if (folder / index).is_file():
            return [folder / index, *_shards(folder, folder / index)]
    others = sorted(p.name for p in folder.iterdir() if p.suffix in (".safetensors", ".bin", ".pt", ".pth"))
    found = f"; it holds {', '.join(others)}, which transformers does not look for" if others else ""
    raise ValueError(f"pretrained checkpoint {folder}: no weights where transformers looks for them "
                     f"(model.safetensors, pytorch_model.bin, or the index of either's shards){found}")


def _shards(folder: Path, index: Path) -> list[Path]:
    """The shards a weights index names (its weight_map's values), each a file in `folder`."""
    try:
        names = sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        detail = f": {_first_line(exc)}" if isinstance(exc, OSError | ValueError) else ""
        raise ValueError(f"pretrained checkpoint {folder}: {index.name} is not an index of weights shards (a JSON "
                         f"object whose weight_map names each tensor's file){detail}") from None
    for name in names:
        if not isinstance(name, str) or Path(name).name != name or not (folder / name).is_file():
            raise ValueError(f"pretrained checkpoint {folder}: {index.name} names the shard {name!r}, which is not "
                             "a file in the folder")
    return [folder / name for name in names]


def _check_readable(folder: Path, path: Path) -> None:
    """A weights file reads: a safetensors header and the data it announces, or a pickle of tensors only."""
    if path.name.endswith(".json"):
        return  # an index, read with its shards
    if path.suffix != ".safetensors":
        _check_pickle(folder, path)
        return
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt") as handle:
            handle.keys()
    except Exception as exc:  # safetensors raises its own error type for every kind of damage
        raise ValueError(f"pretrained checkpoint {folder}: {path.name} is not a readable safetensors file "
                         f"({_first_line(exc)})") from None


def _check_pickle(folder: Path, path: Path) -> None:
    """Pickled weights hold a state dict and nothing that would run: unpickled on the meta device (no tensor data
    read) with weights_only=True, which refuses any global but tensors and plain containers."""
    import torch
    from packaging.version import Version

    if Version(torch.__version__).release < (2, 6):  # weights_only could be bypassed before (CVE-2025-32434)
        raise ValueError(f"pretrained checkpoint {folder}: {path.name} is a pickle, and unpickling it safely needs "
                         f"torch 2.6 or later (this is {torch.__version__}); use safetensors weights or a newer torch")
    try:
        state = torch.load(path, map_location="meta", weights_only=True)
    except pickle.UnpicklingError as exc:
        found = re.search(r"Unsupported global: GLOBAL ([\w.]+)", str(exc))
        if found:
            raise ValueError(f"pretrained checkpoint {folder}: {path.name} is a pickle that holds more than tensors "
                             f"({found.group(1)}); depthfinder unpickles tensors only, and runs no code") from None
        raise ValueError(f"pretrained checkpoint {folder}: {path.name} is not a readable PyTorch weights file "
                         f"({_unpickling_problem(exc)})") from None
    except Exception as exc:  # torch raises RuntimeError, OSError, EOFError, ... for a damaged file
        raise ValueError(f"pretrained checkpoint {folder}: {path.name} is not a readable PyTorch weights file, "
                         f"damaged or cut short ({_first_line(exc)})") from None
    if not isinstance(state, dict) or not all(isinstance(value, torch.Tensor) for value in state.values()):
        raise ValueError(f"pretrained checkpoint {folder}: {path.name} holds no state dict (names mapped to tensors)")


def _unpickling_problem(error: BaseException) -> str:
    """What torch's weights-only unpickler found, without the advice around it."""
    found = re.search(r"WeightsUnpickler error: (.+)", str(error))
    return found.group(1).strip() if found else _first_line(error)


def _loaded_model(folder: Path):
    """The base model config.json describes, loaded by `transformers` from the checkpoint's weights (legacy names
    and task-model prefixes mapped as it maps them), and the loader's own report of what it missed."""
    from transformers import MODEL_MAPPING, AutoConfig

    from depthfinder.encoder.serving import base_model_kwargs

    try:
        config = AutoConfig.from_pretrained(folder, trust_remote_code=False)  # code of its own is refused before
        model_class = MODEL_MAPPING[type(config)]
    except Exception as exc:  # transformers raises many types for a config it cannot build
        raise ValueError(f"pretrained checkpoint {folder}: {CONFIG_FILE} does not describe a model transformers can "
                         f"build ({_first_line(exc)})") from None
    try:
        with quiet_transformers():  # its report, printed, would say what _check_report says in one line
            return model_class.from_pretrained(folder, config=config, output_loading_info=True, weights_only=True,
                                               ignore_mismatched_sizes=True, local_files_only=True,
                                               **base_model_kwargs(model_class))
    except Exception as exc:  # a config it cannot build, weights it cannot convert: many types
        raise ValueError(f"pretrained checkpoint {folder}: transformers cannot load it ({_first_line(exc)})") from None


def _check_report(folder: Path, model, report: dict) -> None:
    """The loader found every encoder weight the config implies, with the shape it implies (its loading report
    lists what it would newly initialise: the missing and the mismatched)."""
    order = {key: position for position, key in enumerate(model.state_dict())}
    mismatched = sorted(report["mismatched_keys"], key=lambda item: order.get(item[0], len(order)))
    if mismatched:
        key, found, implied = mismatched[0]
        raise ValueError(f"pretrained checkpoint {folder}: tensor {key} has shape {list(found)} in the weights but "
                         f"{CONFIG_FILE} implies {list(implied)}; the config does not match the weights")
    missing = [key for key in order if key in report["missing_keys"] and not key.startswith(OPTIONAL_TENSORS)]
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        raise ValueError(f"pretrained checkpoint {folder}: the weights lack {missing[0]}{more} that {CONFIG_FILE} "
                         f"implies ({layer_count(model.config)} layers); the config does not match the weights")


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """transformers' loading reports and progress bars silenced (what they say is expected, or said in one line)."""
    logger = logging.getLogger("transformers")
    level = logger.level
    logger.setLevel(logging.ERROR)
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()  # "Loading weights: 100%" on every load
    try:
        yield
    finally:
        hf_logging.enable_progress_bar()
        hf_logging.set_verbosity(verbosity)
        logger.setLevel(level)


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
