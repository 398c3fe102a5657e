"""The saved form of one trained candidate: weights, config with labels, and tokenizer, in one folder.

```
bundle/
  weights.pt      the network's state_dict (loaded with weights_only=True: no pickled code)
  encoder.json    the network's config plus "family" (scratch or pretrained), "labels" (the
                  class names in class-id order) and "format"
  tokenizer.json  the tokenizers library's own format
```

A pretrained candidate's bundle holds only the layers it uses (its config says how many), so
it loads without the original checkpoint; `transformers` builds its architecture. Which network a
bundle holds is its family's to say (encoder.families).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from tokenizers import Tokenizer

from encoder.families import Network, NetworkConfig, family_named, family_of
from encoder.tokenizer import encode_texts, pad_batch

WEIGHTS_FILE = "weights.pt"
CONFIG_FILE = "encoder.json"
# The network's computation changed with the depth-scaled residual branches (format 2):
# weights of another format would load without error and compute something else.
BUNDLE_FORMAT = 2
TOKENIZER_FILE = "tokenizer.json"


class TextClassifier:
    """A trained network with its tokenizer and label names: raw text in, classes out."""

    def __init__(self, network: Network, tokenizer: Tokenizer, labels: Sequence[str]) -> None:
        """Hold the network on CPU in eval mode (this switches the given module in place)."""
        if len(labels) != network.cfg.n_classes:
            raise ValueError(f"got {len(labels)} labels for a network with {network.cfg.n_classes} classes")
        self.network = network.to("cpu").eval()
        self.tokenizer = tokenizer
        self.labels = list(labels)

    def predict_proba(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Class probabilities (N, K), rows in input order; K follows `labels`.

        Texts are batched in order of token length, so each batch pads to similar lengths.
        """
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        ids = encode_texts(self.tokenizer, texts, self.network.cfg.max_len)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        probs = np.empty((len(ids), len(self.labels)), dtype=np.float32)
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                rows = order[start : start + batch_size]
                input_ids, attention_mask = pad_batch([ids[i] for i in rows], self.network.cfg.pad_id)
                logits = self.network(input_ids, attention_mask)  # (B, K)
                probs[rows] = torch.softmax(logits.float(), dim=-1).numpy()
        return probs

    def predict(self, texts: Sequence[str], batch_size: int = 64) -> list[str]:
        """The most probable label of each text, in input order."""
        probs = self.predict_proba(texts, batch_size=batch_size)
        return [self.labels[k] for k in probs.argmax(axis=1)]


def save_bundle(directory: Path, network: Network, tokenizer: Tokenizer, labels: list[str]) -> Path:
    """Write one trained candidate to `directory` (created if missing).

    Args:
        directory: Folder to write weights.pt, encoder.json and tokenizer.json into.
        network: The trained network; its weights are saved as CPU tensors.
        tokenizer: The tokenizer the network was trained with.
        labels: Class names in class-id order (label k is the network's output k).

    Returns:
        The bundle's directory.
    """
    if len(labels) != network.cfg.n_classes or len(set(labels)) != len(labels):
        raise ValueError(
            f"labels must be {network.cfg.n_classes} distinct class names in class-id order, got {labels}"
        )
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    state = {key: tensor.detach().cpu() for key, tensor in network.state_dict().items()}
    torch.save(state, directory / WEIGHTS_FILE)
    config = {**network.cfg.to_dict(), "family": family_of(network.cfg).name,
              "labels": [str(label) for label in labels], "format": BUNDLE_FORMAT}
    (directory / CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    tokenizer.save(str(directory / TOKENIZER_FILE))
    return directory


def read_bundle_config(directory: Path) -> tuple[NetworkConfig, list[str]]:
    """The network's config and the label names of a bundle, without loading its weights."""
    path = Path(directory) / CONFIG_FILE
    if not path.is_file():
        raise ValueError(f"{directory} is not a model bundle: {CONFIG_FILE} is missing")
    config = json.loads(path.read_text(encoding="utf-8"))
    labels = config.pop("labels", None)
    if (found := config.pop("format", 1)) != BUNDLE_FORMAT:
        raise ValueError(
            f"{path} is a format-{found} bundle; this depthfinder reads format {BUNDLE_FORMAT}: retrain the model"
        )
    family = config.pop("family", "scratch")
    try:
        cfg = family_named(family).config_type(**config)
    except TypeError as exc:
        raise ValueError(f"{path} does not hold a {family} network's config: {exc}") from None
    if not isinstance(labels, list) or len(labels) != cfg.n_classes:
        raise ValueError(f"{path} must list {cfg.n_classes} labels, got {labels!r}")
    return cfg, labels


def load_bundle(directory: Path) -> TextClassifier:
    """Load a bundle written by `save_bundle` into a CPU classifier in eval mode.

    Args:
        directory: The bundle's folder.

    Returns:
        A TextClassifier whose probabilities match the saved network's.
    """
    directory = Path(directory)
    cfg, labels = read_bundle_config(directory)
    for name in (WEIGHTS_FILE, TOKENIZER_FILE):
        if not (directory / name).is_file():
            raise ValueError(f"{directory} is not a complete model bundle: {name} is missing")
    network = family_of(cfg).rebuild(cfg)
    state = torch.load(directory / WEIGHTS_FILE, map_location="cpu", weights_only=True)
    network.load_state_dict(state)
    tokenizer = Tokenizer.from_file(str(directory / TOKENIZER_FILE))
    return TextClassifier(network, tokenizer, labels)
