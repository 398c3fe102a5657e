"""The LightningModule: loss, metrics and optimiser around a network it is given.

The optimiser is depth-aware (Depth-muP for Adam; see `encoder.model`): the weights inside
the residual blocks learn at `learning_rate / sqrt(depth)`, everything else (embeddings,
final norm, head) at `learning_rate`. Together with the model's 1/sqrt(depth) branch
scale this keeps the size of one optimiser step's change to the network independent of
depth, so one peak learning rate serves every candidate depth.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.optim.lr_scheduler import LambdaLR
from torchmetrics import MetricCollection
from torchmetrics.classification import MulticlassAccuracy, MulticlassF1Score, MulticlassRecall

from depthfinder.encoder.distillation import UNLABELLED, distillation_loss

if TYPE_CHECKING:
    from collections.abc import Callable


def stage_metrics(n_classes: int, stage: str) -> MetricCollection:
    """Accuracy, balanced accuracy (macro recall) and macro-F1, logged as `{stage}/<name>`."""
    return MetricCollection(
        {
            "accuracy": MulticlassAccuracy(num_classes=n_classes, average="micro"),
            "balanced_accuracy": MulticlassRecall(num_classes=n_classes, average="macro"),
            "macro_f1": MulticlassF1Score(num_classes=n_classes, average="macro"),
        },
        prefix=f"{stage}/",
    )


RESTART_PEAK = 0.5  # peak of a restarted schedule, as a share of the first one's
PROBE_LEARNING_RATE = 1e-3  # the least peak rate of the probes of a screen (encoder.probes)


def warmup_cosine(total_steps: int, warmup_steps: int, restart_steps: int = 0) -> Callable[[int], float]:
    """Learning-rate multiplier per step: linear warm-up to 1, then cosine decay to 0 at `total_steps`;
    then, for `restart_steps` more steps (an extension), the same shape again at RESTART_PEAK."""
    restart_warmup = int(warmup_steps / max(1, total_steps) * restart_steps)

    def cycle(step: int, steps: int, warmup: int) -> float:
        if step < warmup:
            return (step + 1) / (warmup + 1)
        progress = (step - warmup) / max(1, steps - warmup)
        return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))

    def multiplier(step: int) -> float:
        if step < total_steps or not restart_steps:
            return cycle(step, total_steps, warmup_steps)
        return RESTART_PEAK * cycle(step - total_steps, restart_steps, restart_warmup)

    return multiplier


class DepthClassifier(L.LightningModule):
    """Trains a sequence classifier with (optionally class-weighted) cross-entropy.

    Args:
        network: maps (input_ids (B, T), attention_mask (B, T)) to logits (B, n_classes); or, labelling tokens, to
            (B, T, n_classes), trained on batches whose `labels` are (B, T) with UNLABELLED where a token is not
            scored (pieces after a word's first, special tokens, padding); its metrics are then over tokens.
        n_classes: number of classes.
        learning_rate: peak AdamW learning rate, reached after warm-up.
        weight_decay: AdamW decay on weight matrices (not on norms, biases, embeddings).
        warmup_fraction: share of all optimiser steps spent in linear warm-up.
        class_weights: per-class loss weights (n_classes,), or None for unweighted.
        depth_scaled_lr: scale the learning rate of the network's `blocks` by
            1/sqrt(len(blocks)); False gives every parameter `learning_rate`.
        total_steps: optimiser steps the learning-rate schedule spans; None = the Trainer's
            estimate. Set it when the Trainer stops earlier than the recipe's last epoch (a
            successive-halving budget), so the run continued later follows the same schedule.
        restart_steps: steps of a restarted schedule after `total_steps` (an extension of a
            candidate that was still improving); 0 = none, the rate stays at 0.
        distill_temperature, distill_alpha: a student's recipe (encoder.distillation): train batches that carry
            `teacher_logits` are learnt by `alpha * T^2 * KL(teacher || student) + (1 - alpha) * CE`; validation
            and test keep the plain cross-entropy, so every candidate's val/loss reads alike.

    Checkpoints also carry the CPU random generator (dropout masks), restored when training
    resumes, so a run stopped at an epoch and continued from its checkpoint takes the same
    steps as one trained straight through.
    """

    def __init__(
        self,
        network: nn.Module,
        *,
        n_classes: int,
        learning_rate: float = 1e-3,
        weight_decay: float = 0.01,
        warmup_fraction: float = 0.1,
        class_weights: torch.Tensor | None = None,
        depth_scaled_lr: bool = True,
        total_steps: int | None = None,
        restart_steps: int = 0,
        probes: nn.Module | None = None,
        distill_temperature: float = 1.0,
        distill_alpha: float = 0.0,
    ) -> None:
        super().__init__()
        # restart_steps is not a hyperparameter: an extension continues the same run, whose logged params stay.
        # A student's recipe is not a hyperparameter either: a plain candidate's logged params stay as they were, and
        # a student's run says its teacher and recipe in its own params (tasks.train).
        self.save_hyperparameters(ignore=["network", "class_weights", "restart_steps", "probes", "distill_temperature",
                                          "distill_alpha"])
        self.restart_steps = restart_steps
        self.distill_temperature, self.distill_alpha = distill_temperature, distill_alpha
        self.network = network
        self.probes = probes  # encoder.probes.LayerProbes: a screen of every depth, which the network never feels
        if class_weights is not None and class_weights.shape != (n_classes,):
            raise ValueError(f"class_weights must have shape ({n_classes},), got {tuple(class_weights.shape)}")
        self.register_buffer("class_weights", class_weights, persistent=False)
        # Attribute names, not a ModuleDict: "train" is taken by nn.Module.train.
        self.train_metrics = stage_metrics(n_classes, "train")
        self.val_metrics = stage_metrics(n_classes, "val")
        self.test_metrics = stage_metrics(n_classes, "test")
        self._resumed_rng_state: torch.Tensor | None = None

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.network(input_ids, attention_mask)

    def _shared_step(self, batch: dict[str, torch.Tensor], stage: str) -> torch.Tensor:
        labels, batch_size = batch["labels"], batch["labels"].shape[0]
        if self.probes is not None:
            self.probes.watch(batch["attention_mask"])
        logits = self(batch["input_ids"], batch["attention_mask"]).float()  # (B, n_classes)
        if logits.dim() == 3:  # a class per token, (B, T, n_classes): every scored token counts as one example
            logits, labels = logits.flatten(0, 1), labels.flatten()
            if "teacher_logits" in batch:
                batch = {**batch, "teacher_logits": batch["teacher_logits"].flatten(0, 1)}
        if stage == "train" and "teacher_logits" in batch:
            loss = distillation_loss(logits, batch["teacher_logits"], labels, self.distill_temperature,
                                     self.distill_alpha, weight=self.class_weights)
        else:
            loss = F.cross_entropy(logits, labels, weight=self.class_weights)
        if self.probes is not None:  # their inputs are detached: this trains the probes alone
            probe_loss = sum(F.cross_entropy(probe.flatten(0, 1) if probe.dim() == 3 else probe, labels,
                                             weight=self.class_weights) for probe in self.probes.logits())
            self.log(f"{stage}/probe_loss", probe_loss, on_step=False, on_epoch=True, batch_size=labels.shape[0])
            loss = loss + probe_loss
        metrics = getattr(self, f"{stage}_metrics")
        labelled = labels != UNLABELLED  # a student's transfer texts have no class to score
        if labelled.any():
            metrics.update(logits[labelled].argmax(dim=-1), labels[labelled])
        self.log(f"{stage}/loss", loss, on_step=False, on_epoch=True, prog_bar=True, batch_size=batch_size)
        for name, metric in metrics.items():  # epoch values, computed and reset by Lightning
            self.log(name, metric, on_step=False, on_epoch=True, prog_bar=name == "val/macro_f1", batch_size=batch_size)
        return loss

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        return self._shared_step(batch, "train")

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        return self._shared_step(batch, "val")

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        return self._shared_step(batch, "test")

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        checkpoint["cpu_rng_state"] = torch.get_rng_state()

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        self._resumed_rng_state = checkpoint.get("cpu_rng_state")

    def on_train_epoch_start(self) -> None:
        # Lightning sets the epoch of a loader's sampler, not of its batch sampler: without this
        # a resumed run would replay the batch order of epoch 0.
        batch_sampler = getattr(self.trainer.train_dataloader, "batch_sampler", None)
        if callable(getattr(batch_sampler, "set_epoch", None)):
            batch_sampler.set_epoch(self.current_epoch)
        # Restored here, not on load: the sanity check between the two may draw random numbers.
        if self._resumed_rng_state is not None:
            torch.set_rng_state(self._resumed_rng_state)
            self._resumed_rng_state = None

    def block_lr_scale(self) -> float:
        """Learning-rate multiplier of the residual blocks: 1/sqrt(depth), or 1 when not depth-scaled."""
        blocks = getattr(self.network, "blocks", None)
        if not self.hparams.depth_scaled_lr or not blocks:
            return 1.0
        return 1.0 / math.sqrt(len(blocks))

    def parameter_groups(self) -> list[dict[str, Any]]:
        """AdamW groups: weight matrices decay, norms, biases and embeddings do not; the
        residual blocks' parameters learn at `block_lr_scale()` times the peak rate."""
        embeddings = {id(m.weight) for m in self.network.modules() if isinstance(m, nn.Embedding)}
        blocks = getattr(self.network, "blocks", None)
        in_blocks = {id(p) for p in blocks.parameters()} if blocks is not None else set()
        lr = self.hparams.learning_rate
        groups = {
            (decays, in_block): {"params": [], "weight_decay": self.hparams.weight_decay if decays else 0.0,
                                 "lr": lr * self.block_lr_scale() if in_block else lr}
            for decays in (True, False) for in_block in (True, False)
        }
        for param in self.network.parameters():
            if param.requires_grad:
                decays = param.ndim >= 2 and id(param) not in embeddings
                groups[decays, id(param) in in_blocks]["params"].append(param)
        if self.probes is not None:  # linear heads from scratch, whatever the network's (fine-tuning) rate
            groups["probes"] = {"params": list(self.probes.parameters()), "weight_decay": 0.0,
                                "lr": max(lr, PROBE_LEARNING_RATE)}
        return [group for group in groups.values() if group["params"]]

    def configure_optimizers(self) -> dict[str, Any]:
        # fp16 loss scaling needs the gradients unscaled before clipping, which a fused
        # optimizer does only inside its step.
        fused = self.trainer.precision != "16-mixed"
        total_steps = self.hparams.total_steps or int(self.trainer.estimated_stepping_batches)
        return self.optimizer_and_schedule(total_steps, fused=fused)

    def configure_gradient_clipping(
        self, optimizer: torch.optim.Optimizer, gradient_clip_val: float | None = None,
        gradient_clip_algorithm: str | None = None,
    ) -> None:
        """Clip by norm here: Lightning's mixed-precision plugin refuses to clip for a fused
        optimizer, a guard for fp16 loss scaling that bf16 (no loss scale) does not need."""
        if self.probes is not None and gradient_clip_val:  # each clipped on its own: the network trains as without
            nn.utils.clip_grad_norm_(self.network.parameters(), gradient_clip_val)
            nn.utils.clip_grad_norm_(self.probes.parameters(), gradient_clip_val)
        elif not optimizer.defaults.get("fused") or gradient_clip_algorithm not in (None, "norm"):
            super().configure_gradient_clipping(optimizer, gradient_clip_val, gradient_clip_algorithm)
        elif gradient_clip_val:
            nn.utils.clip_grad_norm_(self.parameters(), gradient_clip_val)

    def optimizer_and_schedule(self, total_steps: int, fused: bool = True) -> dict[str, Any]:
        """AdamW over `parameter_groups()` with warm-up then cosine decay over `total_steps`, stepped per batch.

        `fused` (on CPU and CUDA) runs one kernel per step instead of a dozen per parameter:
        on CPU the per-tensor default took ~20 % of a small model's step.
        """
        device = next(self.network.parameters()).device
        fused = fused and device.type in ("cpu", "cuda")
        optimizer = torch.optim.AdamW(self.parameter_groups(), lr=self.hparams.learning_rate, fused=fused)
        warmup_steps = int(self.hparams.warmup_fraction * total_steps)
        scheduler = LambdaLR(optimizer, warmup_cosine(total_steps, warmup_steps, self.restart_steps))
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}
