"""The one latency harness: forms measured in interleaved rounds, so a burst of other work or a slow neighbour lands
on no form alone; figures that contradict the forms' equal FLOPs are measured again and then called noisy, never a
speed-up. Timed by a simulated clock: each call advances it by what the form costs, more while the machine is busy."""

from __future__ import annotations

import pytest

from depthfinder.encoder.latency import Latency, implausible, interleaved, measure
from depthfinder.encoder.verdict import Variant, apply_gate


class Machine:
    """A simulated clock and a machine that is busy (every call `slowdown` times slower) between two clock times."""

    def __init__(self, busy: tuple[float, float] = (0.0, 0.0), slowdown: float = 1.0) -> None:
        self.now, self.busy, self.slowdown, self.calls = 0.0, busy, slowdown, []

    def clock(self) -> float:
        return self.now

    def form(self, name: str, seconds: float):
        def call(_: int) -> None:
            self.calls.append(name)
            busy = self.busy[0] <= self.now < self.busy[1]
            self.now += seconds * (self.slowdown if busy else 1.0)
        return call


def one_after_another(machine: Machine, forms: dict, repeats: int) -> dict[str, float]:
    """What the harness replaced: each form timed in its own turn; its median, ms."""
    medians = {}
    for name, forward in forms.items():
        times = []
        for call in range(repeats):
            started = machine.clock()
            forward(call)
            times.append((machine.clock() - started) * 1000)
        medians[name] = sorted(times)[len(times) // 2]
    return medians


def test_each_round_times_every_form_once_in_a_rotating_order() -> None:
    machine = Machine()
    forms = {name: machine.form(name, 0.001) for name in ("torch", "onnx", "onnx-int8")}

    interleaved(forms, rounds=3, repeats=2, warmup=0, clock=machine.clock)

    rounds = [machine.calls[i:i + 6] for i in range(0, 18, 6)]
    assert [sorted(set(calls)) for calls in rounds] == [["onnx", "onnx-int8", "torch"]] * 3
    assert [calls[0] for calls in rounds] == ["torch", "onnx", "onnx-int8"]  # none always first
    assert all(calls[0] == calls[1] for calls in rounds)  # a form's repeats of a round run together


def test_a_slow_neighbour_does_not_slow_another_forms_figure() -> None:
    alone, beside = Machine(), Machine()
    quick = interleaved({"quick": alone.form("quick", 0.001)}, rounds=5, repeats=3, clock=alone.clock)
    both = interleaved({"quick": beside.form("quick", 0.001), "sleeper": beside.form("sleeper", 0.050)},
                       rounds=5, repeats=3, clock=beside.clock)

    assert both["quick"].p50 == pytest.approx(quick["quick"].p50) == pytest.approx(1.0)
    assert both["sleeper"].p50 == pytest.approx(50.0)


def test_a_burst_of_other_work_lands_on_no_form_alone() -> None:
    """The machine is ten times slower for the first 0.2 s: measured one after another, torch (first) takes it all
    and looks 10x slower than ONNX; in rounds, the figures keep the true 2x."""
    forms = lambda machine: {"torch": machine.form("torch", 0.002), "onnx": machine.form("onnx", 0.001)}  # noqa: E731
    before = Machine(busy=(0.0, 0.2), slowdown=10.0)
    sequential = one_after_another(before, forms(before), repeats=15)
    machine = Machine(busy=(0.0, 0.2), slowdown=10.0)

    latencies = interleaved(forms(machine), rounds=9, repeats=3, warmup=0, clock=machine.clock)

    assert sequential["torch"] / sequential["onnx"] == pytest.approx(20.0)
    assert latencies["torch"].p50 / latencies["onnx"].p50 == pytest.approx(2.0)
    assert latencies["torch"].high > latencies["torch"].p50  # the burst shows in the spread, not the figure


def test_a_calm_machine_stops_once_the_figures_are_settled_and_a_burst_gets_every_round() -> None:
    forms = lambda machine: {"torch": machine.form("torch", 0.002), "onnx": machine.form("onnx", 0.001)}  # noqa: E731
    calm, busy = Machine(), Machine(busy=(0.010, 0.030), slowdown=10.0)  # busy in the second round

    settled = interleaved(forms(calm), rounds=7, repeats=3, warmup=0, clock=calm.clock, settle=True)
    unsettled = interleaved(forms(busy), rounds=7, repeats=3, warmup=0, clock=busy.clock, settle=True)
    every = interleaved(forms(Machine()), rounds=7, repeats=3, warmup=0, clock=Machine().clock)

    assert settled["torch"].rounds == 3 and settled["torch"].p50 == pytest.approx(2.0)
    assert unsettled["torch"].rounds == 7 and unsettled["torch"].p50 == pytest.approx(2.0)  # the burst outvoted
    assert every["torch"].rounds == 7  # without settle: every round


def test_figures_that_contradict_equal_flops_are_measured_again_then_called_noisy(monkeypatch) -> None:
    figure = lambda p50: Latency(p50=p50, p95=p50, low=p50, high=p50, rounds=7, repeats=5)  # noqa: E731
    assert implausible({"torch": figure(1.0), "onnx": figure(0.5)}, "torch") is None
    assert "onnx 0.05 ms vs torch 1 ms" in implausible({"torch": figure(1.0), "onnx": figure(0.05)}, "torch")
    assert "in the cost table" in implausible({"torch": figure(95.0)}, "torch", expected=0.33)

    measured = []

    def fake(forwards, rounds, repeats, warmup=3, settle=False):
        measured.append(rounds)
        return {"torch": figure(95.0 if len(measured) == 1 else 0.4), "onnx": figure(0.2)}

    monkeypatch.setattr("depthfinder.encoder.latency.interleaved", fake)
    calm = measure({}, "torch", expected=0.33, rounds=7)
    assert measured == [7, 14] and calm.noisy is None  # the second measurement agreed: its figures stand
    monkeypatch.setattr("depthfinder.encoder.latency.interleaved",
                        lambda *_, **__: {"torch": figure(95.0), "onnx": figure(0.07)})
    noisy = measure({}, "torch", expected=0.33)
    assert noisy.noisy.startswith("noisy machine: onnx 0.07 ms vs torch 95 ms")


def test_a_noisy_machine_states_no_speed_up() -> None:
    def variant(name: str, p50: float) -> Variant:
        return Variant(name=name, metrics={"macro_f1": 0.9}, latency_ms={"b1_p50": p50}, size_mb=1.0, shipped=False)

    measured = {"torch": variant("torch", 95.0), "onnx": variant("onnx", 0.07)}
    trusted = apply_gate({"torch": variant("torch", 0.4), "onnx": variant("onnx", 0.2)}, "macro_f1", 0.01, "")
    noisy = apply_gate(measured, "macro_f1", 0.01, "", "noisy machine: onnx 0.07 ms vs torch 95 ms")

    assert "2.0x as fast as torch (0.2 ms vs 0.4 ms at batch 1" in trusted.sentence
    assert "as fast" not in noisy.sentence and "no speed-up stated" in noisy.sentence
    assert noisy.latency_noisy.startswith("noisy machine")


def test_a_cost_table_whose_latencies_contradict_its_flops_is_called_noisy() -> None:
    from depthfinder.encoder.latency import cost_table_noise

    sound = [("depth 1", 1e6, 0.3), ("depth 2", 2e6, 0.5), ("depth 4", 4e6, 0.9)]
    assert cost_table_noise(sound) is None
    busy = cost_table_noise([("depth 1", 1e6, 95.0), ("depth 2", 2e6, 0.5)])  # the cheaper one 190x slower
    assert busy.startswith("noisy machine: the cost table's latencies contradict the FLOPs (depth 1 95 ms")
    assert cost_table_noise([("depth 1", 1e6, 0.3), ("depth 2", 2e6, 9.0)]) is not None  # 30x at twice the FLOPs


def test_the_pruned_torch_form_states_no_speed_up_over_the_same_network() -> None:
    """The torch model with its vocabulary pruned runs the same network: a ratio between the two is the machine's
    noise (the README's sample said 1.2x), so none is stated."""
    def variant(name: str, p50: float) -> Variant:
        return Variant(name=name, metrics={"macro_f1": 0.9}, latency_ms={"b1_p50": p50}, size_mb=1.0, shipped=False)

    judged = apply_gate({"torch": variant("torch", 0.69), "torch-pruned": variant("torch-pruned", 0.59),
                      "onnx": variant("onnx", 0.23)}, "macro_f1", 0.01, "")

    pruned, onnx = judged.sentence.split("; ")[:2]
    assert "0.59 ms vs 0.69 ms at batch 1 (the same network as torch's: no speed-up stated)" in pruned
    assert "as fast" not in pruned and "3.0x as fast as torch" in onnx
