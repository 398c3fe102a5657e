"""What "the bottom k layers" of a pretrained encoder means, per model type: one row of ARCHITECTURES each, and a
generic rule for a type the table does not name.

For every type the k-layer model is the checkpoint's embeddings, its first k layers, and whatever its forward
applies after the last layer (ModernBERT's final norm), built by `transformers` from the checkpoint's config
with the layer count set to k and every per-layer list of the config cut to its first k entries
(`truncated_config`); `from_pretrained` then loads exactly those weights and leaves the layers above unread.
So for a post-LayerNorm type (BERT and its kin) the k-layer model's output is the full model's hidden state k;
for ModernBERT, pre-LayerNorm, it is the final norm of hidden state k. Modules outside the layer list are kept
whole: DeBERTa's relative position embeddings and their LayerNorm (shared by every layer), ELECTRA's
`embeddings_project` (when its embedding size differs from the hidden size). A type whose base model holds one
`nn.ModuleList` of `num_hidden_layers` modules is truncated the same way (the generic rule); one without such a
list (ALBERT shares one layer across depth) is refused, naming what was missing.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from torch import nn

# Position ids a type reserves below the first token's (RoBERTa numbers positions from pad_id + 1), so max_len
# may be at most max_position_embeddings minus this. The generic rule assumes the same, to be safe.
ROBERTA_OFFSET = 2


@dataclass(frozen=True)
class Architecture:
    """One encoder type: where its layers are, what follows them, and what else a k-layer model keeps."""

    model_type: str
    layers: str  # dotted path of the layer list in the base model
    kept: str  # what besides its first k layers a k-layer model keeps (for the docs and the tests)
    final_norm: str | None = None  # a module the forward applies to the last layer's output (pre-LN types)
    position_offset: int = 0
    generic: bool = False  # found by the generic rule, not a row of the table


ARCHITECTURES = {architecture.model_type: architecture for architecture in (
    Architecture("bert", "encoder.layer", "embeddings (word, position, token type) and their LayerNorm"),
    Architecture("roberta", "encoder.layer", "embeddings; positions numbered from pad_id + 1",
                 position_offset=ROBERTA_OFFSET),
    Architecture("xlm-roberta", "encoder.layer", "embeddings; positions numbered from pad_id + 1 (as RoBERTa)",
                 position_offset=ROBERTA_OFFSET),
    Architecture("distilbert", "transformer.layer", "embeddings (word, position) and their LayerNorm; the "
                 "config counts layers as n_layers"),
    Architecture("deberta-v2", "encoder.layer", "embeddings, and the relative position embeddings "
                 "(encoder.rel_embeddings) with their LayerNorm, which every layer shares"),
    Architecture("electra", "encoder.layer", "embeddings, and embeddings_project where embedding_size differs "
                 "from hidden_size"),
    Architecture("modernbert", "layers", "embeddings; the config's layer_types (global and sliding-window "
                 "attention, every third layer global) cut to the first k; final_norm after layer k",
                 final_norm="final_norm"),
)}


def layer_count(config: object) -> int:
    """How many layers a transformers config says its model has."""
    return int(config.num_hidden_layers)


def truncated_config(config: object, depth: int) -> object:
    """A copy of a transformers config whose model has its first `depth` layers: the layer count set (through
    the config's own name for it) and every per-layer list (a list as long as the layer count) cut to `depth`."""
    layers = layer_count(config)
    cut = copy.deepcopy(config)
    for key, value in config.to_dict().items():
        if isinstance(value, list) and len(value) == layers and hasattr(cut, key):
            setattr(cut, key, list(value)[:depth])
    cut.num_hidden_layers = depth
    return cut


def architecture_of(config: object, model: nn.Module) -> Architecture:
    """The table's row for the config's model_type, else the generic rule applied to `model` (the base model
    the config builds, e.g. on the meta device).

    Raises:
        ValueError: the type is not in the table and its base model has no single list of its layers.
    """
    known = ARCHITECTURES.get(config.model_type)
    if known is not None:
        return known
    layers = layer_count(config)
    lists = [name for name, module in model.named_modules() if isinstance(module, nn.ModuleList)]
    matching = [name for name in lists if len(model.get_submodule(name)) == layers]
    if len(matching) != 1:
        found = ", ".join(f"{name} ({len(model.get_submodule(name))})" for name in lists) or "none"
        raise ValueError(f"model_type {config.model_type!r} is not one depthfinder knows, and its model holds "
                         f"{'no' if not matching else 'more than one'} list of its {layers} layers (module lists: "
                         f"{found}), so its bottom k layers cannot be told")
    return Architecture(config.model_type, matching[0], "embeddings and everything outside the layer list",
                        position_offset=ROBERTA_OFFSET, generic=True)
