"""The paired statistics over tasks (webapp.runs.paired) and the mean across seeds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from webapp.runs.metrics import mean_across, mean_rate_across
from webapp.runs.paired import paired_gaps


def test_identical_runs_differ_by_nothing_and_the_test_finds_nothing() -> None:
    rates = np.array([[0.0, 1.0], [1.0, 1.0], [0.5, 0.5]])
    (first, second) = paired_gaps(rates, rates.copy())
    assert (first.value, first.low, first.high) == (0.0, 0.0, 0.0)
    assert first.p_value == 1.0 and second.p_value == 1.0
    assert first.tasks == 3 and second.turn == 2


def test_ten_discordant_tasks_all_one_way_match_mcnemars_exact_test() -> None:
    # 10 tasks solved by B only, 10 solved by both, none by A only: McNemar's exact two-sided
    # p-value is 2 * 0.5**10 = 0.00195; the sign-flip test estimates it by simulation.
    baseline = np.array([[0.0]] * 10 + [[1.0]] * 10)
    other = np.ones((20, 1))
    (gap,) = paired_gaps(baseline, other)
    assert gap.value == pytest.approx(0.5)
    assert 0.3 <= gap.low < 0.5 < gap.high <= 0.7
    assert gap.p_value == pytest.approx(2 * 0.5**10, abs=0.0015)


def test_a_mixed_difference_is_not_significant_and_its_interval_holds_zero() -> None:
    baseline = np.array([[1.0], [0.0]] * 10)
    other = np.array([[0.0], [1.0]] * 9 + [[1.0], [1.0]])  # one net task in favour of B
    (gap,) = paired_gaps(baseline, other)
    assert gap.low < 0 < gap.high
    assert gap.p_value > 0.5


def test_the_numbers_are_the_same_on_every_call() -> None:
    rng = np.random.default_rng(0)
    baseline, other = rng.random((40, 3)), rng.random((40, 3))
    assert paired_gaps(baseline, other) == paired_gaps(baseline, other)


def test_arrays_of_different_tasks_are_refused() -> None:
    with pytest.raises(ValueError, match="same tasks"):
        paired_gaps(np.zeros((3, 2)), np.zeros((4, 2)))


def test_mean_across_three_seeds_uses_students_t() -> None:
    estimate = mean_across([0.4, 0.5, 0.6])
    margin = 4.303 * 0.1 / math.sqrt(3)
    assert estimate.mean == pytest.approx(0.5)
    assert (estimate.low, estimate.high) == (
        pytest.approx(0.5 - margin),
        pytest.approx(0.5 + margin),
    )
    assert mean_across([0.3]).low is None and mean_across([]).mean is None


def test_a_rate_across_seeds_keeps_its_interval_within_0_and_100_percent() -> None:
    estimate = mean_rate_across([0.0, 0.05, 0.4])
    assert estimate.low == 0.0 and mean_across([0.0, 0.05, 0.4]).low < 0  # type: ignore[operator]
    assert estimate.mean == pytest.approx(0.15)
