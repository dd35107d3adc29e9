"""Counterfactual comparison: did the forks do better than their parents?

Each fork is paired with its parent: the same task, the same seed, the same turns up to the
fork point. Per pair and turn k, the outcome is 1 when the dialogue was solved by turn k; the
gap at k is the mean of fork - parent over pairs, with the paired bootstrap interval and the
sign-flip test of ``webapp.metrics.comparison`` (with 0/1 outcomes, McNemar's exact test in its
Monte Carlo form). Only the discordant pairs move it, so their counts are shown too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from webapp.forks.selectors import ForkPair
from webapp.metrics.comparison import Gap, paired_gaps


@dataclass(frozen=True)
class TurnComparison:
    """At turn k: the parents' and the forks' share solved by k, the paired gap (fork -
    parent), and the discordant pairs."""

    turn: int
    parent_accuracy: float
    fork_accuracy: float
    gap: Gap
    parent_only: int  # the parent solved by k, the fork not
    fork_only: int  # the fork solved by k, the parent not


@dataclass(frozen=True)
class Comparison:
    pairs: int
    from_turn: int
    max_turns: int
    turns: list[TurnComparison]


def solved_by(first_correct: Sequence[int | None], turns: Sequence[int]) -> np.ndarray:
    """pairs x turns: 1.0 where the dialogue was solved by that turn."""
    return np.array(
        [[float(fct is not None and fct <= k) for k in turns] for fct in first_correct],
        dtype=float,
    ).reshape(len(first_correct), len(turns))


def counterfactual_comparison(pairs: Sequence[ForkPair], *, max_turns: int) -> Comparison | None:
    """Parents against forks after each turn k from the earliest fork point to ``max_turns``
    (the fork run's T); ``None`` without a pair."""
    if not pairs:
        return None
    from_turn = max(1, min(pair.fork_round for pair in pairs))
    turns = list(range(from_turn, max(from_turn, max_turns) + 1))
    parents = solved_by([pair.parent_first_correct for pair in pairs], turns)
    forks = solved_by([pair.fork_first_correct for pair in pairs], turns)
    gaps = paired_gaps(parents, forks, unit="pair")
    rows = [
        TurnComparison(
            turn=k,
            parent_accuracy=float(parents[:, column].mean()),
            fork_accuracy=float(forks[:, column].mean()),
            gap=gaps[column],
            parent_only=int(((parents[:, column] == 1) & (forks[:, column] == 0)).sum()),
            fork_only=int(((forks[:, column] == 1) & (parents[:, column] == 0)).sum()),
        )
        for column, k in enumerate(turns)
    ]
    return Comparison(pairs=len(pairs), from_turn=from_turn, max_turns=max_turns, turns=rows)
