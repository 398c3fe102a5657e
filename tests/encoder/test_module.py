from __future__ import annotations

import lightning as L
import pytest
import torch
import torch.nn.functional as F

from encoder.datamodule import TextDataModule
from encoder.metrics import classification_metrics
from encoder.model import EncoderClassifier, EncoderConfig
from encoder.module import DepthClassifier, warmup_cosine
from encoder.tokenizer import train_tokenizer
from tests.encoder.keyword_task import LABELS, keyword_frame


def tiny_module(**kwargs: object) -> DepthClassifier:
    cfg = EncoderConfig(vocab_size=200, n_classes=3, depth=2, d_model=32, n_heads=2, d_ff=64, max_len=32)
    return DepthClassifier(EncoderClassifier(cfg), n_classes=3, **kwargs)


def test_weight_decay_applies_to_weight_matrices_only() -> None:
    module = tiny_module(weight_decay=0.05)
    decay, no_decay = module.parameter_groups()
    names = {id(p): name for name, p in module.network.named_parameters()}
    decayed = {names[id(p)] for p in decay["params"]}
    assert decay["weight_decay"] == 0.05 and no_decay["weight_decay"] == 0.0
    assert decayed == {name for name in names.values() if name.endswith("weight") and "ln" not in name
                       and "emb" not in name}
    assert "tok_emb.weight" not in decayed and "blocks.0.ln_1.weight" not in decayed
    assert "blocks.0.attn.qkv.weight" in decayed and "head.weight" in decayed
    assert len(decay["params"]) + len(no_decay["params"]) == len(list(module.network.parameters()))


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
    assert set(module.hparams) == {"n_classes", "learning_rate", "weight_decay", "warmup_fraction"}
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
