"""Training throughput of depthfinder's encoder against Hugging Face BERT and nn.TransformerEncoder.

    python -m bench.train_throughput [--quick] [--threads N]

One process, one machine. Every model trains on the same random batch (d_model 256,
4 heads, FFN 1024, sequence 128, batch 32, dropout 0.1 on attention and hidden states,
vocabulary 8000, two classes) with the same step: forward, cross-entropy, backward,
gradient-norm clip at 1, fused AdamW. Measurements are interleaved (round after round,
every model and depth in turn) and each figure is a median over rounds, so a neighbour
process that slows the machine for a while slows every model alike.

- depthfinder: `encoder.model.EncoderClassifier`, fp32 and bf16 autocast;
- Hugging Face: `BertForSequenceClassification` from a `BertConfig` of the same size and
  dropout, SDPA attention (no weights are downloaded; needs the `bench` extra);
- torch: `nn.TransformerEncoder` (pre-LN, GELU) with the same embeddings, pooling and head;
- Lightning: depthfinder's `DepthClassifier` through `lightning.Trainer` against a plain
  loop doing the same work (depth 1, fp32; the cheapest step shows overhead the most);
- MFU: FLOPs of one training step counted by torch's FlopCounterMode (math attention
  kernel), divided by the step time and the machine's fp32 matmul peak, measured here as
  the best of a few 2048x2048 matmuls with the same thread count.

The last line is `RESULT vs_hf=<HF fp32 step time / depthfinder fp32 step time at depth 6>
mixed_vs_fp32=<bf16 step time / fp32 step time at depth 6> lightning_overhead=<fraction>
mfu=<fp32 model FLOP utilisation at depth 6>`.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from depthfinder.encoder.model import EncoderClassifier, EncoderConfig
from depthfinder.encoder.module import DepthClassifier

D_MODEL, N_HEADS, D_FF, SEQ_LEN, BATCH, VOCAB, N_CLASSES, DROPOUT = 256, 4, 1024, 128, 32, 8000, 2, 0.1
Batch = tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # input_ids (B, T), attention_mask (B, T), labels (B,)


@dataclass(frozen=True)
class Plan:
    depths: tuple[int, ...]
    rounds: int  # interleaved rounds; every figure is a median over them
    steps: int  # timed steps per model and round
    lightning_steps: int  # timed steps per round, through Lightning and through the plain loop


FULL = Plan(depths=(1, 2, 4, 6), rounds=5, steps=2, lightning_steps=6)
QUICK = Plan(depths=(1, 6), rounds=2, steps=1, lightning_steps=3)


class HFClassifier(nn.Module):
    """BertForSequenceClassification behind the (input_ids, attention_mask) -> logits interface."""

    def __init__(self, depth: int) -> None:
        super().__init__()
        from transformers import BertConfig, BertForSequenceClassification

        config = BertConfig(
            vocab_size=VOCAB, hidden_size=D_MODEL, num_hidden_layers=depth, num_attention_heads=N_HEADS,
            intermediate_size=D_FF, max_position_embeddings=SEQ_LEN, hidden_dropout_prob=DROPOUT,
            attention_probs_dropout_prob=DROPOUT, num_labels=N_CLASSES, attn_implementation="sdpa",
        )
        self.bert = BertForSequenceClassification(config)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.bert(input_ids=input_ids, attention_mask=attention_mask.long()).logits


class TorchClassifier(nn.Module):
    """nn.TransformerEncoder (pre-LN, GELU) with depthfinder's embeddings, mean pooling and head."""

    def __init__(self, depth: int) -> None:
        super().__init__()
        self.tok_emb = nn.Embedding(VOCAB, D_MODEL)
        self.pos_emb = nn.Embedding(SEQ_LEN, D_MODEL)
        self.dropout = nn.Dropout(DROPOUT)
        layer = nn.TransformerEncoderLayer(
            D_MODEL, N_HEADS, D_FF, dropout=DROPOUT, activation="gelu", batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, depth, norm=nn.LayerNorm(D_MODEL), enable_nested_tensor=False)
        self.head = nn.Linear(D_MODEL, N_CLASSES)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.shape[1])
        x = self.dropout(self.tok_emb(input_ids) + self.pos_emb(positions))
        x = self.encoder(x, src_key_padding_mask=~attention_mask)
        weights = attention_mask.unsqueeze(-1).to(x.dtype)
        return self.head((x * weights).sum(1) / weights.sum(1))


def depthfinder_network(depth: int) -> EncoderClassifier:
    return EncoderClassifier(EncoderConfig(
        vocab_size=VOCAB, n_classes=N_CLASSES, depth=depth, d_model=D_MODEL, n_heads=N_HEADS, d_ff=D_FF,
        max_len=SEQ_LEN, dropout=DROPOUT,
    ))


@dataclass
class Trainee:
    """One model, its optimiser and whether it trains under bf16 autocast."""

    name: str
    depth: int
    network: nn.Module
    bf16: bool = False
    optimizer: torch.optim.Optimizer = field(init=False)

    def __post_init__(self) -> None:
        self.network.train()
        self.optimizer = torch.optim.AdamW(self.network.parameters(), lr=1e-4, weight_decay=0.01, fused=True)

    def step(self, batch: Batch) -> None:
        """Forward, loss, backward, clip, optimiser step."""
        input_ids, attention_mask, labels = batch
        self.optimizer.zero_grad(set_to_none=True)
        with autocast(self.bf16):
            logits = self.network(input_ids, attention_mask)
        F.cross_entropy(logits.float(), labels).backward()
        nn.utils.clip_grad_norm_(self.network.parameters(), 1.0)
        self.optimizer.step()

    def step_flops(self, batch: Batch) -> int:
        """FLOPs of forward and backward, attention through the math kernel so that it is counted."""
        input_ids, attention_mask, labels = batch
        counter = FlopCounterMode(display=False)
        with sdpa_kernel(SDPBackend.MATH), counter, autocast(self.bf16):
            logits = self.network(input_ids, attention_mask)
            F.cross_entropy(logits.float(), labels).backward()
        self.optimizer.zero_grad(set_to_none=True)
        return counter.get_total_flops()


def autocast(bf16: bool) -> contextlib.AbstractContextManager:
    return torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()


def random_batch(seed: int = 0) -> Batch:
    generator = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(1, VOCAB, (BATCH, SEQ_LEN), generator=generator)
    labels = torch.randint(0, N_CLASSES, (BATCH,), generator=generator)
    return input_ids, torch.ones(BATCH, SEQ_LEN, dtype=torch.bool), labels


def seconds(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def matmul_gflops(dtype: torch.dtype, size: int = 2048, repeats: int = 3) -> float:
    """Best GFLOP/s of a square matmul in `dtype`."""
    a, b = torch.randn(size, size).to(dtype), torch.randn(size, size).to(dtype)
    a @ b
    return max(2 * size**3 / seconds(lambda: a @ b) for _ in range(repeats)) / 1e9


class StepTimer(L.Callback):
    """Records the wall-clock time at the start of every training batch."""

    def __init__(self) -> None:
        self.starts: list[float] = []

    def on_train_batch_start(self, *args: object) -> None:
        self.starts.append(time.perf_counter())


def lightning_and_plain_step_times(batch: Batch, plan: Plan) -> tuple[list[float], list[float]]:
    """Per-step seconds of DepthClassifier through lightning.Trainer and through a plain loop, interleaved."""
    module = DepthClassifier(depthfinder_network(1), n_classes=N_CLASSES, learning_rate=1e-4)
    input_ids, attention_mask, labels = batch
    one_batch = {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}
    batches = [one_batch] * (plan.lightning_steps + 1)
    loader = torch.utils.data.DataLoader(batches, batch_size=None)
    lightning_times: list[float] = []
    plain_times: list[float] = []
    for _ in range(plan.rounds):
        timer = StepTimer()
        trainer = L.Trainer(
            max_steps=len(batches), accelerator="cpu", devices=1, precision="32-true", logger=False,
            enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
            gradient_clip_val=1.0, limit_val_batches=0, callbacks=[timer],
        )
        trainer.fit(module, train_dataloaders=loader)
        # From one batch's start to the next: the whole step, hooks and logging included.
        lightning_times += [b - a for a, b in zip(timer.starts[1:-1], timer.starts[2:], strict=True)]
        plain_times += plain_loop_step_times(module, loader)[1:]
    return lightning_times, plain_times


def plain_loop_step_times(module: nn.Module, loader: torch.utils.data.DataLoader) -> list[float]:
    """The same work as the Lightning run, written out: its optimiser, schedule and clip."""
    optimization = module.optimizer_and_schedule(len(loader))
    optimizer, scheduler = optimization["optimizer"], optimization["lr_scheduler"]["scheduler"]
    module.train()
    times = []
    started = time.perf_counter()
    for batch in loader:
        optimizer.zero_grad(set_to_none=True)
        logits = module.network(batch["input_ids"], batch["attention_mask"])
        F.cross_entropy(logits.float(), batch["labels"]).backward()
        nn.utils.clip_grad_norm_(module.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        now = time.perf_counter()
        times.append(now - started)
        started = now
    return times


def trainees(depths: tuple[int, ...]) -> Iterator[Trainee]:
    for depth in depths:
        torch.manual_seed(depth)
        ours = depthfinder_network(depth)
        yield Trainee("depthfinder", depth, ours)
        yield Trainee("depthfinder bf16", depth, ours, bf16=True)
        yield Trainee("Hugging Face BERT", depth, HFClassifier(depth))
        yield Trainee("nn.TransformerEncoder", depth, TorchClassifier(depth))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="depths 1 and 6, fewer rounds (under two minutes)")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads(), help="torch threads")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    for name in ("lightning.pytorch", "lightning.fabric"):  # GPU/TPU availability notes, tips
        logging.getLogger(name).setLevel(logging.ERROR)
    torch.set_num_threads(args.threads)
    plan = QUICK if args.quick else FULL
    batch = random_batch()
    models = list(trainees(plan.depths))
    flops = {(m.name, m.depth): m.step_flops(batch) for m in models if not m.bf16}
    times: dict[tuple[str, int], list[float]] = {(m.name, m.depth): [] for m in models}
    peaks: dict[torch.dtype, float] = {torch.float32: 0.0, torch.bfloat16: 0.0}
    for round_index in range(plan.rounds + 1):  # round 0 warms every model up and is not counted
        for dtype in peaks:
            peaks[dtype] = max(peaks[dtype], matmul_gflops(dtype))
        for m in models:
            step_times = [seconds(lambda m=m: m.step(batch)) for _ in range(plan.steps)]
            if round_index:
                times[m.name, m.depth] += step_times
    lightning_times, plain_times = lightning_and_plain_step_times(batch, plan)
    step = {key: statistics.median(values) for key, values in times.items()}
    print_report(plan, step, flops, peaks, args.threads, lightning_times, plain_times)
    return 0


def print_report(
    plan: Plan,
    step: dict[tuple[str, int], float],
    flops: dict[tuple[str, int], int],
    peaks: dict[torch.dtype, float],
    threads: int,
    lightning_times: list[float],
    plain_times: list[float],
) -> None:
    """The markdown table, the machine's peaks, Lightning's overhead and the RESULT line."""
    names = ("depthfinder", "depthfinder bf16", "Hugging Face BERT", "nn.TransformerEncoder")

    def mfu(name: str, depth: int) -> float:
        return flops[name, depth] / step[name, depth] / (peaks[torch.float32] * 1e9)

    print(f"threads {threads}; fp32 matmul peak {peaks[torch.float32]:.0f} GFLOP/s, "
          f"bf16 {peaks[torch.bfloat16]:.0f} GFLOP/s; medians of {plan.rounds} interleaved rounds\n")
    print("| depth | " + " | ".join(f"{n} (ex/s)" for n in names)
          + " | vs HF (fp32) | bf16 / fp32 step time | MFU depthfinder | MFU HF |")
    print("|---:|" + "---:|" * (len(names) + 4))
    for depth in plan.depths:
        cells = [f"{BATCH / step[n, depth]:.1f}" for n in names]
        cells += [
            f"{step['Hugging Face BERT', depth] / step['depthfinder', depth]:.2f}x",
            f"{step['depthfinder bf16', depth] / step['depthfinder', depth]:.2f}",
            f"{mfu('depthfinder', depth):.0%}",
            f"{mfu('Hugging Face BERT', depth):.0%}",
        ]
        print(f"| {depth} | " + " | ".join(cells) + " |")
    lightning, plain = statistics.median(lightning_times), statistics.median(plain_times)
    overhead = lightning / plain - 1
    print(f"\nLightning (depth 1, fp32): {lightning * 1e3:.1f} ms/step through the Trainer, "
          f"{plain * 1e3:.1f} ms/step in a plain loop: overhead {overhead:+.1%}")
    deepest = max(plan.depths)
    vs_hf = step["Hugging Face BERT", deepest] / step["depthfinder", deepest]
    mixed = step["depthfinder bf16", deepest] / step["depthfinder", deepest]
    print(f"RESULT vs_hf={vs_hf:.3f} mixed_vs_fp32={mixed:.3f} lightning_overhead={overhead:.4f} "
          f"mfu={mfu('depthfinder', deepest):.3f}")


if __name__ == "__main__":
    sys.exit(main())
