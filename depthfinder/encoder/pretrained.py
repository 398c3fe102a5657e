"""The bottom k layers of a pretrained encoder, with a classification head: the pretrained family's network.

The checkpoint (encoder.checkpoint) is a Hugging Face folder, checked before any work. Candidate depth k is
the checkpoint's embeddings plus its bottom k layers, loaded by `transformers` from the config cut to k
layers (the layers above are never loaded) out of the weights the check loaded (safetensors, or a pickle
unpickled as tensors only), in float32 whatever precision they were saved in, then a pooling and a new head:
whatever head a task checkpoint (`*ForMaskedLM`, `*ForSequenceClassification`) holds is never reused.

Supported: every encoder type of encoder.architectures (BERT, RoBERTa, XLM-R, DistilBERT,
DeBERTa-v2/v3, ELECTRA, ModernBERT) and, by its generic rule, any type whose layers are one list.
"""

from __future__ import annotations

from tokenizers import Tokenizer
from torch import nn

from depthfinder.encoder.architectures import truncated_config
from depthfinder.encoder.checkpoint import PretrainedCheckpoint, quiet_transformers
from depthfinder.encoder.serving import (
    TASK_HEADS,
    PretrainedConfig,
    PretrainedEncoderClassifier,
    base_model_kwargs,
    task_model_class,
)


def load_truncated(
    checkpoint: PretrainedCheckpoint, depth: int, n_classes: int, max_len: int, pooling: str,
    tokenizer: Tokenizer | None = None,
) -> PretrainedEncoderClassifier:
    """The checkpoint's embeddings and bottom `depth` layers (as its architecture defines them) with a new head
    (pooling `head`: the type's own sequence-classification head, new, on its pooler where the checkpoint has one;
    `tokens`: its token-classification head);
    ValueError for a depth above L. With its `tokenizer`, a pair's second text gets the token type the tokenizer
    gives it, where the type has token types."""
    from transformers import MODEL_MAPPING, AutoConfig

    if not 1 <= depth <= checkpoint.layers:
        raise ValueError(
            f"depth {depth} is beyond the pretrained checkpoint's {checkpoint.layers} layers ({checkpoint.path})"
        )
    config = truncated_config(AutoConfig.from_pretrained(checkpoint.path, trust_remote_code=False), depth)
    with quiet_transformers():  # the layers above `depth` (and a task checkpoint's head) are reported: expected
        if pooling in TASK_HEADS:
            config.num_labels = n_classes
            encoder = _with_new_head(checkpoint.path, config, task_model_class(pooling))
        else:
            model_class = MODEL_MAPPING[type(config)]
            encoder = model_class.from_pretrained(checkpoint.path, config=config, weights_only=True,
                                                  **base_model_kwargs(model_class))
    encoder.float()  # a half-precision checkpoint fine-tunes in float32, as the head and the optimiser expect
    encoder.train()  # from_pretrained leaves it in eval mode: no dropout while fine-tuning
    positions = getattr(config, "max_position_embeddings", None)
    if isinstance(positions, int):
        max_len = min(max_len, positions - checkpoint.architecture.position_offset)
    pad_id = getattr(config, "pad_token_id", None)
    cfg = PretrainedConfig(encoder=config.to_dict(), n_classes=n_classes, max_len=max_len, pooling=pooling,
                           pad_id=0 if pad_id is None else int(pad_id), layers=depth,
                           segment_after=_segment_after(tokenizer, config))
    return PretrainedEncoderClassifier(cfg, encoder)


def _segment_after(tokenizer: Tokenizer | None, config: object) -> int | None:
    """The token after which the tokenizer's pair template starts token type 1 (BERT's [SEP]); None where the type
    has no second token type or the tokenizer gives a pair's second text none."""
    if tokenizer is None or int(getattr(config, "type_vocab_size", 0) or 0) < 2:
        return None
    try:
        encoding = tokenizer.encode("a", "b")
    except Exception:  # a template without a pair form; the Rust library raises its own type
        return None
    types = encoding.type_ids
    return encoding.ids[types.index(1) - 1] if 1 in types and types.index(1) > 0 else None


def _with_new_head(path: str, config: object, model_class: type) -> nn.Module:
    """The type's task model (`model_class`: sequence or token classification) with a new head on the checkpoint's
    base model (its pooler too, where the type's head uses one and the checkpoint has it): a task checkpoint's own
    head, trained for other labels, is left out."""
    from transformers import MODEL_MAPPING

    model = model_class.from_config(config)
    body_class = MODEL_MAPPING[type(config)]
    pooler = {"add_pooling_layer": getattr(model.base_model, "pooler", None) is not None}
    body = body_class.from_pretrained(path, config=config, weights_only=True,
                                      **(pooler if base_model_kwargs(body_class) else {}))
    model.base_model.load_state_dict(body.state_dict())
    return model
