from __future__ import annotations

import math
import statistics

import lightning as L
import pytest
import torch
import torch.nn.functional as F

from depthfinder.encoder.datamodule import TextDataModule
from depthfinder.encoder.families import Scratch
from depthfinder.encoder.model import EncoderClassifier, EncoderConfig
from depthfinder.encoder.module import RESTART_PEAK, DepthClassifier, warmup_cosine
from depthfinder.encoder.serving import encode_texts, pad_batch
from depthfinder.encoder.tokenizer import train_tokenizer
from depthfinder.evidence.metrics import classification_metrics
from tests.encoder.keyword_task import LABELS, keyword_frame


def tiny_module(depth: int = 2, **kwargs: object) -> DepthClassifier:
    cfg = EncoderConfig(vocab_size=200, n_classes=3, depth=depth, d_model=32, n_heads=2, d_ff=64, max_len=32)
    return DepthClassifier(EncoderClassifier(cfg), n_classes=3, **kwargs)


def groups_by_name(module: DepthClassifier) -> dict[str, tuple[float, float]]:
    """(weight decay, learning rate) of every parameter, by name."""
    names = {id(p): name for name, p in module.network.named_parameters()}
    return {names[id(p)]: (group["weight_decay"], group["lr"]) for group in module.parameter_groups()
            for p in group["params"]}


def test_weight_decay_applies_to_weight_matrices_only() -> None:
    module = tiny_module(weight_decay=0.05)
    decay = {name for name, (weight_decay, _) in groups_by_name(module).items() if weight_decay == 0.05}
    names = [name for name, _ in module.network.named_parameters()]
    assert {weight_decay for weight_decay, _ in groups_by_name(module).values()} == {0.05, 0.0}
    assert decay == {name for name in names if name.endswith("weight") and "ln" not in name and "emb" not in name}
    assert "tok_emb.weight" not in decay and "blocks.0.ln_1.weight" not in decay
    assert "blocks.0.attn.qkv.weight" in decay and "head.weight" in decay
    assert sorted(groups_by_name(module)) == sorted(names)


@pytest.mark.parametrize(("depth", "scaled"), [(1, True), (4, True), (4, False)])
def test_block_parameters_learn_at_the_peak_rate_over_sqrt_depth(depth: int, scaled: bool) -> None:
    module = tiny_module(depth=depth, learning_rate=0.01, depth_scaled_lr=scaled)
    block_lr = 0.01 / math.sqrt(depth) if scaled else 0.01
    for name, (_, lr) in groups_by_name(module).items():
        assert lr == pytest.approx(block_lr if name.startswith("blocks.") else 0.01), name


def test_learning_rate_warms_up_linearly_then_decays_to_zero() -> None:
    multiplier = warmup_cosine(total_steps=100, warmup_steps=10)
    warmup = [multiplier(step) for step in range(10)]
    assert warmup == sorted(warmup) and warmup[0] < 0.2
    assert multiplier(10) == pytest.approx(1.0)
    decay = [multiplier(step) for step in range(10, 101)]
    assert decay == sorted(decay, reverse=True)
    assert multiplier(55) == pytest.approx(0.5)
    assert multiplier(100) == pytest.approx(0.0)


def test_class_weights_weight_the_loss_and_are_not_hyperparameters() -> None:
    weights = torch.tensor([0.5, 1.0, 1.5])
    module = tiny_module(class_weights=weights).eval()
    batch = {"input_ids": torch.randint(1, 200, (6, 9)), "attention_mask": torch.ones(6, 9, dtype=torch.bool),
             "labels": torch.tensor([0, 0, 1, 2, 2, 2])}
    with torch.no_grad():
        logits = module(batch["input_ids"], batch["attention_mask"])
        expected = F.cross_entropy(logits, batch["labels"], weight=weights)
        unweighted = F.cross_entropy(logits, batch["labels"])
    assert expected.item() != pytest.approx(unweighted.item())
    module.log = module.log_dict = lambda *args, **kwargs: None
    assert module._shared_step(batch, "test").item() == pytest.approx(expected.item())
    assert set(module.hparams) == {
        "n_classes", "learning_rate", "weight_decay", "warmup_fraction", "depth_scaled_lr", "total_steps"
    }
    assert not any(key.startswith("class_weights") for key in module.state_dict())
    with pytest.raises(ValueError, match="shape"):
        tiny_module(class_weights=torch.ones(4))


@pytest.mark.filterwarnings("ignore:.*LeafSpec:FutureWarning")
def test_one_epoch_logs_stage_keys_that_match_the_shared_metrics(tmp_path) -> None:
    frame = keyword_frame(60)
    data = TextDataModule(frame, train_tokenizer(frame["text"], 200), LABELS, max_len=32, batch_size=8, seed=0)
    module = tiny_module()
    trainer = L.Trainer(max_epochs=1, accelerator="cpu", logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, default_root_dir=tmp_path)
    trainer.fit(module, datamodule=data)
    stages = {"train", "val"}
    keys = {f"{stage}/{name}" for stage in stages for name in ("loss", "accuracy", "balanced_accuracy", "macro_f1")}
    assert keys <= set(trainer.callback_metrics)
    assert trainer.global_step == len(data.train_dataloader())
    truth, predicted = [], []
    with torch.inference_mode():
        for batch in data.val_dataloader():
            truth += batch["labels"].tolist()
            predicted += module.network.eval()(batch["input_ids"], batch["attention_mask"]).argmax(-1).tolist()
    expected = classification_metrics(truth, predicted)
    assert {name: trainer.callback_metrics[f"val/{name}"].item() for name in expected} == pytest.approx(expected)


def keyword_losses(depth: int, learning_rate: float, depth_scaled_lr: bool, steps: int = 50) -> list[float]:
    """Training losses of a d_model-16 encoder on the keyword task: batches of 16, fixed seeds, the module's
    own optimiser and schedule (no dropout, so only the recipe differs between calls)."""
    frame = keyword_frame(120)
    train = frame[frame["split"] == "train"]
    tokenizer = train_tokenizer(train["text"], 200)
    input_ids, mask = pad_batch(encode_texts(tokenizer, train["text"].tolist(), 32))
    targets = torch.tensor([LABELS.index(label) for label in train["label"]])
    torch.manual_seed(0)
    cfg = EncoderConfig(vocab_size=tokenizer.get_vocab_size(), n_classes=3, depth=depth, d_model=16, n_heads=2,
                        d_ff=32, max_len=32, dropout=0.0)
    module = DepthClassifier(EncoderClassifier(cfg), n_classes=3, learning_rate=learning_rate,
                             depth_scaled_lr=depth_scaled_lr)
    schedule = module.optimizer_and_schedule(steps)
    optimizer, scheduler = schedule["optimizer"], schedule["lr_scheduler"]["scheduler"]
    order = torch.Generator().manual_seed(0)
    losses = []
    for _ in range(steps):
        batch = torch.randperm(len(targets), generator=order)[:16]
        optimizer.zero_grad()
        loss = F.cross_entropy(module(input_ids[batch], mask[batch]), targets[batch])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(module.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    return losses


def test_the_deepest_default_depth_trains_stably_only_with_the_depth_scaled_learning_rate() -> None:
    """At a peak rate that trains one block well, six blocks train as well with the block
    rate divided by sqrt(6), and clearly worse without it."""
    deepest = max(Scratch().default_depths())
    one_block = keyword_losses(1, 0.03, depth_scaled_lr=True)
    scaled = keyword_losses(deepest, 0.03, depth_scaled_lr=True)
    unscaled = keyword_losses(deepest, 0.03, depth_scaled_lr=False)
    mean = statistics.fmean
    assert all(math.isfinite(loss) for loss in scaled)
    assert mean(scaled[-10:]) < 0.1 * scaled[0]  # the loss falls
    assert mean(scaled) < 1.25 * mean(one_block)  # as fast as one block
    assert mean(scaled) < 0.75 * mean(unscaled)  # the unscaled rate does worse over the run
    assert mean(scaled[-10:]) < mean(unscaled[-10:])  # and at its end


def test_an_extension_restarts_the_schedule_at_half_the_peak_and_decays_it_again() -> None:
    plain, extended = warmup_cosine(100, 10), warmup_cosine(100, 10, restart_steps=50)
    assert [plain(s) for s in range(100)] == [extended(s) for s in range(100)]  # the first cycle is unchanged
    assert plain(100) == plain(150) == 0.0  # without a restart the rate stays at 0 after the schedule
    assert extended(100) < extended(105) == RESTART_PEAK  # after a warm-up of the same share (5 of 50 steps)
    assert extended(105) > extended(125) > extended(149) > 0.0
