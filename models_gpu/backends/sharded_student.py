"""A scripted student for sharded arithmetic: it asks, answers too early, or solves.

It reads only the public conversation: the user's messages so far. From them it gathers an
operation ("sum", "add", "plus", "total" / "difference", "subtract", "minus" / "product",
"multiply", "times") and the numbers in the order they came, or a whole expression ("What is
47 + 38?"). With an operation and at least two numbers it believes it knows everything and
answers (correctly with probability ``final_accuracy``). Until then, each reply is a clarifying
question about what is missing (probability ``ask_probability``) or a premature guess ("The answer
is 47."). When the user's last message added nothing new (the simulator has no more shards), it
stops asking and guesses. Draws are seeded by ``f"{seed}:{t}"`` for the student's t-th reply,
so a dialogue is the same in any batch and any process.

``arithmetic_shards`` writes tasks in the form this policy reads, e.g. ("I need a sum.", "The
first number is 47.", "The second number is 38.").
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from models_gpu.backends.arithmetic_student import solve
from models_gpu.types import GenerationRequest
from models_gpu.verifiers.extraction import find_numbers, parse_number

_OPERATION_WORDS: Mapping[str, tuple[str, ...]] = {
    "+": ("sum", "add", "plus", "total"),
    "-": ("difference", "subtract", "minus"),
    "*": ("product", "multiply", "times"),
}
_OPERATION_NAMES: Mapping[str, str] = {"+": "sum", "-": "difference", "*": "product"}
_ORDINALS = ("first", "second", "third", "fourth", "fifth")


def arithmetic_shards(left: int, symbol: str, right: int) -> tuple[str, str, str]:
    """Shards for ``left symbol right``: the intent first, then one number per shard."""
    if symbol not in _OPERATION_NAMES:
        raise ValueError(f"symbol must be one of {''.join(_OPERATION_NAMES)!r}, got {symbol!r}")
    return (
        f"I need a {_OPERATION_NAMES[symbol]} of two numbers.",
        f"The first number is {left}.",
        f"The second number is {right}.",
    )


@dataclass(frozen=True)
class _Known:
    operation: str | None
    numbers: tuple[Fraction, ...]
    value: Fraction | None  # set when a whole expression was given

    @property
    def complete(self) -> bool:
        return self.value is not None or (self.operation is not None and len(self.numbers) >= 2)

    def answer(self) -> Fraction:
        if self.value is not None:
            return self.value
        assert self.operation is not None
        result = self.numbers[0]
        for number in self.numbers[1:]:
            if self.operation == "+":
                result += number
            elif self.operation == "-":
                result -= number
            else:
                result *= number
        return result


@dataclass(frozen=True)
class ShardedStudent:
    ask_probability: float = 0.5
    final_accuracy: float = 1.0

    def reply(self, request: GenerationRequest) -> str:
        user_texts = [m.content for m in request.messages if m.role == "user"]
        reply_number = 1 + sum(m.role == "assistant" for m in request.messages)
        rng = random.Random(f"{request.seed}:{reply_number}")
        known = _gather(user_texts)
        if known.complete:
            value = known.answer()
            if rng.random() < self.final_accuracy:
                return f"The answer is {value}."
            return f"The answer is {value + rng.choice((-1, 1)) * rng.randint(1, 9)}."
        nothing_new = len(user_texts) > 1 and _gather(user_texts[:-1]) == known
        if not nothing_new and rng.random() < self.ask_probability:
            return _question(known)
        guess = known.numbers[-1] if known.numbers else Fraction(rng.randint(10, 99))
        return f"I am not sure yet, but my guess is this. The answer is {guess}."


def _gather(user_texts: Sequence[str]) -> _Known:
    operation: str | None = None
    numbers: list[Fraction] = []
    for text in user_texts:
        value = solve(text) if re.search(r"\d\s*[-+*/]\s*\d", text) else None
        if value is not None:
            return _Known(operation, tuple(numbers), value)
        words = set(re.findall(r"[a-z]+", text.casefold()))
        for symbol, names in _OPERATION_WORDS.items():
            if words & set(names):
                operation = symbol
        numbers.extend(n for n in map(parse_number, find_numbers(text)) if n is not None)
    return _Known(operation, tuple(numbers), None)


def _question(known: _Known) -> str:
    if known.operation is None:
        return "What should I do with the numbers?"
    ordinal = _ORDINALS[min(len(known.numbers), len(_ORDINALS) - 1)]
    return f"What is the {ordinal} number?"
