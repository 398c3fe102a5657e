"""One latency harness for every figure depthfinder prints: the cost table's, the deployable forms', the benchmark's.

Forms measured one after another on a shared machine are not compared: whatever else the machine does during one
form's turn lands on that form alone ("1487x as fast"). Here every form is measured in the same rounds: each round
times every form `repeats` times, in an order that rotates from round to round, so a burst of other work slows
every form of the rounds it falls in, not one. A form's figure is the median of its rounds' medians, and its
spread the lowest and highest of them; its p95 is over every timed call. A burst that lasts less than half the
rounds moves no median.

A figure is only as good as its agreement with what the forms are: variants of one network do the same FLOPs
(ONNX Runtime drops torch's per-operator overhead, which dominates a small network at batch 1 — measured up to
about 7x on bench/latency.py's model — and int8 weights save at most a few times the matmul time), so two of them
that differ by more than PLAUSIBLE_RATIO, or a torch figure more than SAME_FORM_RATIO away from the cost table's
for the same network, say the machine was busy, not that a form is fast. `measure` then measures again with
twice the rounds; a result still out of bounds comes back with `noisy` set, and callers print that instead of a
speed-up. Where every form's round medians already agree after a few rounds (SETTLED_SPREAD), the rest are not run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from pydantic import Field

from depthfinder.runtime.records import Record

# A form's forward: called with the call's number (so that a form can take its inputs in turn).
Forward = Callable[[int], object]
ROUNDS = 7
REPEATS = 5
WARMUP = 3
# Forms of one network (same FLOPs): a ratio of their latencies beyond this is the machine, not the form.
PLAUSIBLE_RATIO = 15.0
# The same torch network timed twice (the cost table's input, the test texts): a ratio beyond this is the machine.
SAME_FORM_RATIO = 4.0
# Networks of one cost table: the cheaper by FLOPs this many times slower, or the dearer this many times beyond
# its FLOPs ratio, is the machine.
COST_TABLE_RATIO = 8.0
NOISY = "noisy machine"
# Rounds enough once every form's round medians lie within this share of its median (no burst to outvote), and at
# least SETTLED_ROUNDS of them: a calm machine's figures stand after 3 rounds, a busy one's get all of ROUNDS.
SETTLED_SPREAD = 0.15
SETTLED_ROUNDS = 3


class Latency(Record):
    """One form's latency, measured in rounds interleaved with the other forms'."""

    p50: float = Field(description="Median of the rounds' medians, ms.")
    p95: float = Field(description="95th percentile of every timed call, ms.")
    low: float = Field(description="The lowest round median, ms.")
    high: float = Field(description="The highest round median, ms.")
    rounds: int = Field(description="Rounds, each timing every form in turn.")
    repeats: int = Field(description="Timed calls of this form per round.")

    def text(self) -> str:
        """`0.44 ms (0.41–0.50 over 7 rounds)`."""
        return f"{self.p50:.3g} ms ({self.low:.3g}\u2013{self.high:.3g} over {self.rounds} rounds)"


@dataclass(frozen=True)
class Measured:
    """Every form's latency, and why the figures cannot be trusted (None when they can)."""

    latencies: dict[str, Latency]
    noisy: str | None = None


def interleaved(forwards: dict[str, Forward], rounds: int = ROUNDS, repeats: int = REPEATS, warmup: int = WARMUP,
                clock: Callable[[], float] = time.perf_counter, settle: bool = False) -> dict[str, Latency]:
    """Each form's latency over `rounds` rounds, each timing every form `repeats` times (order rotated each round),
    after `warmup` untimed calls of each; with `settle`, fewer rounds once the figures are settled (SETTLED_SPREAD)."""
    if rounds < 1 or repeats < 1 or not forwards:
        raise ValueError(f"rounds and repeats must be >= 1 and some form given, got {rounds}, {repeats}, "
                         f"{list(forwards)}")
    names = list(forwards)
    for name in names:
        for call in range(warmup):
            forwards[name](call)
    times: dict[str, list[list[float]]] = {name: [] for name in names}
    for round_ in range(rounds):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:  # no form always goes first, or right after another
            calls = []
            for repeat in range(repeats):
                started = clock()
                forwards[name](warmup + round_ * repeats + repeat)
                calls.append((clock() - started) * 1000)
            times[name].append(calls)
        if settle and round_ + 1 >= SETTLED_ROUNDS and all(_settled(times[name]) for name in names):
            break
    return {name: _latency(times[name]) for name in names}


def _settled(rounds: list[list[float]]) -> bool:
    """Whether a form's round medians lie within SETTLED_SPREAD of their median."""
    medians = [float(np.median(calls)) for calls in rounds]
    middle = float(np.median(medians))
    return middle > 0 and (max(medians) - min(medians)) <= SETTLED_SPREAD * middle


def _latency(rounds: list[list[float]]) -> Latency:
    medians = [float(np.median(calls)) for calls in rounds]
    every = [value for calls in rounds for value in calls]
    return Latency(p50=float(np.median(medians)), p95=float(np.percentile(every, 95)), low=min(medians),
                   high=max(medians), rounds=len(rounds), repeats=len(rounds[0]))


def implausible(latencies: dict[str, Latency], reference: str, expected: float | None = None,
                bound: float = PLAUSIBLE_RATIO, same: float = SAME_FORM_RATIO) -> str | None:
    """Why the figures of forms of one network contradict what they are (a ratio beyond `bound` to the
    `reference` form, or the reference beyond `same` of `expected`, its figure elsewhere, e.g. the cost table's),
    or None."""
    base = latencies[reference].p50
    for name, latency in latencies.items():
        ratio = base / latency.p50 if latency.p50 > 0 else float("inf")
        if name != reference and not 1 / bound <= ratio <= bound:
            return (f"{name} {latency.p50:.3g} ms vs {reference} {base:.3g} ms at the same FLOPs "
                    f"({ratio:.1f}x, more than the {bound:g}x a form of the same network can explain)")
    if expected is not None and expected > 0 and not 1 / same <= base / expected <= same:
        return f"{reference} {base:.3g} ms here vs {expected:.3g} ms in the cost table for the same network"
    return None


def measure(forwards: dict[str, Forward], reference: str, expected: float | None = None, rounds: int = ROUNDS,
            repeats: int = REPEATS) -> Measured:
    """Interleaved latencies of `forwards`, in fewer rounds once settled; measured again with twice the rounds
    (every one of them) when they contradict the forms' FLOPs (or `expected`, the reference's figure elsewhere), and
    marked noisy when they still do."""
    latencies = interleaved(forwards, rounds, repeats, settle=True)
    if implausible(latencies, reference, expected) is None:
        return Measured(latencies)
    latencies = interleaved(forwards, 2 * rounds, repeats, warmup=0)
    why = implausible(latencies, reference, expected)
    return Measured(latencies, None if why is None else f"{NOISY}: {why}")


def cost_table_noise(points: list[tuple[str, float, float]], bound: float = COST_TABLE_RATIO) -> str | None:
    """Why a cost table's latencies contradict its FLOPs, or None: of two networks (name, FLOPs, p50 ms), the one
    with fewer FLOPs more than `bound` times slower, or the other slower by more than `bound` times the FLOPs
    ratio. Candidates are measured as each finishes training, so a busy moment lands on one of them."""
    for name, flops, ms in points:
        for other, more_flops, other_ms in points:
            if name == other or not 0 < flops <= more_flops or min(ms, other_ms) <= 0:
                continue
            if ms / other_ms > bound or other_ms / ms > bound * more_flops / flops:
                return (f"{NOISY}: the cost table's latencies contradict the FLOPs ({name} {ms:.3g} ms at "
                        f"{flops / 1e6:.3g} MFLOPs, {other} {other_ms:.3g} ms at {more_flops / 1e6:.3g} MFLOPs)")
    return None
