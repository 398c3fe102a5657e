"""Time from data to a justified depth: depthfinder's sweep against the conventional one.

(a) depthfinder with its defaults: `depthfinder run` end to end (Prefect, audit, length
    bucketing, early stopping, rule, registry).
(b) the conventional sweep: Hugging Face `BertForSequenceClassification` of the same size
    per depth (built from a BertConfig, no download), every batch padded to the maximum
    length, fp32, the full grid for a fixed number of epochs; the best validation macro-F1
    wins. Same split, same tokenizer, same learning rate and batch size.

Prints wall time, the chosen depth and its test macro-F1 for each, and ends with
`RESULT speedup=<b/a wall time> depthfinder_f1=<...> baseline_f1=<...>`.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from bench.common import run_depthfinder

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("DEPTHFINDER_DATA", ROOT / "data")) / "sms_spam.csv"


def run_baseline(data: Path, depths: list[int], epochs: int) -> dict:
    """The full grid of HF BERT encoders, padded to the maximum length, fp32, fixed epochs."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, get_linear_schedule_with_warmup

    from depthfinder.encoder.config import ModelConfig, TrainConfig
    from depthfinder.encoder.serving import encode_texts
    from depthfinder.encoder.tokenizer import train_tokenizer
    from depthfinder.evidence.metrics import classification_metrics
    from depthfinder.expectations.table.config import DataConfig
    from depthfinder.tasks.data import prepare_table

    started = time.perf_counter()
    table = prepare_table(DataConfig(path=data)).table
    model_cfg, train_cfg = ModelConfig(), TrainConfig()
    labels = sorted(table["label"].unique())
    tokenizer = train_tokenizer(table.loc[table["split"] == "train", "text"], model_cfg.vocab_size)
    splits = {}
    for split in ("train", "val", "test"):
        part = table[table["split"] == split]
        ids = encode_texts(tokenizer, part["text"].tolist(), model_cfg.max_len)
        splits[split] = (ids, torch.tensor([labels.index(label) for label in part["label"]]))
    longest = max(len(seq) for ids, _ in splits.values() for seq in ids)

    def padded(ids: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        batch = torch.zeros(len(ids), longest, dtype=torch.long)
        for i, seq in enumerate(ids):
            batch[i, : len(seq)] = torch.tensor(seq)
        return batch, (batch != 0).long()

    tensors = {split: (*padded(ids), y) for split, (ids, y) in splits.items()}
    best = {"val_f1": -1.0}
    for depth in depths:
        torch.manual_seed(train_cfg.seed)
        config = BertConfig(
            vocab_size=tokenizer.get_vocab_size(), hidden_size=model_cfg.d_model, num_hidden_layers=depth,
            num_attention_heads=model_cfg.n_heads, intermediate_size=model_cfg.d_ff,
            max_position_embeddings=model_cfg.max_len, hidden_dropout_prob=model_cfg.dropout,
            attention_probs_dropout_prob=model_cfg.dropout, num_labels=len(labels),
        )
        model = BertForSequenceClassification(config)
        optimizer = torch.optim.AdamW(
            model.parameters(), lr=train_cfg.learning_rate, weight_decay=train_cfg.weight_decay
        )
        input_ids, mask, y = tensors["train"]
        steps = epochs * ((len(y) + train_cfg.batch_size - 1) // train_cfg.batch_size)
        schedule = get_linear_schedule_with_warmup(optimizer, int(0.1 * steps), steps)
        for epoch in range(epochs):
            model.train()
            for batch in torch.randperm(len(y)).split(train_cfg.batch_size):
                loss = model(input_ids=input_ids[batch], attention_mask=mask[batch], labels=y[batch]).loss
                optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), train_cfg.grad_clip)
                optimizer.step()
                schedule.step()
            scores = {split: _score(model, tensors[split], labels, classification_metrics) for split in ("val", "test")}
            print(f"  baseline depth {depth} epoch {epoch + 1}: val macro-F1 {scores['val']:.3f}", flush=True)
            if scores["val"] > best["val_f1"]:
                best = {"val_f1": scores["val"], "depth": depth, "test_f1": scores["test"]}
    return {"seconds": time.perf_counter() - started, "depth": best["depth"], "test_f1": best["test_f1"]}


def _score(model, tensors, labels: list[str], metrics) -> float:
    import torch

    input_ids, mask, y = tensors
    model.eval()
    with torch.inference_mode():
        predicted = torch.cat([
            model(input_ids=ids, attention_mask=m).logits.argmax(-1)
            for ids, m in zip(input_ids.split(256), mask.split(256), strict=True)
        ])
    return metrics([labels[i] for i in y.tolist()], [labels[i] for i in predicted.tolist()])["macro_f1"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--depths", default="1,2,4,6")
    parser.add_argument("--baseline-epochs", type=int, default=10)
    args = parser.parse_args()
    if not args.data.is_file():
        raise SystemExit(f"no data at {args.data}: pass --data or set DEPTHFINDER_DATA (docs/benchmarks.md)")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    depths = [int(d) for d in args.depths.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        ours = run_depthfinder(["--data", str(args.data)], args.depths, Path(tmp))
    baseline = run_baseline(args.data, depths, args.baseline_epochs)
    print(f"\n{'sweep':<34} {'wall s':>8} {'chosen depth':>13} {'test macro-F1':>14}")
    print(f"{'depthfinder (defaults)':<34} {ours['seconds']:>8.1f} {ours['depth']:>13} {ours['test_f1']:>14.3f}")
    name = f"HF BERT full grid, {args.baseline_epochs} epochs"
    print(f"{name:<34} {baseline['seconds']:>8.1f} {baseline['depth']:>13} {baseline['test_f1']:>14.3f}")
    speedup = baseline["seconds"] / ours["seconds"]
    print(f"RESULT speedup={speedup:.2f} depthfinder_f1={ours['test_f1']:.4f} baseline_f1={baseline['test_f1']:.4f}")


if __name__ == "__main__":
    main()
