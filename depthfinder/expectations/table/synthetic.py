"""Nested list operations: built-in tasks whose nesting depth sets how deep an encoder must be.

A text is one expression tree of a fixed shape, written in prefix form with brackets;
the label is its value, a digit:

    nested-ops-1  min ( 7 3 9 5 1 5 6 5 )                                               -> 1
    nested-ops-2  min ( first ( 7 5 5 ) last ( 8 7 2 ) first ( 9 4 2 ) )                -> 2
    nested-ops-3  first ( last ( last ( 4 7 ) min ( 2 6 ) ) max ( first ( 9 4 ) last ( 8 0 ) ) )  -> 2

Every operator node applies `max`, `min`, `first` or `last` to its arguments. The
problem depth k is the number of nested operator levels; the arity shrinks with k
(8, 3, 2) so that every depth has eight or nine digits and at most 30 tokens: the
nesting differs, the amount of input hardly does.

Why nesting k asks for more layers. One encoder block is one round of attention
followed by a per-token MLP. Attention can evaluate one operator over its arguments
(the shape is fixed, so an operator's arguments sit at fixed positions: `first`/`last`
attend by position, `max`/`min` by the digit's value), but an operator whose arguments
are themselves operators needs their values, which exist only after the previous
round. Evaluating k levels therefore takes about k rounds of attention (ListOps, Nangia
and Bowman 2018, is the variable-shape original). Width stands in for some depth: an
MLP can fold a small aggregation (two or three digits gathered by attention) into the
same block, and the `first`/`last` paths are shortcuts, so one block gets part of the
way (about 0.93-0.97 accuracy at k=2, 0.76-0.88 at k=3 with d_model 64) while k=3
needs four blocks for 0.99. A bag of words cannot tell the levels apart: swapping two
operators keeps every token and changes the value of over 40 % of the texts.

Labels are balanced by construction: the value of the whole tree is drawn uniformly
first, then each node picks an operator and arguments consistent with its value (the
argument that decides the value sits at a random position where the operator allows;
`max` gives only values from 4 up and `min` only values up to 5, so that the other
arguments range over at least five digits). Everything is a function of the seed.

Settings under which problem depths 1, 2, 3 are best served by 1, 2 and 4 blocks (three
seeds), at 20 s to 2 min per depth on one CPU thread: 8,000 rows; d_model 64, 4 heads,
d_ff 128, dropout 0, max_len 64, vocab_size 100; learning rate 2e-3, batch size 32, the
default 20 epochs.
The audit's `suspected_label_noise` check, whose bag-of-words baseline cannot learn
nesting, estimates 35-45 % noise at k >= 2 and blocks at its default 0.3: raise
`audit.max_label_noise_fraction` for these datasets (their labels are exact).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

DIGITS = 10
OPERATORS: dict[str, Callable[[list[int]], int]] = {
    "max": max,
    "min": min,
    "first": lambda values: values[0],
    "last": lambda values: values[-1],
}
OPERATOR_NAMES = tuple(OPERATORS)
ARITY = {1: 8, 2: 3, 3: 2}  # about eight digits at every depth
MIN_FREE_DIGITS = 5


@dataclass(frozen=True)
class NestedOpsTask:
    """Expressions of nesting `depth` with `arity` arguments per operator; a built-in dataset's sampler."""

    depth: int
    arity: int

    def __post_init__(self) -> None:
        if self.depth < 1 or self.arity < 2:
            raise ValueError(f"nested ops: depth must be >= 1 and arity >= 2, got {self.depth} and {self.arity}")

    @property
    def name(self) -> str:
        return f"nested-ops-{self.depth}"

    @property
    def description(self) -> str:
        return (
            f"Nested max/min/first/last expressions {self.depth} level(s) deep ({self.arity} arguments each, "
            f"{self.arity**self.depth} digits); label = the value, 10 balanced classes. Problem depth {self.depth}."
        )

    def sample(self, rng: np.random.Generator, n_rows: int) -> list[tuple[str, str]]:
        """`n_rows` (text, label) pairs; the labels cycle through the digits, in shuffled order."""
        values = rng.permutation(np.arange(n_rows) % DIGITS)
        return [(expression(rng, int(value), self.depth, self.arity), str(value)) for value in values]


def expression(rng: np.random.Generator, value: int, depth: int, arity: int) -> str:
    """A random expression of nesting `depth` whose value is `value`."""
    if depth == 0:
        return str(value)
    operators = usable_operators(value)
    operator = operators[int(rng.integers(len(operators)))]
    arguments = " ".join(
        expression(rng, argument, depth - 1, arity) for argument in argument_values(rng, operator, value, arity)
    )
    return f"{operator} ( {arguments} )"


def usable_operators(value: int) -> tuple[str, ...]:
    """The operators that can give `value` with varied arguments.

    The free arguments of `max` range over 0..value and those of `min` over value..9; at
    least MIN_FREE_DIGITS choices keep texts apart (`min ( 9 8 9 9 8 9 8 9 )` and its
    like would be near-duplicates of each other).
    """
    usable = [op for op in OPERATOR_NAMES if op not in ("max", "min")]
    if value + 1 >= MIN_FREE_DIGITS:
        usable.append("max")
    if DIGITS - value >= MIN_FREE_DIGITS:
        usable.append("min")
    return tuple(sorted(usable, key=OPERATOR_NAMES.index))


def argument_values(rng: np.random.Generator, operator: str, value: int, arity: int) -> list[int]:
    """`arity` argument values on which `operator` gives `value`: the deciding one placed, the rest free."""
    if operator == "max":
        values = rng.integers(0, value + 1, size=arity)
    elif operator == "min":
        values = rng.integers(value, DIGITS, size=arity)
    else:
        values = rng.integers(0, DIGITS, size=arity)
    deciding = {"first": 0, "last": arity - 1}.get(operator, int(rng.integers(arity)))
    values[deciding] = value
    return [int(v) for v in values]


def evaluate(text: str) -> int:
    """The value of an expression written by `expression` (a reference solver)."""
    stack: list[list] = [[]]
    for token in text.split():
        if token in OPERATORS:
            stack.append([token])
        elif token == ")":
            operator, *arguments = stack.pop()
            stack[-1].append(OPERATORS[operator](arguments))
        elif token != "(":
            stack[-1].append(int(token))
    (result,) = stack[0]
    return result


NESTED_OPS_TASKS = tuple(NestedOpsTask(depth, arity) for depth, arity in sorted(ARITY.items()))
