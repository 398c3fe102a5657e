"""What the encoder tests share: one torch thread each, and a tiny pretrained network built once."""

import pytest
import torch

from depthfinder.encoder.checkpoint import resolve_checkpoint
from depthfinder.encoder.pretrained import load_truncated
from depthfinder.encoder.serving import load_tokenizer
from tests.encoder.keyword_task import LABELS, keyword_frame
from tests.encoder.tiny_checkpoint import tiny_checkpoint
from tests.torch_threads import one_torch_thread  # noqa: F401  (autouse)


@pytest.fixture(scope="session")
def varied(tmp_path_factory):
    """A mean-pooled network whose strong random head gives the classes in turn (its labels depend on every token),
    its tokenizer (trained on more words than the texts use), the texts it is trained on and 60 texts to label."""
    root = tmp_path_factory.mktemp("prune")
    frame = keyword_frame(180)
    extra = ["zebras and quokkas graze", "wombats dig tunnels at dusk"] * 5
    checkpoint = resolve_checkpoint(str(tiny_checkpoint(root / "bert", [*frame["text"], *extra], layers=2)))
    network = load_truncated(checkpoint, 1, n_classes=len(LABELS), max_len=32, pooling="mean")
    with torch.no_grad():
        network.head.weight.normal_(std=30.0, generator=torch.Generator().manual_seed(0))
    return network.eval(), load_tokenizer(checkpoint.tokenizer_path), frame["text"].head(120).tolist(), \
        frame["text"].tail(60).tolist()
