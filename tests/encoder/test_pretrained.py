"""The pretrained family: the bottom k layers of a checkpoint, refused clearly when unusable, trained, saved."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from depthfinder.encoder.bundle import save_bundle
from depthfinder.encoder.checkpoint import resolve_checkpoint
from depthfinder.encoder.families import Pretrained
from depthfinder.encoder.pretrained import load_truncated
from depthfinder.encoder.serving import encode_texts, load_bundle, load_tokenizer, read_bundle_config
from depthfinder.encoder.training import TrainingData, TrainingSetup, train_candidate
from tests.encoder.keyword_task import LABELS, keyword_frame, tiny_model_config, tiny_train_config
from tests.encoder.tiny_checkpoint import (
    cut,
    tiny_checkpoint,
    with_config,
    with_huge_header,
    with_model_type,
    without,
)

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")


@pytest.fixture(scope="module")
def frame():
    return keyword_frame(360)


@pytest.fixture(scope="module")
def checkpoint_dir(frame, tmp_path_factory) -> Path:
    return tiny_checkpoint(tmp_path_factory.mktemp("bert"), frame["text"], layers=4)


def test_depth_k_is_the_embeddings_and_exactly_the_bottom_k_layers_of_the_checkpoint(checkpoint_dir) -> None:
    checkpoint = resolve_checkpoint(str(checkpoint_dir))
    saved = load_file(checkpoint_dir / "model.safetensors")
    prefix = "" if any(key.startswith("embeddings.") for key in saved) else "bert."

    network = load_truncated(checkpoint, 2, n_classes=3, max_len=32, pooling="mean")

    assert (checkpoint.model_type, checkpoint.layers, checkpoint.hidden_size) == ("bert", 4, 32)
    assert len(network.encoder.encoder.layer) == 2 and network.cfg.depth == 2
    state = network.encoder.state_dict()
    assert not [key for key in state if key.startswith(("encoder.layer.2.", "encoder.layer.3."))]
    for key, value in state.items():
        assert torch.equal(value, saved[prefix + key]), key  # the checkpoint's own weights, layers 0 and 1
    assert network.encoder.training  # fine-tuning needs dropout on


def test_a_depth_above_the_checkpoints_layers_is_refused(checkpoint_dir) -> None:
    with pytest.raises(ValueError, match="depth 5 is beyond the pretrained checkpoint's 4 layers"):
        load_truncated(resolve_checkpoint(str(checkpoint_dir)), 5, n_classes=3, max_len=32, pooling="mean")


def test_the_content_hash_names_the_checkpoint_not_its_path(checkpoint_dir, tmp_path) -> None:
    copy = tmp_path / "elsewhere"
    copy.mkdir()
    for path in checkpoint_dir.iterdir():
        (copy / path.name).write_bytes(path.read_bytes())
    assert resolve_checkpoint(str(copy)).content_hash == resolve_checkpoint(str(checkpoint_dir)).content_hash
    retrained = tiny_checkpoint(tmp_path / "other", ["some text"], layers=4, seed=1)
    assert resolve_checkpoint(str(retrained)).content_hash != resolve_checkpoint(str(checkpoint_dir)).content_hash


@pytest.mark.parametrize(
    ("spoil", "message"),
    [
        (lambda folder: without(folder, "model.safetensors"), "no weights where transformers looks for them"),
        (lambda folder: without(folder, "tokenizer.json"), "no tokenizer \\(tokenizer.json, vocab.txt or a"),
        (lambda folder: without(folder, "config.json"), "no config.json"),
        (lambda folder: with_model_type(folder, "gpt2"), "the weights lack wte.weight and .* that config.json implies"),
        (lambda folder: with_model_type(folder, "albert"), "holds no list of its 2 layers"),
        (lambda folder: with_model_type(folder, "no-such-type"), "does not describe a model transformers can build"),
        (lambda folder: cut(folder, "model.safetensors"), "model.safetensors is not a readable safetensors file"),
        (with_huge_header, "model.safetensors is not a readable safetensors file .*header too large"),
        (lambda folder: with_config(folder, hidden_size=64),
         r"tensor embeddings.word_embeddings.weight has shape \[\d+, 32\] .* implies \[\d+, 64\]"),
        (lambda folder: with_config(folder, hidden_size=None),  # transformers' default: 768
         r"embeddings.word_embeddings.weight has shape \[\d+, 32\] .* implies \[\d+, 768\]"),
        (lambda folder: with_config(folder, num_hidden_layers=3), r"the weights lack encoder.layer.2.* \(3 layers\)"),
        (lambda folder: with_config(folder, auto_map={"AutoModel": "modeling_evil.EvilModel"}),
         "asks for code of its own"),
        (lambda folder: cut(folder, "tokenizer.json"), r"its tokenizer \(tokenizer.json\) is not readable"),
        (lambda folder: cut(folder, "tokenizer.json", keep=0), r"its tokenizer \(tokenizer.json\) is not readable"),
    ],
)
def test_an_unusable_checkpoint_is_refused_in_one_line(spoil, message, tmp_path) -> None:
    folder = spoil(tiny_checkpoint(tmp_path / "ckpt", ["a text"], layers=2))
    with pytest.raises(ValueError, match=message) as error:
        resolve_checkpoint(str(folder))
    assert "\n" not in str(error.value)


def test_a_hub_id_that_cannot_be_fetched_is_refused_in_one_line(monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # never reach for the network in a test
    with pytest.raises(ValueError, match="'nobody/no-such-encoder': not a local folder, and the hub gave") as error:
        resolve_checkpoint("nobody/no-such-encoder")
    assert "\n" not in str(error.value)
    with pytest.raises(ValueError, match="no such folder"):
        resolve_checkpoint("./not/here")


def test_a_pretrained_candidate_fine_tunes_saves_only_its_layers_and_loads_back(checkpoint_dir, frame, tmp_path):
    checkpoint = resolve_checkpoint(str(checkpoint_dir))
    tokenizer = load_tokenizer(checkpoint.tokenizer_path)
    recipe = tiny_train_config(max_epochs=6, learning_rate=3e-3)

    trained = train_candidate(TrainingData(frame, LABELS, tokenizer), 2, tiny_model_config(), recipe,
                              TrainingSetup(tmp_path / "checkpoints", progress=False), family=Pretrained(checkpoint))
    bundle = save_bundle(tmp_path / "bundle", trained.network, tokenizer, LABELS)
    loaded = load_bundle(bundle)

    assert trained.metrics["macro_f1"] > 0.9  # the keyword task, through the checkpoint's tokenizer
    cfg, labels = read_bundle_config(bundle)
    assert (cfg.depth, labels) == (2, LABELS)
    layers = {key.split(".")[3] for key in torch.load(bundle / "weights.pt", weights_only=True) if ".layer." in key}
    assert layers == {"0", "1"}  # the two layers it uses, not the checkpoint's four
    texts = frame["text"].head(20).tolist()
    trained_probabilities = loaded.predict_proba(texts)
    assert trained_probabilities.shape == (20, 3)
    assert encode_texts(loaded.tokenizer, ["the pizza"], 32)[0][0] == tokenizer.token_to_id("[CLS]")
    original = type(loaded)(trained.network, tokenizer, LABELS).predict_proba(texts)
    assert torch.allclose(torch.from_numpy(original), torch.from_numpy(trained_probabilities), atol=1e-6)


def test_a_pretrained_candidate_resumed_from_its_checkpoint_ends_as_one_trained_straight_through(
    checkpoint_dir, frame, tmp_path
) -> None:
    checkpoint = resolve_checkpoint(str(checkpoint_dir))
    tokenizer = load_tokenizer(checkpoint.tokenizer_path)
    recipe = tiny_train_config(max_epochs=4, min_epochs=4, learning_rate=3e-3)

    def run(out_dir: Path, **budget: object):
        return train_candidate(TrainingData(frame, LABELS, tokenizer), 1, tiny_model_config(), recipe,
                               TrainingSetup(out_dir, progress=False, **budget), family=Pretrained(checkpoint))

    straight = run(tmp_path / "straight")
    rung = run(tmp_path / "halved", epochs=2)
    resumed = run(tmp_path / "halved", resume_from=rung.checkpoint)

    weights = straight.network.state_dict()
    assert all(torch.equal(value, weights[key]) for key, value in resumed.network.state_dict().items())
    assert resumed.metrics == straight.metrics and resumed.epochs == 4


def test_a_roberta_checkpoint_is_truncated_too(frame, tmp_path) -> None:
    folder = tiny_checkpoint(tmp_path / "roberta", frame["text"], layers=3, model_type="roberta")
    checkpoint = resolve_checkpoint(str(folder))

    network = load_truncated(checkpoint, 2, n_classes=3, max_len=32, pooling="cls")
    logits = network(torch.tensor([[2, 5, 6, 3]]), torch.ones(1, 4, dtype=torch.bool))

    assert checkpoint.model_type == "roberta" and len(network.encoder.encoder.layer) == 2
    assert logits.shape == (1, 3) and network.cfg.max_len == 32
