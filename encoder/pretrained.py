"""The bottom k layers of a pretrained encoder, with a classification head: the pretrained family's network.

A checkpoint is a Hugging Face folder (config.json, weights in safetensors, tokenizer.json) or
a hub id, which `resolve_checkpoint` fetches into the hub cache first. Candidate depth k is
the checkpoint's embeddings plus its bottom k layers, loaded by `transformers` with the
config's layer count set to k (the layers above are never loaded), then a pooling and a
linear head as in the scratch encoder. Weights load from safetensors only, never a pickle.

Supported: encoders `transformers` builds as BertModel (BERT, MiniLM, and other
model_type "bert" checkpoints) or RobertaModel (model_type "roberta"); anything else is
refused with one line naming its model_type.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn

SUPPORTED_TYPES = ("bert", "roberta")
CONFIG_FILE, WEIGHTS_FILE, TOKENIZER_FILE = "config.json", "model.safetensors", "tokenizer.json"
# What a hub snapshot needs: config, safetensors weights, the fast tokenizer.
HUB_FILES = (CONFIG_FILE, "*.safetensors", TOKENIZER_FILE)


@dataclass(frozen=True)
class PretrainedCheckpoint:
    """A pretrained encoder on disk: where it is, what it is, and a hash of its content."""

    path: str  # a folder with config.json, model.safetensors, tokenizer.json
    model_type: str
    layers: int  # its number of layers L; candidate depths are 1..L
    hidden_size: int
    content_hash: str  # of config, weights and tokenizer: the same checkpoint under any path

    @property
    def tokenizer_path(self) -> str:
        return str(Path(self.path) / TOKENIZER_FILE)


def resolve_checkpoint(path_or_id: str) -> PretrainedCheckpoint:
    """The checkpoint at a local folder, or fetched from the hub by id; ValueError in one line when unusable.

    Raises:
        ValueError: the folder or id does not exist, lacks safetensors weights or a tokenizer.json,
            or holds an architecture that is not supported.
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
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(
            f"pretrained checkpoint {repo_id!r}: not a local folder, and the hub gave none ({reason})"
        ) from None


def _checkpoint_at(folder: Path) -> PretrainedCheckpoint:
    if not folder.is_dir():
        raise ValueError(
            f"pretrained checkpoint {folder}: not a folder (expected {CONFIG_FILE}, {WEIGHTS_FILE}, {TOKENIZER_FILE})"
        )
    config = _read_config(folder)
    model_type = config.get("model_type")
    if model_type not in SUPPORTED_TYPES:
        raise ValueError(
            f"pretrained checkpoint {folder}: model_type {model_type!r} is not supported; depthfinder truncates "
            f"encoders of model_type {' or '.join(SUPPORTED_TYPES)} (BERT, MiniLM, RoBERTa and their kin)"
        )
    weights = sorted(folder.glob("*.safetensors"))
    if not weights:
        pickled = [p.name for p in folder.glob("*.bin")] + [p.name for p in folder.glob("*.pt")]
        found = f" (found {', '.join(pickled)}: a pickle, which is never loaded)" if pickled else ""
        raise ValueError(f"pretrained checkpoint {folder}: no weights in safetensors format{found}")
    if not (folder / TOKENIZER_FILE).is_file():
        raise ValueError(f"pretrained checkpoint {folder}: no {TOKENIZER_FILE} (the fast tokenizer's file)")
    layers = int(config.get("num_hidden_layers", 0))
    if layers < 1:
        raise ValueError(f"pretrained checkpoint {folder}: config.json gives no num_hidden_layers")
    digest = hashlib.sha256()
    for path in [folder / CONFIG_FILE, *weights, folder / TOKENIZER_FILE]:
        digest.update(path.name.encode() + b"\0")
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return PretrainedCheckpoint(
        str(folder.resolve()), model_type, layers, int(config["hidden_size"]), digest.hexdigest()[:16]
    )


def _read_config(folder: Path) -> dict:
    try:
        config = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"pretrained checkpoint {folder}: no {CONFIG_FILE}") from None
    except (OSError, ValueError) as exc:
        raise ValueError(f"pretrained checkpoint {folder}: {CONFIG_FILE} is not readable JSON ({exc})") from None
    if not isinstance(config, dict):
        raise ValueError(f"pretrained checkpoint {folder}: {CONFIG_FILE} is not a JSON object")
    return config


@dataclass(frozen=True)
class PretrainedConfig:
    """What rebuilds the network of a bundle without the original checkpoint."""

    encoder: dict  # the transformers config, its layer count set to the candidate's depth
    n_classes: int
    max_len: int
    pooling: str = "mean"
    pad_id: int = 0

    @property
    def depth(self) -> int:
        return int(self.encoder["num_hidden_layers"])

    @property
    def vocab_size(self) -> int:
        return int(self.encoder["vocab_size"])

    def to_dict(self) -> dict:
        return asdict(self)


class PretrainedEncoderClassifier(nn.Module):
    """A pretrained encoder's embeddings and bottom layers -> pooling -> dropout -> linear head."""

    def __init__(self, cfg: PretrainedConfig, encoder: nn.Module | None = None) -> None:
        super().__init__()
        from transformers import AutoConfig, AutoModel

        self.cfg = cfg
        if encoder is None:  # the architecture only: weights come from a bundle's state_dict
            config = AutoConfig.for_model(**cfg.encoder)
            encoder = AutoModel.from_config(config, add_pooling_layer=False)
        self.encoder = encoder
        hidden = int(cfg.encoder["hidden_size"])
        self.dropout = nn.Dropout(float(cfg.encoder.get("hidden_dropout_prob", 0.1)))
        self.head = nn.Linear(hidden, cfg.n_classes)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state  # (B, T, H)
        if self.cfg.pooling == "cls":
            pooled = hidden[:, 0]
        else:
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)  # (B, T, 1)
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)  # (B, H)
        return self.head(self.dropout(pooled))  # (B, n_classes)

    def num_params(self, embeddings: bool = True) -> int:
        """Parameters, with or without the embedding layer (word, position and token-type embeddings)."""
        total = sum(p.numel() for p in self.parameters())
        return total if embeddings else total - sum(p.numel() for p in self.encoder.embeddings.parameters())


def load_truncated(
    checkpoint: PretrainedCheckpoint, depth: int, n_classes: int, max_len: int, pooling: str
) -> PretrainedEncoderClassifier:
    """The checkpoint's embeddings and bottom `depth` layers with a new head; ValueError for a depth above L."""
    from transformers import AutoConfig, AutoModel

    if not 1 <= depth <= checkpoint.layers:
        raise ValueError(
            f"depth {depth} is beyond the pretrained checkpoint's {checkpoint.layers} layers ({checkpoint.path})"
        )
    config = AutoConfig.from_pretrained(checkpoint.path)
    config.num_hidden_layers = depth
    with _quiet_transformers():  # the layers above `depth` are reported as unused: expected here
        encoder = AutoModel.from_pretrained(checkpoint.path, config=config, use_safetensors=True,
                                            add_pooling_layer=False)
    encoder.train()  # from_pretrained leaves it in eval mode: no dropout while fine-tuning
    max_len = min(max_len, int(getattr(config, "max_position_embeddings", max_len)) - _position_offset(config))
    pad_id = getattr(config, "pad_token_id", None)
    cfg = PretrainedConfig(encoder=config.to_dict(), n_classes=n_classes, max_len=max_len, pooling=pooling,
                           pad_id=0 if pad_id is None else int(pad_id))
    return PretrainedEncoderClassifier(cfg, encoder)


def _position_offset(config: object) -> int:
    """RoBERTa numbers positions from pad_id + 1, so two of its position embeddings are not for tokens."""
    return 2 if getattr(config, "model_type", "") == "roberta" else 0


@contextlib.contextmanager
def _quiet_transformers() -> Iterator[None]:
    logger = logging.getLogger("transformers")
    level = logger.level
    logger.setLevel(logging.ERROR)
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()  # "Loading weights: 100%" on every candidate
    try:
        yield
    finally:
        hf_logging.enable_progress_bar()
        hf_logging.set_verbosity(verbosity)
        logger.setLevel(level)
