"""The bottom k layers of a pretrained encoder, with a classification head: the pretrained family's network.

The checkpoint (encoder.checkpoint) is a Hugging Face folder, checked before any work. Candidate depth k is
the checkpoint's embeddings plus its bottom k layers, loaded by `transformers` from the config cut to k
layers (the layers above are never loaded), then a pooling and a linear head as in the scratch encoder.
Weights load from safetensors only, never a pickle.

Supported: every encoder type of encoder.architectures (BERT, RoBERTa, XLM-R, DistilBERT,
DeBERTa-v2/v3, ELECTRA, ModernBERT) and, by its generic rule, any type whose layers are one list.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from encoder.architectures import truncated_config
from encoder.checkpoint import PretrainedCheckpoint
from encoder.serving import PretrainedConfig, PretrainedEncoderClassifier, base_model_kwargs


def load_truncated(
    checkpoint: PretrainedCheckpoint, depth: int, n_classes: int, max_len: int, pooling: str
) -> PretrainedEncoderClassifier:
    """The checkpoint's embeddings and bottom `depth` layers (as its architecture defines them) with a new head
    (pooling `head`: the type's own sequence-classification head, its pooler loaded where the checkpoint has one);
    ValueError for a depth above L."""
    from transformers import MODEL_MAPPING, AutoConfig, AutoModel, AutoModelForSequenceClassification

    if not 1 <= depth <= checkpoint.layers:
        raise ValueError(
            f"depth {depth} is beyond the pretrained checkpoint's {checkpoint.layers} layers ({checkpoint.path})"
        )
    config = truncated_config(AutoConfig.from_pretrained(checkpoint.path), depth)
    with quiet_transformers():  # the layers above `depth` (and a new head) are reported: expected here
        if pooling == "head":
            config.num_labels = n_classes
            encoder = AutoModelForSequenceClassification.from_pretrained(checkpoint.path, config=config,
                                                                         use_safetensors=True)
        else:
            encoder = AutoModel.from_pretrained(checkpoint.path, config=config, use_safetensors=True,
                                                **base_model_kwargs(MODEL_MAPPING[type(config)]))
    encoder.train()  # from_pretrained leaves it in eval mode: no dropout while fine-tuning
    positions = getattr(config, "max_position_embeddings", None)
    if isinstance(positions, int):
        max_len = min(max_len, positions - checkpoint.architecture.position_offset)
    pad_id = getattr(config, "pad_token_id", None)
    cfg = PretrainedConfig(encoder=config.to_dict(), n_classes=n_classes, max_len=max_len, pooling=pooling,
                           pad_id=0 if pad_id is None else int(pad_id), layers=depth)
    return PretrainedEncoderClassifier(cfg, encoder)


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """transformers' warnings and progress bars silenced (its load reports, "Writing model shards")."""
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
