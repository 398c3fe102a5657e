"""The saved form of one trained candidate, written: weights, config with labels, and tokenizer, in one folder
(encoder.serving describes it and reads it, wherever the model is served).

A pretrained candidate's bundle holds only the layers it uses (its config says how many), so
it loads without the original checkpoint; `transformers` builds its architecture.

A pretrained network also has a standard form outside depthfinder: with its type's own head (sequence or token
classification), a Hugging Face folder (`save_hf_folder`); pooled by mean or first token into a linear layer, a
sentence-transformers folder (`save_sentence_transformers_folder`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import torch
from tokenizers import Tokenizer

from depthfinder.encoder.checkpoint import quiet_transformers
from depthfinder.encoder.serving import (
    BUNDLE_FORMAT,
    CONFIG_FILE,
    INPUTS_KEY,
    TASK_HEADS,
    TEXT_COLUMN,
    TOKENIZER_FILE,
    WEIGHTS_FILE,
    Network,
    PretrainedConfig,
    PretrainedEncoderClassifier,
    base_model_kwargs,
    family_name,
)
from depthfinder.encoder.vocabulary import save_vocab_file


def save_bundle(directory: Path, network: Network, tokenizer: Tokenizer, labels: list[str],
                inputs: Sequence[str] = (TEXT_COLUMN,)) -> Path:
    """Write one trained candidate to `directory` (created if missing).

    Args:
        directory: Folder to write weights.pt, encoder.json and tokenizer.json into.
        network: The trained network; its weights are saved as CPU tensors.
        tokenizer: The tokenizer the network was trained with.
        labels: Class names in class-id order (label k is the network's output k).
        inputs: The columns one example is read from: `text`, or `text` and `pair` (encoder.serving).

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
              "labels": [str(label) for label in labels], "format": BUNDLE_FORMAT,
              **({INPUTS_KEY: list(inputs)} if tuple(inputs) != (TEXT_COLUMN,) else {})}
    (directory / CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    tokenizer.save(str(directory / TOKENIZER_FILE))
    return directory


def save_hf_folder(directory: Path, network: Network, tokenizer: Tokenizer, labels: list[str]) -> Path | None:
    """The network as a standard Hugging Face folder (the k layers, the config saying k, the type's task head with
    the label names as id2label and label2id, the tokenizer): with its sequence-classification head (pooling `head`),
    what `AutoModelForSequenceClassification.from_pretrained` and `pipeline("text-classification")` load; with its
    token-classification head (pooling `tokens`), what `AutoModelForTokenClassification.from_pretrained` and
    `pipeline("token-classification", aggregation_strategy="first")` load, each word tagged at its first piece as
    depthfinder tags it (BIO tags: the pipeline reads no `E-` or `S-`; and it takes punctuation the tokenizer splits
    off for a word of its own, where depthfinder's words are what white space separates). None for a network that
    is not one (scratch, or a pretrained network with mean or first-token pooling and a linear head, which no
    transformers class computes)."""
    if not isinstance(network, PretrainedEncoderClassifier) or network.cfg.pooling not in TASK_HEADS:
        return None
    model = network.encoder
    model.config.id2label = dict(enumerate(labels))
    model.config.label2id = {label: index for index, label in enumerate(labels)}
    directory.mkdir(parents=True, exist_ok=True)
    with quiet_transformers():
        model.save_pretrained(directory, safe_serialization=True)
    _save_hf_tokenizer(directory, tokenizer, network.cfg)
    return directory


# sentence-transformers' on-disk form, as its loaders read it from release 2 to 6 (6 maps these legacy type names
# and config keys to its own): the Transformer's files in the folder's root, then the Pooling and the Dense module
# in their own folders.
ST_MODULES = [
    {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
    {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"},
]
ST_POOLING_MODES = ("cls_token", "mean_tokens", "max_tokens", "mean_sqrt_len_tokens", "weightedmean_tokens",
                    "lasttoken")
ST_POOLING = {"mean": "mean_tokens", "cls": "cls_token"}  # depthfinder's pooling, by sentence-transformers' name
LABELS_FILE = "labels.json"


def save_sentence_transformers_folder(directory: Path, network: Network, tokenizer: Tokenizer,
                                      labels: list[str]) -> Path:
    """A pretrained network pooled by mean (or first token) into a linear head, as a sentence-transformers folder
    that `SentenceTransformer(directory)` loads: the k layers (a standard Hugging Face base model and its
    tokenizer), the same pooling, and the head as a Dense layer with no activation, so `encode` gives each text's
    class logits; the class names, in output order, in labels.json. ValueError for a network that is not one."""
    if not isinstance(network, PretrainedEncoderClassifier):
        raise ValueError("it is a scratch model (depthfinder's own encoder, which sentence-transformers does not "
                         "build): the form needs a pretrained model (run --pretrained)")
    if network.cfg.pooling not in ST_POOLING:
        raise ValueError("it classifies with its type's own head, not pooling and a linear layer: its standard "
                         "form is the Hugging Face folder (--format hf)")
    from safetensors.torch import save_file

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    with quiet_transformers():
        network.encoder.save_pretrained(directory, safe_serialization=True)
    _save_hf_tokenizer(directory, tokenizer, network.cfg)
    head = network.head  # dropout before it is the identity when serving
    pooling = {f"pooling_mode_{mode}": mode == ST_POOLING[network.cfg.pooling] for mode in ST_POOLING_MODES}
    dense = {"in_features": head.in_features, "out_features": head.out_features, "bias": head.bias is not None,
             "activation_function": "torch.nn.modules.linear.Identity"}
    files = {
        "modules.json": ST_MODULES,
        "config_sentence_transformers.json": {"__version__": _versions(), "prompts": {}, "default_prompt_name": None},
        "sentence_bert_config.json": {"max_seq_length": network.cfg.max_len, "do_lower_case": False,
                                      # no pooler, as in training: else its weights load as newly initialised
                                      "model_args": base_model_kwargs(type(network.encoder))},
        "1_Pooling/config.json": {"word_embedding_dimension": head.in_features, **pooling, "include_prompt": True},
        "2_Dense/config.json": dense,
        LABELS_FILE: [str(label) for label in labels],
    }
    for name, content in files.items():
        (directory / name).parent.mkdir(exist_ok=True)
        (directory / name).write_text(json.dumps(content, indent=2) + "\n", encoding="utf-8")
    weights = {f"linear.{name}": tensor.detach().cpu().contiguous() for name, tensor in head.state_dict().items()}
    save_file(weights, str(directory / "2_Dense" / "model.safetensors"))
    (directory / "README.md").write_text(_st_readme(network, labels), encoding="utf-8")
    return directory


def _save_hf_tokenizer(directory: Path, tokenizer: Tokenizer, cfg: PretrainedConfig) -> None:
    """The tokenizer as `transformers` loads it, truncating at max_len and giving the network only the inputs
    depthfinder gives it (no token_type_ids: the model's own default, as in training); a WordPiece tokenizer's
    vocab.txt beside it, for the tools that read that (a pruned vocabulary's, in its new id order)."""
    from transformers import PreTrainedTokenizerFast

    PreTrainedTokenizerFast(tokenizer_object=tokenizer, model_max_length=cfg.max_len,
                            pad_token=tokenizer.id_to_token(cfg.pad_id),
                            model_input_names=["input_ids", "attention_mask"]).save_pretrained(directory)
    save_vocab_file(directory, tokenizer)


def _versions() -> dict[str, str]:
    """The libraries that wrote the folder, as sentence-transformers records them (it wrote none of it)."""
    import transformers

    return {"transformers": transformers.__version__, "pytorch": torch.__version__}


def _st_readme(network: PretrainedEncoderClassifier, labels: list[str]) -> str:
    """How to load the folder and read a class from its output."""
    pooling = {"mean": "mean", "cls": "first-token"}[network.cfg.pooling]
    return f"""# A depthfinder text classifier, as a sentence-transformers model

The bottom {network.cfg.depth} layers of a pretrained `{network.cfg.encoder.get("model_type")}` encoder, fine-tuned \
by depthfinder, with {pooling} pooling and a linear head. `encode` gives each text's class logits, one per class in \
the order of {LABELS_FILE}: the class is their argmax, and their softmax the probabilities the depthfinder model gives.

```python
import json
from sentence_transformers import SentenceTransformer

model = SentenceTransformer("THIS_FOLDER")
labels = json.load(open("THIS_FOLDER/{LABELS_FILE}"))
logits = model.encode(["some text"])  # (N, {len(labels)})
print([labels[k] for k in logits.argmax(axis=1)])
```

Classes, in output order: {json.dumps(labels, ensure_ascii=False)}
"""
