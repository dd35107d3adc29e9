"""The statistics every figure's interval or test comes from: pure functions, no Django.

- ``wilson_interval``: a proportion with its 95% Wilson score interval.
- ``newcombe_difference``: two independent proportions' difference, Newcombe's hybrid score
  interval (built from the two Wilson intervals).
- ``mean_from_histogram``: a mean with a percentile bootstrap interval (many observations);
  ``mean_across`` / ``mean_rate_across``: a mean over a few repeats (seeds) with Student's t.
- ``bootstrap_means``: the means of bootstrap resamples of rows (paired differences over tasks).
- ``sign_flip_p_values``: the paired sign-flip permutation test of a zero mean.

Agreement between annotators (kappa, alpha) is ``webapp.metrics.agreement``. Every random draw
uses ``SEED``, so the same data gives the same numbers on every page, export and command.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

Z_95 = 1.959963984540054
BOOTSTRAP_RESAMPLES = 4000
SIGN_FLIPS = 9999
SEED = 20261126
CHUNK = 1000  # resamples drawn at a time: memory stays chunk x rows


@dataclass(frozen=True)
class Proportion:
    """``successes`` of ``total`` with a 95% interval [low, high]."""

    successes: int
    total: int
    low: float
    high: float

    @property
    def rate(self) -> float:
        return self.successes / self.total if self.total else 0.0

    # Percentages for templates, which cannot multiply.
    @property
    def percent(self) -> float:
        return 100 * self.rate

    @property
    def low_percent(self) -> float:
        return 100 * self.low

    @property
    def high_percent(self) -> float:
        return 100 * self.high


def wilson_interval(successes: int, total: int, z: float = Z_95) -> Proportion:
    """Wilson score interval: well-behaved at 0%, 100% and small n, unlike the normal one."""
    if total == 0:
        return Proportion(0, 0, 0.0, 0.0)
    if not 0 <= successes <= total:
        raise ValueError(f"successes must be between 0 and total ({total}), got {successes}")
    p = successes / total
    denominator = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denominator
    margin = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denominator
    # The rounding of the last bits must not put the point estimate outside its own interval.
    return Proportion(
        successes, total, max(0.0, min(p, centre - margin)), min(1.0, max(p, centre + margin))
    )


@dataclass(frozen=True)
class Difference:
    """A difference ``b - a`` (of two proportions, or a mean of paired ones), with a 95%
    interval; in percentage points for templates."""

    value: float
    low: float
    high: float

    @property
    def points(self) -> float:
        return 100 * self.value

    @property
    def low_points(self) -> float:
        return 100 * self.low

    @property
    def high_points(self) -> float:
        return 100 * self.high


def newcombe_difference(a: Proportion, b: Proportion) -> Difference:
    """``b.rate - a.rate`` with Newcombe's hybrid score interval (independent samples), built
    from the two Wilson intervals: sound at 0% and 100% where the normal one is not."""
    d = b.rate - a.rate
    low = d - math.sqrt((b.rate - b.low) ** 2 + (a.high - a.rate) ** 2)
    high = d + math.sqrt((b.high - b.rate) ** 2 + (a.rate - a.low) ** 2)
    return Difference(d, max(-1.0, min(d, low)), min(1.0, max(d, high)))


@dataclass(frozen=True)
class MeanEstimate:
    """A sample mean with a 95% interval (None below two observations)."""

    mean: float | None
    count: int
    low: float | None = None
    high: float | None = None


def mean_from_histogram(
    counts: Mapping[int, int] | Mapping[float, int],
    resamples: int = BOOTSTRAP_RESAMPLES,
    rng: np.random.Generator | None = None,
) -> MeanEstimate:
    """Mean of values given as ``{value: how many}``, e.g. first-correct turns of solved
    dialogues, with a 95% percentile bootstrap interval. Unlike mean ± 1.96·s/√n it stays
    inside the values observed (a mean first-correct turn is never put below turn 1) and
    follows their skew: most solved dialogues are solved early. Each resample is drawn as
    multinomial counts over the distinct values, so the cost grows with those, not with the
    observations."""
    count = sum(counts.values())
    if count == 0:
        return MeanEstimate(None, 0)
    mean = sum(value * n for value, n in counts.items()) / count
    if count < 2:
        return MeanEstimate(mean, count)
    rng = rng if rng is not None else np.random.default_rng(SEED)
    values = np.array(list(counts), dtype=float)
    shares = np.array(list(counts.values())) / count
    means = np.concatenate(
        [rng.multinomial(count, shares, size=size) @ values / count for size in _chunks(resamples)]
    )
    low, high = np.percentile(means, [2.5, 97.5])
    return MeanEstimate(mean, count, float(low), float(high))


# Two-sided 95% quantiles of Student's t for 1..30 degrees of freedom; beyond, the normal's.
T_95 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t_quantile_95(degrees_of_freedom: int) -> float:
    if degrees_of_freedom < 1:
        raise ValueError("need at least one degree of freedom")
    return T_95[degrees_of_freedom - 1] if degrees_of_freedom <= len(T_95) else Z_95


def mean_across(values: Sequence[float]) -> MeanEstimate:
    """The mean of a few independent repeats (a run's seeds) with a 95% Student t interval:
    with 3 seeds the interval is mean ± 4.3·s/√3, wide, as 3 repeats warrant."""
    count = len(values)
    if count == 0:
        return MeanEstimate(None, 0)
    mean = sum(values) / count
    if count < 2:
        return MeanEstimate(mean, count)
    variance = sum((value - mean) ** 2 for value in values) / (count - 1)
    margin = t_quantile_95(count - 1) * math.sqrt(variance / count)
    return MeanEstimate(mean, count, mean - margin, mean + margin)


def mean_rate_across(rates: Sequence[float]) -> MeanEstimate:
    """``mean_across`` for rates (accuracies of seeds): the interval clipped to 0–100%, which a
    t interval over a few seeds can overshoot."""
    estimate = mean_across(rates)
    if estimate.low is None or estimate.high is None:
        return estimate
    return replace(estimate, low=max(0.0, estimate.low), high=min(1.0, estimate.high))


def _chunks(total: int) -> list[int]:
    return [min(CHUNK, total - start) for start in range(0, total, CHUNK)]


def bootstrap_means(
    rows: np.ndarray, resamples: int = BOOTSTRAP_RESAMPLES, rng: np.random.Generator | None = None
) -> np.ndarray:
    """Means of ``resamples`` bootstrap resamples of the rows (e.g. tasks) of ``rows`` (rows x
    columns): one row of column means per resample. Drawn as multinomial counts, so memory is
    resamples x rows whatever the number of columns."""
    rng = rng if rng is not None else np.random.default_rng(SEED)
    count = rows.shape[0]
    means = []
    for size in _chunks(resamples):
        weights = rng.multinomial(count, np.full(count, 1 / count), size=size)
        means.append(weights @ rows / count)
    return np.vstack(means)


def percentile_interval(means: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The 2.5th and 97.5th percentiles of bootstrap means, per column."""
    low, high = np.percentile(means, [2.5, 97.5], axis=0)
    return low, high


def sign_flip_p_values(
    differences: np.ndarray, flips: int = SIGN_FLIPS, rng: np.random.Generator | None = None
) -> np.ndarray:
    """Two-sided p-values, one per column, of the paired sign-flip test of a zero mean: under
    "no difference" each row's difference is as likely to be its negative, so the observed
    |mean| is compared with those of random sign flips; p = (1 + as extreme) / (1 + flips).
    With 0/1 outcomes per row this is McNemar's exact test, by simulation."""
    rng = rng if rng is not None else np.random.default_rng(SEED)
    count = differences.shape[0]
    observed = np.abs(differences.mean(axis=0))
    as_extreme = np.zeros(differences.shape[1])
    for size in _chunks(flips):
        signs = rng.choice(np.array([-1.0, 1.0]), size=(size, count))
        flipped = np.abs(signs @ differences / count)
        # A flipped mean equal to the observed one counts (ties within rounding too).
        as_extreme += (flipped >= observed - 1e-12).sum(axis=0)
    p_values: np.ndarray = (1 + as_extreme) / (1 + flips)
    return p_values
