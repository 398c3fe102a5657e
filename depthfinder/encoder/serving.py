"""What a registered model runs on wherever it is served: its networks, its tokenizer's batching, its bundle's
reader, and its input and output (a `text` column in, and a `pair` column for a model of pairs; `label`,
`confidence`, `proba_<label>` out, or `tags` and `spans` for a model of token labels).

Nothing here imports depthfinder, so this file travels with every logged model (as `depthfinder_serving.py`,
beside the scratch network's `encoder/model.py` as `depthfinder_network.py`: MLflow's code_paths) and the model
loads where only its declared requirements are installed: torch, tokenizers, numpy, pandas, mlflow, and
transformers for the pretrained family.

A bundle is a folder:
```
bundle/
  weights.pt      the network's state_dict (loaded with weights_only=True: no pickled code)
  encoder.json    the network's config plus "family" (scratch or pretrained), "labels" (the class names in
                  class-id order), "format" and, for a model of pairs, "inputs" (["text", "pair"])
  tokenizer.json  the tokenizers library's own format
```
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from tokenizers import Tokenizer
from torch import nn

# Inside depthfinder this module is encoder.serving and uses depthfinder's network; the copy that travels with
# a model (depthfinder_serving) uses the copy beside it, even where depthfinder is installed too. Deciding by
# the module's own name keeps the two apart when a served model's folder is on sys.path (MLflow puts it there
# on loading, and processes started later, such as Dask workers, inherit it).
if __name__ == "depthfinder.encoder.serving":
    from depthfinder.encoder.model import EncoderClassifier, EncoderConfig
else:
    from depthfinder_network import EncoderClassifier, EncoderConfig

TEXT_COLUMN = "text"
PAIR_COLUMN = "pair"  # a pair's second text (expectations.table.shape, which this file cannot import)
PAIR_INPUTS = (TEXT_COLUMN, PAIR_COLUMN)
INPUTS_KEY = "inputs"  # encoder.json's list of input columns; absent: a single `text`
LABEL_COLUMN = "label"
CONFIDENCE_COLUMN = "confidence"
PROBA_PREFIX = "proba_"
WEIGHTS_FILE = "weights.pt"
CONFIG_FILE = "encoder.json"
TOKENIZER_FILE = "tokenizer.json"
TAGS_COLUMN = "tags"  # a token model's output: each word's tag, joined by spaces
SPANS_COLUMN = "spans"  # and its entities: text, type, start and end (character offsets in the text)
OUTSIDE = "O"
# A network's pooling that labels every token, not the text: its output is (B, T, n_classes) (encoder.config's, which
# this file cannot import).
TOKENS_POOLING = "tokens"
# The network's computation changed with the depth-scaled residual branches (format 2):
# weights of another format would load without error and compute something else.
BUNDLE_FORMAT = 2


@dataclass(frozen=True)
class PretrainedConfig:
    """What rebuilds a pretrained family's network without the original checkpoint."""

    encoder: dict  # the transformers config, cut to the candidate's depth
    n_classes: int
    max_len: int
    # mean or cls: over the base model's output, then a linear head; head: the type's own sequence-classification
    # head; tokens: its token-classification head (a label per token)
    pooling: str = "mean"
    pad_id: int = 0
    layers: int | None = None  # the candidate's depth (None in bundles saved before it was kept here)
    # The token after whose first occurrence a pair's second text has token type 1, where the type has token types
    # and its tokenizer gives the second text one (BERT: [SEP]); None: every token is of type 0.
    segment_after: int | None = None

    @property
    def depth(self) -> int:
        return self.layers or int(self.encoder["num_hidden_layers"])

    @property
    def vocab_size(self) -> int:
        return int(self.encoder["vocab_size"])

    def to_dict(self) -> dict:
        return asdict(self)


# The config's dropout of hidden states, by the names types give it; the head's dropout follows it.
HEAD_DROPOUT = ("hidden_dropout_prob", "dropout", "mlp_dropout", "hidden_dropout")


class PretrainedEncoderClassifier(nn.Module):
    """A pretrained encoder's embeddings and bottom layers, then either mean (or first-token) pooling, dropout and
    a linear head, or (pooling `head`) the type's own sequence-classification head, as `transformers` builds it:
    then `encoder` is a standard `AutoModelForSequenceClassification`, and the whole network is; for token labels
    (pooling `tokens`) the type's own token-classification head, an `AutoModelForTokenClassification`."""

    def __init__(self, cfg: PretrainedConfig, encoder: nn.Module | None = None) -> None:
        super().__init__()
        from transformers import MODEL_MAPPING, AutoConfig, AutoModel

        self.cfg = cfg
        if encoder is None:  # the architecture only: weights come from a bundle's state_dict
            config = AutoConfig.for_model(**cfg.encoder)
            if cfg.pooling in TASK_HEADS:
                encoder = task_model_class(cfg.pooling).from_config(config)
            else:
                encoder = AutoModel.from_config(config, **base_model_kwargs(MODEL_MAPPING[type(config)]))
        self.encoder = encoder
        if cfg.pooling not in TASK_HEADS:
            config = encoder.config
            rate = next((getattr(config, key) for key in HEAD_DROPOUT if
                         isinstance(getattr(config, key, None), float | int)), 0.1)
            self.dropout = nn.Dropout(float(rate))
            self.head = nn.Linear(int(config.hidden_size), cfg.n_classes)

    def body(self) -> nn.Module:
        """The base model: the embeddings and the layers."""
        return self.encoder.base_model if self.cfg.pooling in TASK_HEADS else self.encoder

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        inputs = {"input_ids": input_ids, "attention_mask": attention_mask,
                  **self._token_types(input_ids, attention_mask)}
        if self.cfg.pooling in TASK_HEADS:
            return self.encoder(**inputs).logits  # (B, n_classes), or (B, T, n_classes) for token labels
        hidden = self.encoder(**inputs).last_hidden_state  # (B, T, H)
        if self.cfg.pooling == "cls":
            pooled = hidden[:, 0]
        else:
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)  # (B, T, 1)
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)  # (B, H)
        return self.head(self.dropout(pooled))  # (B, n_classes)

    def _token_types(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> dict[str, torch.Tensor]:
        """A pair's token type ids, as its tokenizer gives them to `transformers`: 1 after the first `segment_after`
        token (the second text and its closing separator), 0 before and on padding; a single text is all 0s. Derived
        from the ids here, so every form of the network (ONNX included) takes the same two inputs."""
        if self.cfg.segment_after is None:
            return {}
        marks = (input_ids == self.cfg.segment_after).long()  # (B, T)
        after = (torch.cumsum(marks, dim=1) - marks) > 0
        return {"token_type_ids": (after & attention_mask.bool()).long()}

    def num_params(self, embeddings: bool = True) -> int:
        """Parameters, with or without the embedding layer (word, position and token-type embeddings, and what
        the type keeps with them)."""
        total = sum(p.numel() for p in self.parameters())
        body = self.body()
        module = getattr(body, "embeddings", None) or body.get_input_embeddings()
        return total if embeddings else total - sum(p.numel() for p in module.parameters())


# A pretrained network's pooling that is the type's own head, by the name of its `transformers` Auto class.
TASK_HEADS = {"head": "AutoModelForSequenceClassification", TOKENS_POOLING: "AutoModelForTokenClassification"}


def task_model_class(pooling: str) -> type:
    """The `transformers` Auto class of a pooling in TASK_HEADS."""
    import transformers

    return getattr(transformers, TASK_HEADS[pooling])


def labels_tokens(cfg: object) -> bool:
    """Whether the network `cfg` configures labels every token (its output is (B, T, n_classes))."""
    return getattr(cfg, "pooling", None) == TOKENS_POOLING


def base_model_kwargs(model_class: type) -> dict[str, bool]:
    """Arguments that leave out a pooler depthfinder does not use, where the model takes one."""
    import inspect

    return {"add_pooling_layer": False} if "add_pooling_layer" in inspect.signature(model_class).parameters else {}


Network = EncoderClassifier | PretrainedEncoderClassifier
NetworkConfig = EncoderConfig | PretrainedConfig
# Each family's network and its config, by the name a bundle gives its family.
NETWORKS: dict[str, tuple[type, type]] = {"scratch": (EncoderConfig, EncoderClassifier),
                                          "pretrained": (PretrainedConfig, PretrainedEncoderClassifier)}


def load_tokenizer(path: str | Path) -> Tokenizer:
    """A tokenizer saved by `tokenizers` (ours, or a pretrained checkpoint's tokenizer.json), with any padding
    and truncation of its own turned off: batches pad themselves, and `encode_texts` cuts at max_len."""
    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


# One example as the network reads it: a text, or a pair of texts read as one sequence.
ModelInput = str | tuple[str, str]


def encode_texts(tokenizer: Tokenizer, texts: Sequence[ModelInput], max_len: int) -> list[list[int]]:
    """Token ids per text (or pair: the tokenizer's pair template joins the two), [CLS] first, at most max_len: a
    longer text is cut before the closing special tokens are added, so it keeps its [SEP] (as Hugging Face and
    sentence-transformers cut it; a pair loses tokens from its longer text first)."""
    tokenizer.enable_truncation(max_len)
    return [enc.ids for enc in tokenizer.encode_batch(list(texts))]


def encode_words(tokenizer: Tokenizer, texts: Sequence[str], max_len: int) -> list[tuple[list[int], list[int]]]:
    """For a network of token labels: each text's token ids, its words read as whitespace-separated (a token table's
    tokens, joined by spaces), and the position of each word's first piece, -1 for a word the cut at max_len left
    out (or that the tokenizer reads as nothing): a word is labelled by its first piece, as BERT's tagger was."""
    tokenizer.enable_truncation(max_len)
    words = [text.split() for text in texts]
    encoded = []
    for encoding, sentence in zip(tokenizer.encode_batch(words, is_pretokenized=True), words, strict=True):
        first: dict[int, int] = {}
        for position, word in enumerate(encoding.word_ids):
            if word is not None and word not in first:
                first[word] = position
        encoded.append((encoding.ids, [first.get(word, -1) for word in range(len(sentence))]))
    return encoded


def pad_batch(ids: Sequence[Sequence[int]], pad_id: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Pad to the longest sequence in the batch: (input_ids (B, T) int64, attention_mask (B, T) bool)."""
    longest = max(len(seq) for seq in ids)
    lengths = torch.tensor([len(seq) for seq in ids])
    input_ids = torch.full((len(ids), longest), pad_id, dtype=torch.long)
    for i, seq in enumerate(ids):
        input_ids[i, : len(seq)] = torch.tensor(seq, dtype=torch.long)
    return input_ids, torch.arange(longest) < lengths[:, None]


class TextClassifier:
    """A trained network with its tokenizer and label names: raw text in, classes out."""

    def __init__(self, network: Network, tokenizer: Tokenizer, labels: Sequence[str],
                 inputs: Sequence[str] = (TEXT_COLUMN,)) -> None:
        """Hold the network on CPU in eval mode (this switches the given module in place); `inputs`: the columns
        one example is read from (`text`, or `text` and `pair`)."""
        if len(labels) != network.cfg.n_classes:
            raise ValueError(f"got {len(labels)} labels for a network with {network.cfg.n_classes} classes")
        self.network = network.to("cpu").eval()
        self.tokenizer = tokenizer
        self.labels = list(labels)
        self.inputs = tuple(inputs)

    def predict_proba(self, texts: Sequence[ModelInput], batch_size: int = 64) -> np.ndarray:
        """Class probabilities (N, K), rows in input order; K follows `labels`.

        Texts are batched in order of token length, so each batch pads to similar lengths.
        """
        if labels_tokens(self.network.cfg):
            raise ValueError("this model labels tokens, not whole texts: use predict_tags")
        return self._batched(texts, batch_size, lambda logits: torch.softmax(logits, dim=-1))

    def predict_logits(self, texts: Sequence[ModelInput], batch_size: int = 64) -> np.ndarray:
        """The network's logits (N, K), rows in input order: a teacher's soft labels before any temperature; for a
        network of token labels each word's (N, most words, K), NaN past a text's words (`word_logits`)."""
        if labels_tokens(self.network.cfg):
            words = self.word_logits(texts, batch_size)
            padded = np.full((len(words), max((len(w) for w in words), default=0), len(self.labels)), np.nan,
                             dtype=np.float32)
            for row, values in enumerate(words):
                padded[row, : len(values)] = values
            return padded
        return self._batched(texts, batch_size, lambda logits: logits)

    def _batched(self, texts: Sequence[ModelInput], batch_size: int, output) -> np.ndarray:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        ids = encode_texts(self.tokenizer, texts, self.network.cfg.max_len)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        values = np.empty((len(ids), len(self.labels)), dtype=np.float32)
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                rows = order[start : start + batch_size]
                input_ids, attention_mask = pad_batch([ids[i] for i in rows], self.network.cfg.pad_id)
                logits = self.network(input_ids, attention_mask)  # (B, K)
                values[rows] = output(logits.float()).numpy()
        return values

    def predict(self, texts: Sequence[ModelInput], batch_size: int = 64) -> list[str]:
        """The most probable label of each text, in input order; for a network of token labels, each word's tag,
        joined by spaces (as a token table's `label` holds them)."""
        if labels_tokens(self.network.cfg):
            return [" ".join(tags) for tags in self.predict_tags(texts, batch_size)]
        probs = self.predict_proba(texts, batch_size=batch_size)
        return [self.labels[k] for k in probs.argmax(axis=1)]

    def predict_tags(self, texts: Sequence[str], batch_size: int = 64) -> list[list[str]]:
        """For a network of token labels: the most probable tag of each word (whitespace-separated) of each text,
        read at the word's first piece, in input order; a word past max_len is tagged O."""
        return [self.tags_of(words) for words in self.word_logits(texts, batch_size)]

    def tags_of(self, words: np.ndarray) -> list[str]:
        """The most probable tag of each word of (words, K) logits; O for a word no piece was read of (NaN)."""
        return [self.labels[int(np.argmax(word))] if not np.isnan(word[0]) else OUTSIDE for word in words]

    def word_logits(self, texts: Sequence[str], batch_size: int = 64) -> list[np.ndarray]:
        """For a network of token labels: each text's logits per word (words, K), read at each word's first piece, in
        input order; NaN for a word past max_len (which no piece of the network reads)."""
        outputs = self.word_outputs(texts, lambda input_ids, attention_mask: [self.network(input_ids, attention_mask)],
                                    batch_size)
        return outputs[0] if outputs else []  # no texts: nothing read

    def word_outputs(self, texts: Sequence[str], forward: Callable[[torch.Tensor, torch.Tensor], list[torch.Tensor]],
                     batch_size: int = 64) -> list[list[np.ndarray]]:
        """Per output of `forward` (input_ids, attention_mask -> (B, T, K) tensors: the network's logits, or its
        layers' probes'), each text's values per word (words, K) read at each word's first piece, in input order;
        NaN for a word past max_len."""
        if not labels_tokens(self.network.cfg):
            raise ValueError("this model labels whole texts, not tokens: use predict")
        encoded = encode_words(self.tokenizer, texts, self.network.cfg.max_len)
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i][0]))
        outputs: list[list[np.ndarray]] = []
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                rows = order[start : start + batch_size]
                input_ids, attention_mask = pad_batch([encoded[i][0] for i in rows], self.network.cfg.pad_id)
                for index, logits in enumerate(forward(input_ids, attention_mask)):
                    if index == len(outputs):
                        outputs.append([np.empty((0, logits.shape[-1]), dtype=np.float32) for _ in encoded])
                    for row, per_token in zip(rows, logits.float().numpy(), strict=True):
                        first = np.asarray(encoded[row][1], dtype=np.int64)
                        outputs[index][row] = np.where((first >= 0)[:, None], per_token[np.maximum(first, 0)],
                                                       np.nan).astype(np.float32)
        return outputs


def read_bundle_config(directory: Path) -> tuple[NetworkConfig, list[str]]:
    """The network's config and the label names of a bundle, without loading its weights."""
    path = Path(directory) / CONFIG_FILE
    if not path.is_file():
        raise ValueError(f"{directory} is not a model bundle: {CONFIG_FILE} is missing")
    config = json.loads(path.read_text(encoding="utf-8"))
    labels = config.pop("labels", None)
    config.pop(INPUTS_KEY, None)  # bundle_inputs
    if (found := config.pop("format", 1)) != BUNDLE_FORMAT:
        raise ValueError(
            f"{path} is a format-{found} bundle; this depthfinder reads format {BUNDLE_FORMAT}: retrain the model"
        )
    family = config.pop("family", "scratch")
    if family not in NETWORKS:
        raise ValueError(f"{path} names family {family!r}; families: {', '.join(NETWORKS)}")
    try:
        cfg = NETWORKS[family][0](**config)
    except TypeError as exc:
        raise ValueError(f"{path} does not hold a {family} network's config: {exc}") from None
    if not isinstance(labels, list) or len(labels) != cfg.n_classes:
        raise ValueError(f"{path} must list {cfg.n_classes} labels, got {labels!r}")
    return cfg, labels


def family_name(cfg: NetworkConfig) -> str:
    """The family whose networks `cfg` configures."""
    return next(name for name, (config_type, _) in NETWORKS.items() if isinstance(cfg, config_type))


def load_bundle(directory: Path) -> TextClassifier:
    """Load a bundle written by `encoder.bundle.save_bundle` into a CPU classifier in eval mode.

    Args:
        directory: The bundle's folder.

    Returns:
        A TextClassifier whose probabilities match the saved network's.
    """
    directory = Path(directory)
    cfg, labels = read_bundle_config(directory)
    for name in (WEIGHTS_FILE, TOKENIZER_FILE):
        if not (directory / name).is_file():
            raise ValueError(f"{directory} is not a complete model bundle: {name} is missing")
    network = NETWORKS[family_name(cfg)][1](cfg)
    state = torch.load(directory / WEIGHTS_FILE, map_location="cpu", weights_only=True)
    network.load_state_dict(state)
    return TextClassifier(network, load_tokenizer(directory / TOKENIZER_FILE), labels, bundle_inputs(directory))


def bundle_inputs(directory: Path) -> tuple[str, ...]:
    """The columns a bundle's model reads one example from: `text`, or `text` and `pair`."""
    config = json.loads((Path(directory) / CONFIG_FILE).read_text(encoding="utf-8"))
    inputs = tuple(config.get(INPUTS_KEY, [TEXT_COLUMN]))
    if inputs not in ((TEXT_COLUMN,), PAIR_INPUTS):
        raise ValueError(f"{directory / CONFIG_FILE} names inputs {list(inputs)}; a model reads {TEXT_COLUMN!r} or "
                         f"{list(PAIR_INPUTS)}")
    return inputs


def output_columns(cfg: object) -> list[str]:
    """The columns a served model of network config `cfg` answers with, as a reader is told them: `label`,
    `confidence` and `proba_<label>` (one per class), or, for a model of token labels, `tags` and `spans`."""
    if labels_tokens(cfg):
        return [TAGS_COLUMN, SPANS_COLUMN]
    return [LABEL_COLUMN, CONFIDENCE_COLUMN, f"{PROBA_PREFIX}<label>"]


def proba_columns(labels: list[str]) -> list[str]:
    """Output column of each class's probability, in class-id order."""
    return [f"{PROBA_PREFIX}{label}" for label in labels]


def texts_from_input(model_input: object, columns: Sequence[str] = (TEXT_COLUMN,)) -> list[ModelInput]:
    """The texts of a DataFrame's `text` column, a Series or a list; rejects non-strings by row. A model of pairs
    (`columns` `text` and `pair`) reads (text, pair) from a DataFrame's two columns, or from a list of pairs."""
    if tuple(columns) == PAIR_INPUTS:
        return _pairs_from_input(model_input)
    if isinstance(model_input, pd.DataFrame):
        if TEXT_COLUMN not in model_input.columns:
            raise ValueError(f"input needs a '{TEXT_COLUMN}' column, got columns {list(model_input.columns)}")
        values = model_input[TEXT_COLUMN].tolist()
    elif isinstance(model_input, pd.Series | np.ndarray | list | tuple):
        values = list(model_input)
    elif isinstance(model_input, str):
        values = [model_input]
    else:
        raise TypeError(f"input must be a DataFrame with a '{TEXT_COLUMN}' column or a list of strings, "
                        f"got {type(model_input).__name__}")
    for row, value in enumerate(values):
        if not isinstance(value, str):
            raise ValueError(f"text in row {row} is {value!r}, expected a string")
    return [str(value) for value in values]  # plain str, also from numpy str_ values


def _pairs_from_input(model_input: object) -> list[ModelInput]:
    """(text, pair) per row of a DataFrame's `text` and `pair` columns, or of a list of two-text pairs."""
    if isinstance(model_input, pd.DataFrame):
        missing = [column for column in PAIR_INPUTS if column not in model_input.columns]
        if missing:
            raise ValueError(f"a model of pairs needs columns {list(PAIR_INPUTS)}; got {list(model_input.columns)}")
        rows = list(zip(model_input[TEXT_COLUMN].tolist(), model_input[PAIR_COLUMN].tolist(), strict=True))
    elif isinstance(model_input, list | tuple):
        rows = [tuple(row) if isinstance(row, list | tuple) else (row,) for row in model_input]
    else:
        raise TypeError(f"a model of pairs takes a DataFrame with columns {list(PAIR_INPUTS)} or a list of "
                        f"(text, pair), got {type(model_input).__name__}")
    for number, row in enumerate(rows):
        if len(row) != 2 or not all(isinstance(value, str) for value in row):
            raise ValueError(f"row {number} is {row!r}; a model of pairs takes two strings per row")
    return [(str(first), str(second)) for first, second in rows]


def inputs_frame(inputs: Sequence[ModelInput]) -> pd.DataFrame:
    """The DataFrame a served model takes for `inputs`: a `text` column, and a `pair` column for pairs."""
    if inputs and isinstance(inputs[0], tuple):
        return pd.DataFrame(list(inputs), columns=list(PAIR_INPUTS))
    return pd.DataFrame({TEXT_COLUMN: list(inputs)})


def predictions_frame(classifier: TextClassifier, texts: list[ModelInput]) -> pd.DataFrame:
    """Label, confidence and per-class probabilities of each text, rows in input order; for a model of token labels,
    each text's tags (one per whitespace-separated word) and its entities (`spans`)."""
    if labels_tokens(classifier.network.cfg):
        tags = classifier.predict_tags(texts)
        return pd.DataFrame({TAGS_COLUMN: [" ".join(words) for words in tags],
                             SPANS_COLUMN: [spans_of(text, words) for text, words in zip(texts, tags, strict=True)]})
    probs = classifier.predict_proba(texts).astype(np.float64)  # (N, K)
    frame = pd.DataFrame(probs, columns=proba_columns(classifier.labels))
    frame.insert(0, LABEL_COLUMN, pd.Series([classifier.labels[k] for k in probs.argmax(axis=1)], dtype=str))
    frame.insert(1, CONFIDENCE_COLUMN, probs.max(axis=1))
    return frame


def spans_of(text: str, tags: Sequence[str]) -> list[dict[str, object]]:
    """The entities of `text` whose whitespace-separated words carry `tags` (BIO or BIOES): each mention's text, type
    and character offsets (start, end), in order. Read leniently, as a tagger's output is: an `I-` or `E-` that does
    not continue a mention of its type starts one."""
    words = [(match.start(), match.end()) for match in re.finditer(r"\S+", text)]
    spans: list[dict[str, object]] = []
    current: dict[str, object] | None = None
    for (start, end), tag in zip(words, tags, strict=False):
        prefix, _, kind = tag.partition("-")
        if tag == OUTSIDE or not kind:
            current = None
            continue
        if prefix in ("B", "S") or current is None or current["type"] != kind:
            current = {"type": kind, "start": start, "end": end}
            spans.append(current)
        current["end"] = end
        if prefix in ("E", "S"):
            current = None
    return [{"text": text[span["start"]:span["end"]], **span} for span in spans]
