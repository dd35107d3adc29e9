"""Paired statistics over tasks: is model B better than model A on the same tasks?

Two runs (or two groups of seeds) on the same tasks give, per task i, solved rates a_i and b_i
(each the share of the task's dialogues solved by turn k, over its samples and seeds). The gap
is the mean of d_i = b_i - a_i. Pairing by task removes the variation between tasks, which is
most of the variation: an interval for two independent proportions would be far wider.

- Interval: the paired bootstrap. Tasks are resampled with replacement, the mean difference
  recomputed each time; the 2.5th and 97.5th percentiles of those means bound the 95% interval.
- Test: the paired sign-flip permutation test of "no difference". Under that hypothesis each
  d_i is as likely to be -d_i, so the observed |mean| is compared with those of random sign
  flips; p = (1 + flips at least as extreme) / (1 + flips). With one sample per task and seed,
  d_i is -1, 0 or 1 and this is a Monte Carlo version of McNemar's exact test.

Both use a fixed seed, so the same data gives the same numbers on every page load.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from webapp.runs.metrics import Difference

BOOTSTRAP_RESAMPLES = 4000
SIGN_FLIPS = 9999
SEED = 20261126
CHUNK = 1000  # resamples drawn at a time: memory stays chunk x tasks


@dataclass(frozen=True)
class PairedGap(Difference):
    """The mean of ``b - a`` over tasks at one turn (``value``), its 95% bootstrap interval
    (``low``, ``high``) and the two-sided p-value of the sign-flip test."""

    turn: int
    p_value: float
    tasks: int


def _chunks(total: int) -> list[int]:
    return [min(CHUNK, total - start) for start in range(0, total, CHUNK)]


def bootstrap_means(
    differences: np.ndarray, resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """Means of ``resamples`` bootstrap resamples of the rows (tasks) of ``differences``
    (tasks x turns): one row of means per resample. Drawn as multinomial counts, so memory is
    resamples x tasks whatever the number of turns."""
    tasks = differences.shape[0]
    means = []
    for size in _chunks(resamples):
        counts = rng.multinomial(tasks, np.full(tasks, 1 / tasks), size=size)
        means.append(counts @ differences / tasks)
    return np.vstack(means)


def sign_flip_p_values(differences: np.ndarray, flips: int, rng: np.random.Generator) -> np.ndarray:
    """Two-sided p-values, one per column (turn), of the sign-flip test of a zero mean."""
    tasks = differences.shape[0]
    observed = np.abs(differences.mean(axis=0))
    as_extreme = np.zeros(differences.shape[1])
    for size in _chunks(flips):
        signs = rng.choice(np.array([-1.0, 1.0]), size=(size, tasks))
        flipped = np.abs(signs @ differences / tasks)
        # A flipped mean equal to the observed one counts (ties within rounding too).
        as_extreme += (flipped >= observed - 1e-12).sum(axis=0)
    p_values: np.ndarray = (1 + as_extreme) / (1 + flips)
    return p_values


def paired_gaps(baseline: np.ndarray, other: np.ndarray) -> list[PairedGap]:
    """``other - baseline`` at each turn, both tasks x turns arrays of solved rates with the
    same tasks in the same rows."""
    if baseline.shape != other.shape:
        raise ValueError(f"need the same tasks and turns, got {baseline.shape} and {other.shape}")
    tasks, turns = baseline.shape
    if tasks == 0:
        return []
    differences = other - baseline
    rng = np.random.default_rng(SEED)
    means = bootstrap_means(differences, BOOTSTRAP_RESAMPLES, rng)
    low, high = np.percentile(means, [2.5, 97.5], axis=0)
    p_values = sign_flip_p_values(differences, SIGN_FLIPS, rng)
    observed = differences.mean(axis=0)
    return [
        PairedGap(
            float(observed[turn]),
            float(low[turn]),
            float(high[turn]),
            turn=turn + 1,
            p_value=float(p_values[turn]),
            tasks=tasks,
        )
        for turn in range(turns)
    ]
