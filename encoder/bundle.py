"""The saved form of one trained candidate, written: weights, config with labels, and tokenizer, in one folder
(encoder.serving describes it and reads it, wherever the model is served).

A pretrained candidate's bundle holds only the layers it uses (its config says how many), so
it loads without the original checkpoint; `transformers` builds its architecture.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from tokenizers import Tokenizer

from encoder.serving import (
    BUNDLE_FORMAT,
    CONFIG_FILE,
    TOKENIZER_FILE,
    WEIGHTS_FILE,
    Network,
    PretrainedEncoderClassifier,
    family_name,
)


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
    config = {**network.cfg.to_dict(), "family": family_name(network.cfg),
              "labels": [str(label) for label in labels], "format": BUNDLE_FORMAT}
    (directory / CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    tokenizer.save(str(directory / TOKENIZER_FILE))
    return directory


def save_hf_folder(directory: Path, network: Network, tokenizer: Tokenizer, labels: list[str]) -> Path | None:
    """The network as a standard Hugging Face folder (the k layers, the config saying k, the type's classification
    head with the label names, the tokenizer) that `AutoModelForSequenceClassification.from_pretrained` and
    `pipeline("text-classification")` load; None for a network that is not one (scratch, or a pretrained network
    with mean or first-token pooling and a linear head, which no transformers class computes)."""
    if not isinstance(network, PretrainedEncoderClassifier) or network.cfg.pooling != "head":
        return None
    from transformers import PreTrainedTokenizerFast

    model = network.encoder
    model.config.id2label = dict(enumerate(labels))
    model.config.label2id = {label: index for index, label in enumerate(labels)}
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory, safe_serialization=True)
    pad = tokenizer.id_to_token(network.cfg.pad_id)
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, model_max_length=network.cfg.max_len,
                            pad_token=pad).save_pretrained(directory)
    return directory
