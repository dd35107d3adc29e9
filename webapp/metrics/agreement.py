"""Inter-annotator agreement: pure statistics, no Django.

Reliability data maps each item to the values its raters gave: ``{item: {rater: value}}``.
Items, raters and values are any hashable (a value may be a number, a string, a bool or a
frozenset for multiple-choice answers). A rater who did not label an item is simply absent.

Every statistic returns an :class:`Estimate`: a value, or ``None`` with the reason it is
undefined (nothing to pair, a single category, ...) — never a division by zero. Sums are
exact (:class:`fractions.Fraction`), so results do not depend on the order of the data.

* Observed agreement — the share of pairable value pairs that match exactly (Krippendorff's
  ``A_o`` from the coincidence matrix with the nominal metric; for two raters and no missing
  data it is the plain percentage agreement).
* Cohen's kappa for two raters (Cohen 1960), weighted by a disagreement ``distance``
  (Cohen 1968): ``κ = 1 − observed disagreement / disagreement expected from the raters'
  marginals``. The nominal distance (0 if equal, else 1) gives the unweighted kappa; ``|a−b|``
  the linear and ``(a−b)²`` the quadratic weighted kappa (the scale of the weights cancels).
* Light's kappa (Light 1971): the mean of Cohen's kappa over every pair of raters that labelled
  common items, for more than two raters.
* Krippendorff's alpha (Krippendorff 2011, "Computing Krippendorff's alpha-reliability") for
  any number of raters and missing values, through the coincidence matrix, with the nominal,
  ordinal and interval metrics, and MASI or Jaccard distances for set-valued answers.

Multiple-choice answers (sets of options) are compared with the MASI distance (Passonneau 2006,
"Measuring agreement on set-valued items"): ``1 − Jaccard × M`` where ``M`` is 1 for equal sets,
2/3 when one contains the other, 1/3 when they only overlap and 0 when disjoint. It gives partial
credit for overlapping answers, which per-option yes/no agreement would count option by option
and exact matching would not count at all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from fractions import Fraction
from itertools import combinations
from numbers import Real
from typing import Any

# Any hashable, as the caller keys its data: the labelling pages key items by (dialogue, turn)
# and raters by user id. (``Hashable`` itself would refuse their dicts: a Mapping's key type
# is invariant.)
Item = Any
Rater = Any
Value = Any  # hashable: int, float, str, bool, frozenset
ReliabilityData = Mapping[Item, Mapping[Rater, Value]]
Distance = Callable[[Value, Value], Fraction]


@dataclass(frozen=True)
class Estimate:
    """A statistic's value, or ``None`` and the reason it is undefined. ``items`` counts the
    items it was computed from (pairable items, or items both raters labelled)."""

    value: float | None
    reason: str = ""
    items: int = 0
    exact: Fraction | None = field(default=None, repr=False, compare=False)

    @property
    def defined(self) -> bool:
        return self.value is not None


def _undefined(reason: str, items: int = 0) -> Estimate:
    return Estimate(value=None, reason=reason, items=items)


def _estimate(exact: Fraction, items: int) -> Estimate:
    return Estimate(value=float(exact), items=items, exact=exact)


# --- Distances (disagreement weights) -------------------------------------------------------


def _exact(number: object) -> Fraction:
    if isinstance(number, bool) or not isinstance(number, Real):
        raise TypeError(f"a numeric metric needs numbers, got {number!r}")
    # Fraction takes a Rational or a float, the Reals it knows, and refuses any other Real with
    # a TypeError of its own: the stubs take no Real.
    exact: Fraction = Fraction(number)  # type: ignore[call-overload]
    return exact


def nominal_distance(a: Value, b: Value) -> Fraction:
    return Fraction(0) if a == b else Fraction(1)


def linear_distance(a: Value, b: Value) -> Fraction:
    return abs(_exact(a) - _exact(b))


def interval_distance(a: Value, b: Value) -> Fraction:
    """Squared difference: Krippendorff's interval metric and the quadratic kappa weights."""
    return (_exact(a) - _exact(b)) ** 2


def jaccard_distance(a: Value, b: Value) -> Fraction:
    first, second = frozenset(a), frozenset(b)
    union = first | second
    if not union:  # two empty answers are the same answer
        return Fraction(0)
    return 1 - Fraction(len(first & second), len(union))


def masi_distance(a: Value, b: Value) -> Fraction:
    first, second = frozenset(a), frozenset(b)
    if first == second:
        return Fraction(0)
    common = first & second
    if not common:
        return Fraction(1)
    monotonicity = Fraction(2, 3) if first <= second or second <= first else Fraction(1, 3)
    return 1 - Fraction(len(common), len(first | second)) * monotonicity


class Metric(StrEnum):
    """Krippendorff's alpha metrics (the difference function δ between two values)."""

    NOMINAL = "nominal"
    ORDINAL = "ordinal"
    INTERVAL = "interval"
    MASI = "masi"
    JACCARD = "jaccard"


class Weights(StrEnum):
    """Cohen's kappa disagreement weights."""

    NONE = "unweighted"
    LINEAR = "linear"
    QUADRATIC = "quadratic"
    MASI = "masi"


PAIR_DISTANCES: dict[str, Distance] = {
    Metric.NOMINAL: nominal_distance,
    Metric.INTERVAL: interval_distance,
    Metric.MASI: masi_distance,
    Metric.JACCARD: jaccard_distance,
    Weights.NONE: nominal_distance,
    Weights.LINEAR: linear_distance,
    Weights.QUADRATIC: interval_distance,
}


# --- Reliability data helpers ---------------------------------------------------------------


def pairable(data: ReliabilityData) -> dict[Item, list[Value]]:
    """Items with at least two values (the only ones that say anything about agreement), in
    the data's order, each with its values in its raters' order."""
    return {item: list(values.values()) for item, values in data.items() if len(values) >= 2}


def raters(data: ReliabilityData) -> list[Rater]:
    """Raters who labelled at least one pairable item, in order of first appearance."""
    seen: dict[Rater, None] = {}
    for values in data.values():
        if len(values) >= 2:
            seen.update(dict.fromkeys(values))
    return list(seen)


def disagreements(data: ReliabilityData) -> list[Item]:
    """Pairable items whose values are not all equal, in the data's order."""
    return [item for item, values in pairable(data).items() if any(v != values[0] for v in values)]


def majority(values: Iterable[Value]) -> Value | None:
    """The most frequent value, or ``None`` on a tie (or no values)."""
    ranked = Counter(values).most_common(2)
    if not ranked or (len(ranked) == 2 and ranked[0][1] == ranked[1][1]):
        return None
    return ranked[0][0]


def confusion(pairs: Iterable[tuple[Value, Value]]) -> dict[tuple[Value, Value], int]:
    """How often each (first, second) combination occurs."""
    return dict(Counter(pairs))


def common_items(data: ReliabilityData, first: Rater, second: Rater) -> list[tuple[Value, Value]]:
    """The (first's value, second's value) pairs over the items both labelled."""
    return [
        (values[first], values[second])
        for values in data.values()
        if first in values and second in values
    ]


# --- The coincidence matrix -----------------------------------------------------------------


@dataclass(frozen=True)
class Coincidences:
    """Krippendorff's coincidence matrix: ``o[c, k] = Σ_u (number of c–k pairs of values in
    item u, ordered, from different raters) / (m_u − 1)`` over pairable items u with m_u values.
    ``totals[c] = n_c = Σ_k o[c, k]`` and ``n = Σ_c n_c`` (the number of pairable values)."""

    matrix: dict[tuple[Value, Value], Fraction]
    totals: dict[Value, Fraction]
    n: Fraction
    items: int

    @classmethod
    def of(cls, data: ReliabilityData) -> Coincidences:
        # Count ordered pairs per item size m as integers, then divide once per size.
        by_size: dict[int, Counter[tuple[Value, Value]]] = {}
        items = pairable(data)
        for values in items.values():
            counts = Counter(values)
            pairs = by_size.setdefault(len(values), Counter())
            for c, count_c in counts.items():
                for k, count_k in counts.items():
                    pairs[c, k] += count_c * (count_c - 1) if c == k else count_c * count_k
        matrix: dict[tuple[Value, Value], Fraction] = {}
        for size, pairs in by_size.items():
            for key, count in pairs.items():
                matrix[key] = matrix.get(key, Fraction(0)) + Fraction(count, size - 1)
        totals: dict[Value, Fraction] = {}
        for (c, _k), weight in matrix.items():
            totals[c] = totals.get(c, Fraction(0)) + weight
        return cls(
            matrix=matrix, totals=totals, n=sum(totals.values(), Fraction(0)), items=len(items)
        )


def _ordinal_distances(totals: Mapping[Value, Fraction]) -> Distance:
    """Krippendorff's ordinal metric: δ(c, k) = (Σ_{g=c..k} n_g − (n_c + n_k)/2)², over the
    values in rank order (values nobody used have n_g = 0 and change nothing)."""
    ranked = sorted(totals)
    cumulative: dict[Value, Fraction] = {}
    running = Fraction(0)
    for value in ranked:
        running += totals[value]
        cumulative[value] = running  # Σ_{g ≤ value} n_g

    def distance(a: Value, b: Value) -> Fraction:
        low, high = (a, b) if a <= b else (b, a)
        between = cumulative[high] - cumulative[low] + totals[low]  # Σ_{g=low..high} n_g
        return (between - (totals[low] + totals[high]) / 2) ** 2

    return distance


# --- Statistics ----------------------------------------------------------------------------


def observed_agreement(data: ReliabilityData) -> Estimate:
    """``A_o = Σ_c o[c, c] / n``: the share of pairable value pairs that match exactly."""
    table = Coincidences.of(data)
    if not table.items:
        return _undefined("no item has labels from two annotators")
    agreeing = sum((w for (c, k), w in table.matrix.items() if c == k), Fraction(0))
    return _estimate(agreeing / table.n, table.items)


def krippendorff_alpha(data: ReliabilityData, metric: str = Metric.NOMINAL) -> Estimate:
    """``α = 1 − D_o / D_e = 1 − (n − 1) Σ o[c,k] δ(c,k) / Σ n_c n_k δ(c,k)``."""
    metric = Metric(metric)
    table = Coincidences.of(data)
    if not table.items:
        return _undefined("no item has labels from two annotators")
    if metric is Metric.ORDINAL:
        distance = _ordinal_distances(table.totals)
    else:
        distance = PAIR_DISTANCES[metric]
    observed = sum((w * distance(c, k) for (c, k), w in table.matrix.items()), Fraction(0))
    expected = sum(
        (
            table.totals[c] * table.totals[k] * distance(c, k)
            for c in table.totals
            for k in table.totals
        ),
        Fraction(0),
    )
    if expected == 0:
        return _undefined("every label has the same value: no variation to agree on", table.items)
    return _estimate(1 - (table.n - 1) * observed / expected, table.items)


def cohen_kappa(pairs: Sequence[tuple[Value, Value]], weights: str = Weights.NONE) -> Estimate:
    """Cohen's kappa for two raters over the items both labelled, ``pairs`` of (first rater's
    value, second rater's value): ``κ = 1 − Σ_i δ(a_i, b_i) / N ÷ Σ_{c,k} p₁(c) p₂(k) δ(c, k)``,
    with the disagreement weight δ of ``weights`` (unweighted: 0 if equal, 1 if not, which
    is the familiar ``(p_o − p_e) / (1 − p_e)``)."""
    distance = PAIR_DISTANCES[Weights(weights)]
    if not pairs:
        return _undefined("the two annotators labelled no item in common")
    size = len(pairs)
    first = Counter(a for a, _ in pairs)
    second = Counter(b for _, b in pairs)
    observed = sum((distance(a, b) for a, b in pairs), Fraction(0)) / size
    expected = sum(
        (Fraction(n_a * n_b, size * size) * distance(a, b)
         for a, n_a in first.items() for b, n_b in second.items()),
        Fraction(0),
    )  # fmt: skip
    if expected == 0:
        return _undefined(
            "both annotators gave one and the same value throughout: no variation", size
        )
    return _estimate(1 - observed / expected, size)


@dataclass(frozen=True)
class Kappa:
    """Cohen's kappa when exactly two raters overlap, else Light's mean pairwise kappa.
    ``pairs`` lists every pair of raters with common items and its own kappa."""

    method: str  # "cohen" or "mean_pairwise"
    estimate: Estimate
    weights: str
    pairs: list[tuple[Rater, Rater, Estimate]] = field(default_factory=list)

    @property
    def label(self) -> str:
        if self.method == "cohen":
            return "Cohen's kappa"
        used = sum(1 for *_, estimate in self.pairs if estimate.defined)
        return f"mean pairwise Cohen's kappa (Light's kappa) over {used} of {len(self.pairs)} pairs"


def kappa(data: ReliabilityData, weights: str = Weights.NONE) -> Kappa:
    """Cohen's kappa for the two raters who labelled common items; with more raters, the mean
    of the defined pairwise kappas (pairs with no variation are left out of the mean)."""
    weights = Weights(weights)
    pairs = []
    for first, second in combinations(raters(data), 2):
        common = common_items(data, first, second)
        if common:
            pairs.append((first, second, cohen_kappa(common, weights)))
    if not pairs:
        return Kappa("cohen", _undefined("no item has labels from two annotators"), weights)
    if len(pairs) == 1:
        return Kappa("cohen", pairs[0][2], weights, pairs)
    defined = [estimate.exact for *_, estimate in pairs if estimate.exact is not None]
    if not defined:
        return Kappa(
            "mean_pairwise",
            _undefined("no pair of annotators has a defined kappa: " + pairs[0][2].reason),
            weights,
            pairs,
        )
    mean = sum(defined, Fraction(0)) / len(defined)
    return Kappa("mean_pairwise", _estimate(mean, len(pairable(data))), weights, pairs)


DETECTOR = "detector"


@dataclass(frozen=True)
class DetectorAgreement:
    """Humans against an automatic detector treated as one more rater.

    ``kappa`` compares the humans' majority (items where it is a tie are left out and counted in
    ``ties``) with the detector; ``alpha_with_detector`` is Krippendorff's nominal alpha over the
    humans and the detector together, ``alpha_humans`` the humans' alone for comparison.
    ``confusion`` counts (majority value, detector value) over the items with a majority.
    ``disagreements`` lists the items whose majority differs from the detector."""

    items: int
    ties: int
    confusion: dict[tuple[Value, Value], int]
    kappa: Estimate
    alpha_with_detector: Estimate
    alpha_humans: Estimate
    disagreements: list[Item]


def detector_agreement(
    humans: ReliabilityData, detector: Mapping[Item, Value], rater: Rater = DETECTOR
) -> DetectorAgreement:
    """Agreement between human labels and ``detector[item]``, over the items that have both at
    least one human label and a detector value."""
    items = [item for item, values in humans.items() if values and item in detector]
    pairs: list[tuple[Value, Value]] = []
    mismatched: list[Item] = []
    ties = 0
    for item in items:
        verdict = majority(humans[item].values())
        if verdict is None:
            ties += 1
            continue
        pairs.append((verdict, detector[item]))
        if verdict != detector[item]:
            mismatched.append(item)
    with_detector = {item: {**humans[item], rater: detector[item]} for item in items}
    kappa_estimate = (
        cohen_kappa(pairs) if pairs else _undefined("no item has a human majority to compare")
    )
    if not items:
        kappa_estimate = _undefined("no item has both a human label and a detector value")
    return DetectorAgreement(
        items=len(items),
        ties=ties,
        confusion=confusion(pairs),
        kappa=kappa_estimate,
        alpha_with_detector=krippendorff_alpha(with_detector, Metric.NOMINAL),
        alpha_humans=krippendorff_alpha({item: humans[item] for item in items}, Metric.NOMINAL),
        disagreements=mismatched,
    )
