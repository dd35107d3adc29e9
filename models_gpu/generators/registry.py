"""``generate(family, n, seed=..., **knobs)``: validated, seeded batches of tasks.

The families and their knobs are described in ``models_gpu.spec.generators`` (the web side
builds its form from it). Task i of a batch depends only on (family, seed, i, knobs), so a
larger ``n`` extends a batch instead of reshuffling it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any

from models_gpu.generators import families
from models_gpu.spec.generators import MAX_GENERATED_TASKS, generator_settings

Family = Callable[[random.Random, Mapping[str, Any]], dict[str, Any]]

GENERATORS: dict[str, Family] = {
    "arithmetic": families.arithmetic,
    "guess_number": families.guess_number,
    "maze": families.maze,
    "code_guess": families.code_guess,
}


def generate(family: str, n: int, *, seed: int, **knobs: Any) -> list[dict[str, Any]]:
    """``n`` tasks of ``family``; ValueError naming the problem for any bad argument."""
    if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_GENERATED_TASKS:
        raise ValueError(f"n must be an integer in [0, {MAX_GENERATED_TASKS}]")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError("seed must be an integer")
    settings = generator_settings(family, knobs)
    make = GENERATORS[family]
    tasks = []
    for index in range(n):
        # A string seed is hashed with SHA-512 by random: stable across runs and Python versions.
        task = make(random.Random(f"{family}:{seed}:{index}"), settings)
        task["metadata"] = {**task["metadata"], "family": family, "seed": seed, "index": index,
                            "knobs": settings}  # fmt: skip
        tasks.append(task)
    return tasks
