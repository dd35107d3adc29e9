"""One comparison, one method (webapp.metrics.comparison): paired over shared tasks, unpaired
only without any, and no interval where the data carries no information; the mean across
seeds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from webapp.metrics.comparison import (
    NO_INFORMATION_UNPAIRED,
    Method,
    TaskOutcomes,
    compare_outcomes,
    no_information,
    no_spread,
    paired_gaps,
)
from webapp.metrics.stats import mean_across, mean_rate_across


def test_identical_runs_carry_no_information_instead_of_an_interval() -> None:
    """Before: [0.0, 0.0], p = 1.000 on one page and Newcombe's [-2.3, 2.3] on another."""
    rates = np.array([[0.0, 1.0], [1.0, 1.0], [0.5, 0.5]])
    (first, second) = paired_gaps(rates, rates.copy())
    assert (first.value, first.low, first.high, first.p_value) == (0.0, None, None, None)
    assert first.note == no_information("task") and not first.informative
    assert first.tasks == 3 and second.turn == 2 and first.method is Method.PAIRED


def test_both_at_zero_carry_no_information_paired_or_not() -> None:
    zero = {"a": TaskOutcomes(4, (0, 0)), "b": TaskOutcomes(4, (0, 0))}
    assert all(not gap.informative for gap in compare_outcomes(zero, dict(zero), 2))
    other = {"c": TaskOutcomes(4, (0, 0))}
    unpaired = compare_outcomes(zero, other, 2)
    assert [gap.method for gap in unpaired] == [Method.UNPAIRED] * 2
    assert unpaired[0].note == NO_INFORMATION_UNPAIRED and unpaired[0].low is None


def test_shared_tasks_are_paired_and_disjoint_ones_are_unpaired_with_newcombe() -> None:
    base = {"a": TaskOutcomes(2, (0, 1)), "b": TaskOutcomes(2, (1, 1))}
    better = {"a": TaskOutcomes(2, (1, 2)), "b": TaskOutcomes(2, (1, 2))}
    (first, last) = compare_outcomes(base, better, 2)
    assert first.method is Method.PAIRED and first.tasks == 2
    assert first.value == pytest.approx(0.25) and last.value == pytest.approx(0.5)
    elsewhere = {"z": TaskOutcomes(4, (2, 4))}
    (gap_1, gap_2) = compare_outcomes(base, elsewhere, 2)
    # Pooled: base 1/4 then 2/4, the other 2/4 then 4/4; Newcombe around each difference.
    assert gap_1.method is Method.UNPAIRED and gap_1.p_value is None
    assert gap_1.value == pytest.approx(0.25) and gap_1.low < 0.25 < gap_1.high  # type: ignore[operator]
    assert gap_2.value == pytest.approx(0.5)


def test_one_shared_task_gives_a_difference_and_a_test_but_no_interval() -> None:
    (gap,) = paired_gaps(np.array([[0.0]]), np.array([[1.0]]))
    assert gap.value == 1.0 and gap.note == no_spread("task") and gap.low is None
    assert gap.informative and gap.p_value == 1.0, "one task: a sign flip is as extreme"


def test_a_line_shorter_than_the_other_is_carried_as_it_stood() -> None:
    single_turn = {"a": TaskOutcomes(2, (1,))}
    taught = {"a": TaskOutcomes(2, (1, 2, 2))}
    gaps = compare_outcomes(single_turn, taught, 3)
    assert [gap.value for gap in gaps] == [0.0, 0.5, 0.5]


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
    with pytest.raises(ValueError, match="same rows"):
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
