"""The bottom k layers of each encoder type, on tiny random checkpoints of the seven types built in the test: the
k-layer network computes what the full model computes up to layer k (post-LayerNorm types: its hidden state k;
ModernBERT, pre-LayerNorm: the final norm of it), holds exactly the checkpoint's weights of what it keeps, and
nothing of the layers above; tokenizers that ship as vocab.txt or a SentencePiece model are converted; a type
the table does not name goes through the generic rule."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from depthfinder.encoder.architectures import ARCHITECTURES, truncated_config
from depthfinder.encoder.checkpoint import open_tokenizer, resolve_checkpoint
from depthfinder.encoder.families import Pretrained
from depthfinder.encoder.pretrained import load_truncated
from depthfinder.encoder.serving import load_tokenizer
from tests.encoder.tiny_checkpoint import TYPES, tiny_checkpoint

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")
TEXTS = ["a great film with a truly great cast", "an awful mess of a plot", "the music and the acting"]
LAYERS, DEPTH = 3, 2


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("types")
    return {model_type: tiny_checkpoint(root / model_type, TEXTS, layers=LAYERS, model_type=model_type)
            for model_type in TYPES}


def full_and_truncated(folder: Path, depth: int):
    """The checkpoint, its `depth`-layer network, the full base model, and on TEXTS[0] the network's output, the
    full model's hidden states and its output."""
    from transformers import AutoModel

    checkpoint = resolve_checkpoint(str(folder))
    network = load_truncated(checkpoint, depth, n_classes=2, max_len=32, pooling="mean").eval()
    full = AutoModel.from_pretrained(folder).eval()
    ids = torch.tensor([open_tokenizer(folder).encode(TEXTS[0]).ids])
    mask = torch.ones_like(ids)
    with torch.no_grad():
        truncated = network.encoder(input_ids=ids, attention_mask=mask).last_hidden_state
        outputs = full(input_ids=ids, attention_mask=mask, output_hidden_states=True)
    return checkpoint, network, full, truncated, outputs.hidden_states, outputs.last_hidden_state


@pytest.mark.parametrize("model_type", list(TYPES))
def test_the_k_layer_network_computes_what_the_full_model_computes_up_to_layer_k(checkpoints, model_type) -> None:
    checkpoint, network, full, truncated, hidden, output = full_and_truncated(checkpoints[model_type], DEPTH)
    architecture = ARCHITECTURES[model_type]

    assert (checkpoint.architecture, checkpoint.layers) == (architecture, LAYERS)
    assert len(network.encoder.get_submodule(architecture.layers)) == DEPTH
    expected = hidden[DEPTH] if architecture.final_norm is None else getattr(full, architecture.final_norm)(
        hidden[DEPTH])
    assert torch.allclose(truncated, expected, atol=1e-6)
    assert not torch.allclose(truncated, output, atol=1e-3)  # the layer above changes what comes out


@pytest.mark.parametrize("model_type", list(TYPES))
def test_the_k_layer_network_holds_the_checkpoints_own_weights_and_none_of_the_layers_above(
    checkpoints, model_type
) -> None:
    folder = checkpoints[model_type]
    saved = load_file(folder / "model.safetensors")
    network = load_truncated(resolve_checkpoint(str(folder)), DEPTH, n_classes=2, max_len=32, pooling="mean")
    layers = ARCHITECTURES[model_type].layers

    state = network.encoder.state_dict()
    assert not [key for key in state if key.startswith(f"{layers}.{DEPTH}.")]
    for key, value in state.items():
        assert torch.equal(value, saved[key]), key
    kept = {"deberta-v2": "encoder.rel_embeddings.weight", "electra": "embeddings_project.weight",
            "modernbert": "final_norm.weight"}
    if model_type in kept:  # what sits outside the layer list is kept whole
        assert kept[model_type] in state


def test_modernberts_attention_pattern_is_cut_with_its_layers(checkpoints) -> None:
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(checkpoints["modernbert"])
    cut = truncated_config(config, 2)

    assert config.layer_types == ["full_attention", "sliding_attention", "sliding_attention"]
    assert (cut.num_hidden_layers, cut.layer_types) == (2, ["full_attention", "sliding_attention"])
    assert config.num_hidden_layers == 3  # the checkpoint's own config is left as it is


def test_distilberts_own_name_for_its_layer_count_is_set(checkpoints) -> None:
    from transformers import AutoConfig

    cut = truncated_config(AutoConfig.from_pretrained(checkpoints["distilbert"]), 1)

    assert cut.to_dict()["n_layers"] == 1


@pytest.mark.parametrize(("model_type", "form"), [("bert", "vocab"), ("deberta-v2", "spm")])
def test_a_tokenizer_shipped_as_vocab_txt_or_sentencepiece_is_converted_once_into_the_work_folder(
    model_type: str, form: str, tmp_path: Path
) -> None:
    folder = tiny_checkpoint(tmp_path / "ckpt", TEXTS, layers=2, model_type=model_type, tokenizer=form)
    family = Pretrained(resolve_checkpoint(str(folder)))

    path = family.tokenizer(tmp_path / "unused.parquet", "hash", None, tmp_path / "work")

    assert not (folder / "tokenizer.json").exists() and Path(path).parent == tmp_path / "work" / "tokenizers"
    tokenizer = load_tokenizer(path)
    encoded = tokenizer.encode(TEXTS[1])
    assert encoded.tokens[0] == "[CLS]" and encoded.tokens[-1] == "[SEP]"
    assert max(encoded.ids) < tokenizer.get_vocab_size()
    assert family.tokenizer(tmp_path / "unused.parquet", "hash", None, tmp_path / "work") == path  # kept


def test_a_type_the_table_does_not_name_goes_through_the_generic_rule(tmp_path: Path) -> None:
    from transformers import AutoConfig, AutoModel

    folder = tmp_path / "mpnet"
    config = AutoConfig.for_model("mpnet", vocab_size=120, hidden_size=32, num_hidden_layers=3, num_attention_heads=2,
                                  intermediate_size=64, max_position_embeddings=66)
    AutoModel.from_config(config).save_pretrained(folder)
    tiny_checkpoint(tmp_path / "tokenizer-donor", TEXTS, layers=1)
    (folder / "tokenizer.json").write_bytes((tmp_path / "tokenizer-donor" / "tokenizer.json").read_bytes())

    checkpoint, network, _, truncated, hidden, _ = full_and_truncated(folder, 2)

    assert checkpoint.architecture.generic and checkpoint.architecture.layers == "encoder.layer"
    assert torch.allclose(truncated, hidden[2], atol=1e-6)
    assert network.cfg.max_len <= 66 - 2  # positions numbered as RoBERTa's, to be safe
