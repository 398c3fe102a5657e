"""What loads is what `transformers` loads: the same weights saved with legacy names, as a pickle, in shards, or as
a task model's are accepted and give exactly the checkpoint's own weights; the content hash covers every weights
file that loads; a pickle that would run code, unreadable weights, a missing shard and a missing or mismatched
encoder weight are refused in one line."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from fnmatch import fnmatch
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from depthfinder.encoder.checkpoint import HUB_FILES, WEIGHTS_FILES, resolve_checkpoint
from depthfinder.encoder.pretrained import load_truncated
from tests.encoder.tiny_checkpoint import cut, resaved, tiny_checkpoint, with_config, with_legacy_names, with_task_head

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")
LAYERS = 3


@pytest.fixture(scope="module")
def original(tmp_path_factory) -> Path:
    """A 3-layer BERT saved as save_pretrained saves it: the weights every other form holds."""
    return tiny_checkpoint(tmp_path_factory.mktemp("original") / "bert", ["a great film", "an awful plot"],
                           layers=LAYERS)


def reshaped(original: Path, folder: Path, *changes: Callable[[Path], object]) -> Path:
    """A copy of the original checkpoint with each change applied in turn."""
    shutil.copytree(original, folder)
    for change in changes:
        change(folder)
    return folder


FORMS = {
    "LayerNorm gamma/beta names": [with_legacy_names],
    "only pytorch_model.bin": [lambda folder: resaved(folder, pickled=True)],
    "gamma/beta names in pytorch_model.bin": [with_legacy_names, lambda folder: resaved(folder, pickled=True)],
    "safetensors shards with an index": [lambda folder: resaved(folder, shards=3)],
    "pickled shards with an index": [lambda folder: resaved(folder, pickled=True, shards=2)],
    "a BertForMaskedLM (bert. prefix, MLM head)": [lambda folder: with_task_head(folder, "masked-lm")],
    "a BertForSequenceClassification": [lambda folder: with_task_head(folder, "sequence-classification")],
}


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("pooling", ["mean", "head"])
def test_a_checkpoint_transformers_loads_is_accepted_with_exactly_its_own_weights(
    form: str, pooling: str, original: Path, tmp_path: Path
) -> None:
    folder = reshaped(original, tmp_path / "ckpt", *FORMS[form])
    saved = load_file(original / "model.safetensors")

    checkpoint = resolve_checkpoint(str(folder))
    network = load_truncated(checkpoint, 2, n_classes=3, max_len=32, pooling=pooling)

    assert (checkpoint.model_type, checkpoint.layers) == ("bert", LAYERS)
    state = network.body().state_dict()
    assert not [key for key in state if key.startswith("encoder.layer.2.")]
    for key, value in state.items():
        if not key.startswith("pooler."):  # the pooler: absent from a base model or MLM checkpoint, then new
            assert torch.equal(value, saved[key]), key


def test_a_sequence_classification_checkpoints_own_head_is_never_reused(original: Path, tmp_path: Path) -> None:
    folder = reshaped(original, tmp_path / "ckpt", lambda f: with_task_head(f, "sequence-classification"))
    theirs = load_file(folder / "model.safetensors")["classifier.weight"]  # trained for two labels of its own

    network = load_truncated(resolve_checkpoint(str(folder)), 2, n_classes=2, max_len=32, pooling="head")

    assert network.encoder.classifier.weight.shape == theirs.shape
    assert not torch.equal(network.encoder.classifier.weight, theirs)
    assert torch.equal(network.encoder.bert.pooler.dense.weight,
                       load_file(folder / "model.safetensors")["bert.pooler.dense.weight"])  # its pooler: kept


def test_a_half_precision_checkpoint_fine_tunes_in_float32(original: Path, tmp_path: Path) -> None:
    half = {key: value.half() for key, value in load_file(original / "model.safetensors").items()}
    folder = reshaped(original, tmp_path / "ckpt", lambda f: save_file(half, f / "model.safetensors",
                                                                       metadata={"format": "pt"}),
                      lambda f: with_config(f, dtype="float16"))  # as save_pretrained of a half model writes it

    network = load_truncated(resolve_checkpoint(str(folder)), 1, n_classes=3, max_len=32, pooling="mean")
    logits = network(torch.tensor([[2, 5, 6, 3]]), torch.ones(1, 4, dtype=torch.bool))

    assert {p.dtype for p in network.parameters()} == {torch.float32} and logits.shape == (1, 3)
    weight = network.encoder.embeddings.word_embeddings.weight
    assert torch.equal(weight, half["embeddings.word_embeddings.weight"].float())


@pytest.mark.parametrize(
    ("form", "file"),
    [({"pickled": True}, "pytorch_model.bin"), ({"shards": 3}, "model-00003-of-00003.safetensors"),
     ({"pickled": True, "shards": 2}, "pytorch_model-00002-of-00002.bin")],
)
def test_the_content_hash_covers_every_weights_file_that_loads(form, file, original: Path, tmp_path: Path) -> None:
    first = reshaped(original, tmp_path / "first", lambda folder: resaved(folder, **form))
    second = reshaped(first, tmp_path / "second")
    state = torch.load(second / file, weights_only=True) if file.endswith(".bin") else load_file(second / file)
    key = sorted(state)[-1]
    state[key] = state[key] + 1.0
    if file.endswith(".bin"):
        torch.save(state, second / file)
    else:
        save_file(state, second / file, metadata={"format": "pt"})
    unloaded = reshaped(first, tmp_path / "third", lambda folder: (folder / "model-00009-of-00009.bin").write_bytes(
        b"not weights: transformers never looks at it"))

    assert resolve_checkpoint(str(second)).content_hash != resolve_checkpoint(str(first)).content_hash
    assert resolve_checkpoint(str(unloaded)).content_hash == resolve_checkpoint(str(first)).content_hash


def test_a_pickle_that_would_run_code_is_refused_and_its_code_never_runs(original: Path, tmp_path: Path) -> None:
    planted = tmp_path / "planted"

    class Payload:
        def __reduce__(self):  # unpickling it, without weights_only, would create `planted`
            return (open, (str(planted), "w"))

    def poisoned(folder: Path) -> None:
        state = load_file(folder / "model.safetensors")
        (folder / "model.safetensors").unlink()
        torch.save({**state, "extra": Payload()}, folder / "pytorch_model.bin")

    folder = reshaped(original, tmp_path / "ckpt", poisoned)

    with pytest.raises(ValueError, match=r"pytorch_model.bin is a pickle that holds more than tensors \(io.open\)"):
        resolve_checkpoint(str(folder))
    assert not planted.exists()


def without_safetensors(folder: Path) -> None:
    (folder / "model.safetensors").unlink()


def drop_tensor(folder: Path, key: str) -> None:
    state = load_file(folder / "model.safetensors")
    del state[key]
    save_file(state, folder / "model.safetensors", metadata={"format": "pt"})


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ([lambda f: resaved(f, pickled=True), lambda f: cut(f, "pytorch_model.bin")],
         "pytorch_model.bin is not a readable PyTorch weights file, damaged or cut short"),
        ([lambda f: resaved(f, pickled=True), lambda f: cut(f, "pytorch_model.bin", keep=0)],
         "pytorch_model.bin is not a readable PyTorch weights file, damaged or cut short"),
        ([lambda f: (without_safetensors(f), torch.save([torch.ones(2)], f / "pytorch_model.bin"))],
         r"pytorch_model.bin holds no state dict \(names mapped to tensors\)"),
        ([lambda f: resaved(f, shards=2), lambda f: (f / "model-00002-of-00002.safetensors").unlink()],
         "model.safetensors.index.json names the shard 'model-00002-of-00002.safetensors', which is not a file"),
        ([lambda f: resaved(f, shards=2), lambda f: (f / "model.safetensors.index.json").write_text("[1]")],
         "model.safetensors.index.json is not an index of weights shards"),
        ([lambda f: resaved(f, shards=2), lambda f: cut(f, "model-00002-of-00002.safetensors")],
         "model-00002-of-00002.safetensors is not a readable safetensors file"),
        ([lambda f: resaved(f, shards=2), lambda f: (f / "model.safetensors.index.json").unlink()],
         "no weights where transformers looks for them .*; it holds model-00001-of-00002.safetensors, "
         "model-00002-of-00002.safetensors, which transformers does not look for"),
        ([lambda f: drop_tensor(f, "encoder.layer.1.output.dense.weight")],
         "the weights lack encoder.layer.1.output.dense.weight that config.json implies"),
        ([with_legacy_names, lambda f: drop_tensor(f, "embeddings.LayerNorm.gamma")],  # named as the model names it
         "the weights lack embeddings.LayerNorm.weight that config.json implies"),
        ([lambda f: with_task_head(f, "masked-lm"), lambda f: drop_tensor(f, "bert.encoder.layer.2.output.dense.bias")],
         "the weights lack encoder.layer.2.output.dense.bias that config.json implies"),
        ([lambda f: with_config(f, intermediate_size=48)],
         r"tensor encoder.layer.0.intermediate.dense.weight has shape \[64, 32\] in the weights but config.json "
         r"implies \[48, 32\]"),
        ([lambda f: (f / "modeling_encoder.py").write_text("import os\n")],
         r"asks for code of its own \(modeling_encoder.py\)"),
        ([lambda f: with_config(f, auto_map={"AutoModel": "modeling_evil.EvilModel"})],
         r"asks for code of its own \(auto_map .*modeling_evil.EvilModel"),
        ([lambda f: with_config(f, transformers_weights="../elsewhere.safetensors")],
         "names its weights transformers_weights='../elsewhere.safetensors', which is not a file in the folder"),
        ([lambda f: with_config(f, num_attention_heads=3)], r"transformers cannot load it \(The hidden size \(32\)"),
    ],
)
def test_weights_transformers_would_not_load_whole_are_refused_in_one_line(
    changes, message, original: Path, tmp_path: Path
) -> None:
    folder = reshaped(original, tmp_path / "ckpt", *changes)

    with pytest.raises(ValueError, match=message) as error:
        resolve_checkpoint(str(folder))

    assert "\n" not in str(error.value) and str(folder) in str(error.value)


@pytest.mark.parametrize("pickled", [False, True])
def test_a_hub_checkpoint_is_fetched_with_its_pickled_weights_only_where_it_has_no_safetensors(
    pickled: bool, original: Path, tmp_path: Path, monkeypatch
) -> None:
    """The hub answered by a local stand-in that serves a repository's files matching the patterns asked for."""
    import huggingface_hub

    repository = reshaped(original, tmp_path / "repository", lambda f: resaved(f, pickled=pickled))
    if not pickled:  # a pickle beside safetensors weights is never fetched
        (repository / "pytorch_model.bin").write_bytes(b"")
    asked = []

    def snapshot_download(repo_id: str, allow_patterns: list[str]) -> str:
        asked.append(allow_patterns)
        snapshot = tmp_path / f"snapshot-{len(asked)}"
        snapshot.mkdir()
        for path in repository.iterdir():
            if any(fnmatch(path.name, pattern) for pattern in allow_patterns):
                shutil.copy(path, snapshot / path.name)
        return str(snapshot)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    monkeypatch.chdir(tmp_path)

    checkpoint = resolve_checkpoint("someone/encoder")

    assert asked[0] == list(HUB_FILES) and len(asked) == (2 if pickled else 1)
    weights = "pytorch_model.bin" if pickled else "model.safetensors"
    assert sorted(p.name for p in Path(checkpoint.path).iterdir() if "model" in p.name) == [weights]
    assert checkpoint.layers == LAYERS


def test_weights_are_looked_for_where_and_in_the_order_transformers_looks() -> None:
    from transformers.utils import SAFE_WEIGHTS_INDEX_NAME, SAFE_WEIGHTS_NAME, WEIGHTS_INDEX_NAME, WEIGHTS_NAME

    assert WEIGHTS_FILES == ((SAFE_WEIGHTS_NAME, SAFE_WEIGHTS_INDEX_NAME), (WEIGHTS_NAME, WEIGHTS_INDEX_NAME))
