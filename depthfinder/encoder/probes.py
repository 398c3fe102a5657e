"""A screen of every depth in one fine-tune: a linear probe on each layer of a network that trains as usual.

The network (depth L) trains exactly as its separate fine-tune would: each probe reads its layer's output
detached, so no probe's gradient reaches the encoder, and the network's own head and loss are untouched. What
the probes learn meanwhile is how much of the task the bottom k layers of *this* network already hold, for
every k < L: an underestimate of what a k-layer network fine-tuned on its own reaches (its layers were not
trained to be the last), but one that orders the depths, at the price of the probes alone. The sweep strategy
`search` (flows/sweep.py) uses it to decide which depths to confirm with separate fine-tunes; the depth-L
network itself is a true fine-tune of L, the reference every confirmed depth is compared with.
"""

from __future__ import annotations

import torch
from torch import nn


def layer_list(network: nn.Module) -> nn.ModuleList:
    """The network's layers, in order: the scratch encoder's blocks, or a pretrained body's layer list."""
    blocks = getattr(network, "blocks", None)
    if isinstance(blocks, nn.ModuleList):
        return blocks
    from depthfinder.encoder.architectures import ARCHITECTURES, architecture_of

    body = network.body()
    architecture = ARCHITECTURES.get(body.config.model_type) or architecture_of(body.config, body)
    return body.get_submodule(architecture.layers)


class LayerProbes(nn.Module):
    """One probe per layer below the last: a LayerNorm and a linear head over the layer's mean-pooled output, or, for a
    network of token labels (`per_token`), over each token's output."""

    def __init__(self, network: nn.Module, n_classes: int, per_token: bool = False) -> None:
        super().__init__()
        self.per_token = per_token
        layers = layer_list(network)
        width = _width(network)
        self.probes = nn.ModuleList(nn.Sequential(nn.LayerNorm(width), nn.Linear(width, n_classes))
                                    for _ in range(len(layers) - 1))
        self._outputs: list[torch.Tensor | None] = [None] * (len(layers) - 1)
        self._mask: torch.Tensor | None = None
        for index, layer in enumerate(list(layers)[:-1]):
            layer.register_forward_hook(self._keeper(index))

    def _keeper(self, index: int):
        def keep(module: nn.Module, inputs: object, output: object) -> None:
            hidden = output[0] if isinstance(output, tuple) else output  # (B, T, C); HF layers return tuples
            self._outputs[index] = hidden.detach()  # the probe learns; the encoder does not learn from it
        return keep

    def watch(self, attention_mask: torch.Tensor) -> None:
        """The mask of the batch the network is about to see (for the probes' mean pooling)."""
        self._mask = attention_mask

    def logits(self) -> list[torch.Tensor]:
        """Each probe's logits (B, n_classes), or per token (B, T, n_classes), on the batch the network last saw,
        layer 1 first."""
        mask = self._mask.unsqueeze(-1)  # (B, T, 1)
        result = []
        for probe, hidden in zip(self.probes, self._outputs, strict=True):
            if hidden.shape[1] != mask.shape[1]:  # a layer that drops padding (unpadded attention) is not probed
                raise ValueError(f"layer output of {hidden.shape[1]} tokens for a batch of {mask.shape[1]}")
            if self.per_token:
                result.append(probe(hidden.float()))
                continue
            weights = mask.to(hidden.dtype)
            pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1.0)  # (B, C)
            result.append(probe(pooled.float()))
        return result


def _width(network: nn.Module) -> int:
    cfg = network.cfg
    if hasattr(cfg, "d_model"):
        return int(cfg.d_model)
    return int(network.body().config.hidden_size)
