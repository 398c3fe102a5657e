"""Training beside other work: a training alone and beside one and two busy processes, as ratios.

Each measurement is one fresh process that trains one candidate of the built-in `reviews-negation` data
(`encoder.training.train_candidate`, bf16 where the CPU has it, as `depthfinder run` trains) and prints
its training seconds; busy processes are pure-Python loops, one core each. Three threading policies:

- `default`: torch's own choice (a thread per core it sees), OpenMP's default wait policy (spin);
- `threads`: the count `encoder.threads` chooses, OpenMP's default wait;
- `depthfinder`: that count and `encoder.threads.OPENMP_ENVIRONMENT` (a short spin), as the CLI runs it.

Two models: the default scratch recipe at depth 1 ("depth 1 for 4 epochs", as reported) and a
MiniLM-sized scratch encoder (width 384, MLP 1536, depth 2), big enough for `encoder.threads` to give it
more than one thread. Measurements are interleaved in rounds (every policy and load once per round), so a
passing disturbance lands on all of them; the table gives the median over rounds.

A fair share: with C cores, B busy processes and a training of T threads, the kernel gives the training
min(T, C*T/(T+B)) cores, so the fair slow-down is max(1, (T+B)/C). `vs fair` is the measured slow-down
over that (goal: at most 1.5). The last line is
`RESULT worst_vs_fair_<policy>=<...> for each policy, alone_ratio_small=<depthfinder/default>
alone_ratio_large=<...>` (ratios, no units).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = {"small": {}, "large": {"d_model": 384, "n_heads": 6, "d_ff": 1536}}
DEPTHS = {"small": 1, "large": 2}
POLICIES = ("default", "threads", "depthfinder")


def child(model: str, policy: str, epochs: int) -> None:
    """Train once and print {"seconds": training seconds, "threads": the count it trained on}."""
    if policy == "depthfinder":
        from depthfinder.encoder.threads import OPENMP_ENVIRONMENT

        assert all(os.environ.get(key) == value for key, value in OPENMP_ENVIRONMENT.items())
    import torch

    from depthfinder.encoder import training
    from depthfinder.encoder.config import ModelConfig, TrainConfig
    from depthfinder.encoder.tokenizer import train_tokenizer
    from depthfinder.expectations.table.config import DataConfig
    from depthfinder.tasks.data import prepare_table

    if policy == "default":  # torch's own count, whatever the model
        training.training_threads = lambda *args, **kwargs: torch.get_num_threads()
    seen: set[int] = set()

    class Threads(training.L.Callback):
        def on_train_batch_end(self, *args) -> None:
            seen.add(torch.get_num_threads())

    frame = prepare_table(DataConfig(dataset="reviews-negation")).table
    labels = sorted(frame["label"].unique())
    model_cfg = ModelConfig(**MODELS[model])
    tokenizer = train_tokenizer(frame.loc[frame["split"] == "train", "text"], model_cfg.vocab_size)
    recipe = TrainConfig(max_epochs=epochs, min_epochs=epochs)
    with tempfile.TemporaryDirectory() as folder:
        trained = training.train_candidate(training.TrainingData(frame, labels, tokenizer), DEPTHS[model], model_cfg,
                                           recipe, training.TrainingSetup(Path(folder), progress=False,
                                                                          callbacks=[Threads()]))
    print(json.dumps({"seconds": trained.train_seconds, "threads": max(seen)}))


def measure(model: str, policy: str, busy: int, epochs: int) -> dict:
    """One training in a fresh process beside `busy` busy loops."""
    from depthfinder.encoder.threads import OPENMP_ENVIRONMENT

    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    for key in OPENMP_ENVIRONMENT:
        environment.pop(key, None)
    if policy == "depthfinder":
        environment |= OPENMP_ENVIRONMENT
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    try:
        done = subprocess.run([sys.executable, __file__, "--child", model, policy, "--epochs", str(epochs)],
                              env=environment, capture_output=True, text=True, check=True)
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    return json.loads(done.stdout.strip().splitlines()[-1])


def fair(threads: int, busy: int, cores: int) -> float:
    return max(1.0, (threads + busy) / cores)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=2, metavar=("MODEL", "POLICY"), help=argparse.SUPPRESS)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--models", default="small,large")
    parser.add_argument("--busy", default="0,1,2", help="numbers of busy processes beside the training")
    args = parser.parse_args()
    if args.child:
        return child(*args.child, args.epochs)
    from depthfinder.encoder.threads import usable_cores

    cores, models, loads = usable_cores(), args.models.split(","), [int(b) for b in args.busy.split(",")]
    runs: dict[tuple, list[dict]] = {}
    for round_ in range(args.rounds):
        for model in models:
            for busy in loads:
                for policy in POLICIES:
                    runs.setdefault((model, policy, busy), []).append(measure(model, policy, busy, args.epochs))
        print(f"round {round_ + 1} of {args.rounds} done", file=sys.stderr, flush=True)
    seconds = {key: statistics.median(run["seconds"] for run in found) for key, found in runs.items()}
    print(f"{cores} usable cores, {args.epochs} epochs, median of {args.rounds} interleaved rounds\n")
    print("| model | policy | threads | busy | train s (min-max) | vs alone | fair | vs fair |")
    print("|---|---|---|---|---|---|---|---|")
    worst = dict.fromkeys(POLICIES, 0.0)
    for (model, policy, busy), found in runs.items():
        threads = found[0]["threads"]
        slower = seconds[model, policy, busy] / seconds[model, policy, 0]
        share = fair(threads, busy, cores)
        worst[policy] = max(worst[policy], slower / share)
        spread = f"{min(r['seconds'] for r in found):.1f}-{max(r['seconds'] for r in found):.1f}"
        print(f"| {model} | {policy} | {threads} | {busy} | {seconds[model, policy, busy]:.1f} ({spread}) | "
              f"{slower:.2f}x | {share:.2f}x | {slower / share:.2f} |")
    alone = {model: seconds[model, "depthfinder", 0] / seconds[model, "default", 0] for model in models}
    print("\nRESULT " + " ".join([f"worst_vs_fair_{policy}={value:.2f}" for policy, value in worst.items()]
                                 + [f"alone_ratio_{model}={value:.2f}" for model, value in alone.items()]))


if __name__ == "__main__":
    main()
