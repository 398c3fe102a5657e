"""Text in, labels out: the one prediction path used to score candidates and the champion.

No Lightning import here, so a served model can use it without paying for one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

from encoder.tokenizer import encode_texts, pad_batch

if TYPE_CHECKING:
    from collections.abc import Sequence

    from tokenizers import Tokenizer

    from encoder.model import EncoderClassifier


def predict_class_ids(
    network: EncoderClassifier,
    tokenizer: Tokenizer,
    texts: Sequence[str],
    *,
    batch_size: int = 64,
    device: torch.device | str | None = None,
) -> np.ndarray:
    """Predicted class id per text, in the order of `texts`.

    Texts are batched by length (less padding) and the predictions put back in input
    order. Runs in eval mode under inference mode on `device` (default: the network's
    own), and leaves the network's device and train/eval mode as they were.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    ids = encode_texts(tokenizer, list(texts), network.cfg.max_len)
    order = np.argsort([len(seq) for seq in ids], kind="stable")
    home = next(network.parameters()).device
    device = torch.device(device) if device is not None else home
    was_training = network.training
    network.to(device).eval()
    predictions = np.empty(len(ids), dtype=np.int64)
    try:
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                rows = order[start : start + batch_size]
                input_ids, mask = pad_batch([ids[i] for i in rows])
                logits = network(input_ids.to(device), mask.to(device))  # (B, n_classes)
                predictions[rows] = logits.argmax(dim=-1).cpu().numpy()
    finally:
        network.to(home).train(was_training)
    return predictions


def predict_labels(
    network: EncoderClassifier,
    tokenizer: Tokenizer,
    texts: Sequence[str],
    labels: Sequence[str],
    *,
    batch_size: int = 64,
    device: torch.device | str | None = None,
) -> list[str]:
    """Predicted label per text, in the order of `texts`; `labels[i]` names class id i."""
    if len(labels) != network.cfg.n_classes:
        raise ValueError(f"got {len(labels)} labels for a network with {network.cfg.n_classes} classes")
    class_ids = predict_class_ids(network, tokenizer, texts, batch_size=batch_size, device=device)
    return [labels[i] for i in class_ids]
