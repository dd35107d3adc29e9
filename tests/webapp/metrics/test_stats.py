"""Intervals and tests (webapp.metrics.stats) against known and hand-computed values."""

from __future__ import annotations

import pytest

from webapp.metrics.stats import (
    MeanEstimate,
    mean_from_histogram,
    newcombe_difference,
    t_quantile_95,
    wilson_interval,
)


@pytest.mark.parametrize(
    ("successes", "total", "low", "high"),
    [
        # p = 1/4, z² = 3.8415: centre (0.25 + 0.4802)/1.9604 = 0.3725, margin 0.3269.
        (1, 4, 0.0456, 0.6994),
        # 0/10: the interval still has width (the normal one would be [0, 0]).
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (50, 100, 0.4038, 0.5962),
        # Newcombe (1998), table I: 8/10 gives 0.4902 .. 0.9433.
        (8, 10, 0.4902, 0.9433),
    ],
)
def test_wilson_interval_matches_known_values(successes, total, low, high) -> None:  # type: ignore[no-untyped-def]
    interval = wilson_interval(successes, total)
    assert interval.low == pytest.approx(low, abs=1e-4)
    assert interval.high == pytest.approx(high, abs=1e-4)
    assert interval.percent == pytest.approx(100 * successes / total)


def test_wilson_interval_of_nothing_and_of_impossible_counts() -> None:
    assert wilson_interval(0, 0).rate == 0.0 and wilson_interval(0, 0).total == 0
    with pytest.raises(ValueError, match="successes must be between 0 and total"):
        wilson_interval(5, 4)


def test_newcombe_difference_matches_newcombes_worked_example() -> None:
    """Newcombe (1998), "Interval estimation for the difference between independent
    proportions", example (a): 56/70 against 48/80 gives 0.2000 with the hybrid score interval
    0.0524 .. 0.3339 (method 10)."""
    difference = newcombe_difference(wilson_interval(48, 80), wilson_interval(56, 70))
    assert difference.value == pytest.approx(0.2)
    assert difference.low == pytest.approx(0.0524, abs=1e-4)
    assert difference.high == pytest.approx(0.3339, abs=1e-4)


def test_a_mean_from_a_histogram_has_a_bootstrap_interval_inside_the_values_seen() -> None:
    # First-correct turns of 14 solved dialogues, most at turn 1: mean 1.64 with a standard
    # deviation of 1.34, so mean - 1.96·s/√n would be 0.94, before turn 1.
    skewed = mean_from_histogram({1: 11, 3: 1, 4: 1, 5: 1})
    assert skewed.mean == pytest.approx(23 / 14) and skewed.count == 14
    assert skewed.low is not None and skewed.high is not None
    assert 1 <= skewed.low < skewed.mean < skewed.high <= 5
    assert skewed.high - skewed.mean > skewed.mean - skewed.low, "it follows the skew"
    assert mean_from_histogram({1: 11, 3: 1, 4: 1, 5: 1}) == skewed, "the same on every page"
    # Many symmetric observations: close to the normal interval, 2 ± 1.96·√(1.001/1000).
    wide = mean_from_histogram({1: 500, 3: 500})
    margin = 1.959964 * (1000 / 999 / 1000) ** 0.5
    assert wide.low == pytest.approx(2 - margin, abs=0.01)
    assert wide.high == pytest.approx(2 + margin, abs=0.01)
    assert mean_from_histogram({2: 7}) == MeanEstimate(2, 7, 2, 2), "no spread, no width"
    single = mean_from_histogram({2: 1})
    assert (single.mean, single.count, single.low) == (2, 1, None)
    assert mean_from_histogram({}).mean is None


def test_t_quantiles_are_students() -> None:
    assert t_quantile_95(2) == 4.303 and t_quantile_95(30) == 2.042
    assert t_quantile_95(1000) == pytest.approx(1.96, abs=1e-3)
    with pytest.raises(ValueError):
        t_quantile_95(0)
