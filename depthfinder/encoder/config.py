"""Settings of the encoder's shape and of its training recipe."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


def yaml_switch(value: object) -> object:
    """`on`/`off` for a Literal switch written bare in YAML, which YAML 1.1 reads as a boolean."""
    return {True: "on", False: "off"}[value] if isinstance(value, bool) else value


# The kind of a family of candidates: one per class of encoder.families (FAMILIES), which a test holds to this.
FamilyKind = Literal["scratch", "pretrained"]
# The name of one family of a run: `scratch`, or a pretrained checkpoint's own (its folder's or hub id's last part,
# the folder above a generic one such as model/, made unique in the run: encoder.families.family_names). Records
# name candidates by it.
FamilyName = str
FAMILY_DESCRIPTION = "scratch, or a pretrained checkpoint's name in the run (its folder's or hub id's last part; " \
    "for a folder named generically, such as model/, the folder above)."
SCRATCH_DEPTHS = [1, 2, 4, 6]  # the scratch family's default depths
# What numpy, torch and Lightning accept as a seed: an unsigned 32-bit integer.
SEED_MAX = 2**32 - 1


# The pooling of a network of token labels (--task tokens): a head on every token. encoder.serving, which travels with
# every model and imports nothing of depthfinder, declares the same.
TOKENS_POOLING = "tokens"


class ModelConfig(BaseModel):
    """The encoder: depthfinder's own (its width; depth is swept), and a pretrained checkpoint to truncate."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    pretrained: list[Annotated[str, Field(min_length=1)]] | None = Field(
        None, min_length=1,
        description="Pretrained encoders whose bottom layers are candidates, each a family of its own named after its "
        "folder or hub id (repeat the flag for several; one alone may be written as a string in YAML): a Hugging "
        "Face folder (config.json, weights as transformers finds them: safetensors, pytorch_model.bin or shards with "
        "an index; a tokenizer.json, vocab.txt or SentencePiece model) or a hub id; "
        "BERT, RoBERTa, XLM-R, DistilBERT, DeBERTa-v2/v3, ELECTRA, ModernBERT, or another type whose layers are one "
        "list (docs/training.md).",
        json_schema_extra={"flag": "--pretrained"},
    )

    d_model: int = Field(128, strict=True, ge=8, description="Width of the residual stream (scratch).")
    n_heads: int = Field(
        4, strict=True, ge=1, description="Attention heads per block; must divide d_model (scratch)."
    )
    d_ff: int = Field(512, strict=True, ge=8, description="Hidden width of each block's MLP (scratch).")
    dropout: float = Field(0.1, ge=0, lt=1, description="Dropout on attention, MLP and embeddings (scratch).")
    max_len: int = Field(128, strict=True, ge=4, description="Tokens kept per text (longer texts are truncated).")
    vocab_size: int = Field(
        8000, strict=True, ge=100, description="WordPiece vocabulary size trained on the train split (scratch)."
    )
    pooling: Literal["mean", "cls", "tokens"] = Field(
        "mean", description="How a scratch candidate pools: mean over real tokens, or the first ([CLS]) token; "
        "tokens (the one pooling of --task tokens, and its default): none, a label per token."
    )
    pretrained_pooling: Literal["mean", "cls", "head", "tokens"] = Field(
        "mean",
        description="How a pretrained candidate classifies: mean over real tokens or the first token, then a linear "
        "head (exported as a sentence-transformers folder); or head, the type's own sequence-classification head "
        "([CLS] and its pooler for BERT), which makes the model a standard AutoModelForSequenceClassification, "
        "registered also as a Hugging Face folder; tokens (the one pooling of --task tokens, and its default): the "
        "type's own token-classification head, a standard AutoModelForTokenClassification.",
        json_schema_extra={"flag": "--pretrained-pooling"},
    )

    @field_validator("pretrained", mode="before")
    @classmethod
    def _one_or_several(cls, value: object) -> object:
        """A single checkpoint, as configs before several were possible write it: a list of one."""
        return [value] if isinstance(value, str) else value

    @field_validator("pretrained")
    @classmethod
    def _each_once(cls, checkpoints: list[str] | None) -> list[str] | None:
        if checkpoints is not None and (twice := [c for i, c in enumerate(checkpoints) if c in checkpoints[:i]]):
            raise ValueError(f"checkpoint {twice[0]} is given twice")
        return checkpoints

    @model_validator(mode="after")
    def _heads_divide_width(self) -> ModelConfig:
        if self.d_model % self.n_heads:
            raise ValueError(f"n_heads {self.n_heads} must divide d_model {self.d_model}")
        return self


class TrainConfig(BaseModel):
    """The training recipe shared by every depth, from scratch, and its variant for fine-tuning pretrained layers."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    max_epochs: int = Field(
        20, strict=True, ge=1,
        description="Upper bound on epochs of every candidate; early stopping usually ends sooner. A pretrained "
        "candidate trains at most finetune_max_epochs within it (the lower of the two).",
        json_schema_extra={"flag": "--max-epochs"},
    )
    min_epochs: int = Field(
        10, strict=True, ge=1,
        description="Epochs before early stopping may end a run (capped at max_epochs), so that a depth still on "
        "its initial loss plateau is not stopped there (scratch; pretrained: finetune_min_epochs).",
    )
    patience: int = Field(
        5, strict=True, ge=1,
        description="Epochs without validation improvement before stopping (scratch; pretrained: finetune_patience).",
    )
    batch_size: int = Field(32, strict=True, ge=1, description="Examples per training step.")
    learning_rate: float = Field(
        3e-4, gt=0,
        description="Peak AdamW learning rate (after warm-up) of embeddings and head; the residual blocks use it "
        "divided by sqrt(depth) (Depth-muP) (scratch; pretrained: finetune_learning_rate).",
    )
    weight_decay: float = Field(
        0.01, ge=0, description="AdamW weight decay (not applied to norms, biases, embeddings)."
    )
    warmup_fraction: float = Field(0.1, ge=0, lt=1, description="Share of steps spent in linear warm-up.")
    grad_clip: float = Field(1.0, gt=0, description="Gradient norm clip.")
    class_weights: Literal["auto", "on", "off"] = Field(
        "auto", description="Weight the loss by inverse class frequency; auto = when the audit reports imbalance."
    )
    accelerator: Literal["auto", "cpu", "gpu"] = Field("auto", description="Lightning accelerator.")
    precision: Literal["auto", "32-true", "bf16-mixed", "16-mixed"] = Field(
        "auto",
        description="Lightning precision; auto = bf16-mixed where the device computes in bf16 natively "
        "(CUDA with bf16, or a CPU with AVX512-BF16 or AMX), else 32-true.",
    )
    seed: int = Field(1, strict=True, ge=0, le=SEED_MAX, description="Seed of initialisation and batching.")
    finetune_learning_rate: float = Field(
        5e-5, gt=0,
        description="Peak learning rate when fine-tuning pretrained layers (the same for every layer: they were not "
        "trained with Depth-muP); warm-up, decay, clip and weight decay as above.",
    )
    finetune_max_epochs: int = Field(
        5, strict=True, ge=1,
        description="Upper bound on epochs of a pretrained candidate, within max_epochs (the lower of the two bounds "
        "it).",
    )
    finetune_min_epochs: int = Field(
        2, strict=True, ge=1, description="Epochs before early stopping may end a pretrained candidate."
    )
    finetune_patience: int = Field(
        2, strict=True, ge=1, description="Epochs without improvement before a pretrained candidate stops."
    )

    _class_weights_switch = field_validator("class_weights", mode="before")(yaml_switch)

    def uses_class_weights(self, audit_warnings: Sequence[str]) -> bool:
        """Whether the loss is weighted by inverse class frequency: asked for (`on`), or `auto` and the audit warned
        of class imbalance (the names of the checks that warned: expectations.audit.report.AuditReport.warnings)."""
        return self.class_weights == "on" or (self.class_weights == "auto" and "class_imbalance" in audit_warnings)
