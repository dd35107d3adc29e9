"""Agreement statistics against hand-computed textbook examples (arithmetic in the comments).

Results are computed exactly (fractions), so each is compared with the exact fraction derived
by hand: ``estimate.exact == Fraction(...)``, and ``estimate.value`` is that fraction as a float.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from webapp.metrics.agreement import (
    Coincidences,
    Estimate,
    Metric,
    Weights,
    cohen_kappa,
    confusion,
    detector_agreement,
    disagreements,
    jaccard_distance,
    kappa,
    krippendorff_alpha,
    majority,
    masi_distance,
    observed_agreement,
    pairable,
    raters,
)


def exactly(estimate: Estimate, expected: Fraction) -> None:
    assert estimate.exact == expected
    assert estimate.value == float(expected)
    assert estimate.reason == ""


def table(rows: dict[str, list[object]]) -> dict[int, dict[str, object]]:
    """Reliability data from one row of values per rater (None = missing)."""
    size = len(next(iter(rows.values())))
    return {
        unit: {rater: values[unit] for rater, values in rows.items() if values[unit] is not None}
        for unit in range(size)
    }


# --- Cohen's kappa ---------------------------------------------------------------------------


def test_cohen_kappa_classic_two_by_two_table() -> None:
    # 50 items: both yes 20, A yes/B no 5, A no/B yes 10, both no 15.
    # p_o = (20 + 15) / 50 = 0.7. A says yes 25/50 = 0.5, B says yes 30/50 = 0.6.
    # p_e = 0.5·0.6 + 0.5·0.4 = 0.5.  κ = (0.7 − 0.5) / (1 − 0.5) = 0.4 = 2/5.
    pairs = [("yes", "yes")] * 20 + [("yes", "no")] * 5 + [("no", "yes")] * 10 + [("no", "no")] * 15
    estimate = cohen_kappa(pairs)
    exactly(estimate, Fraction(2, 5))
    assert estimate.items == 50


def test_cohen_kappa_three_categories_unweighted_linear_and_quadratic() -> None:
    # 10 items rated 1–3 by A and B: (1,1)×3, (1,2), (2,2)×2, (2,3), (3,3)×2, (3,1).
    # Marginals: A 1:4 2:3 3:3, B 1:4 2:3 3:3.
    pairs = [(1, 1)] * 3 + [(1, 2)] + [(2, 2)] * 2 + [(2, 3)] + [(3, 3)] * 2 + [(3, 1)]
    # Unweighted: p_o = 7/10; p_e = (4·4 + 3·3 + 3·3)/100 = 34/100;
    # κ = (70 − 34)/(100 − 34) = 36/66 = 6/11.
    exactly(cohen_kappa(pairs), Fraction(6, 11))
    # Linear, δ = |a − b|: observed Σδ/N = (1 + 1 + 2)/10 = 4/10.
    # Expected Σ p_A(a) p_B(b) |a − b| ·100: a=1: 4·(3·1 + 3·2) = 36; a=2: 3·(4·1 + 3·1) = 21;
    # a=3: 3·(4·2 + 3·1) = 33; total 90/100.  κ_w = 1 − 0.4/0.9 = 5/9.
    exactly(cohen_kappa(pairs, Weights.LINEAR), Fraction(5, 9))
    # Quadratic, δ = (a − b)²: observed (1 + 1 + 4)/10 = 6/10.
    # Expected ·100: a=1: 4·(3·1 + 3·4) = 60; a=2: 3·(4·1 + 3·1) = 21; a=3: 3·(4·4 + 3·1) = 57;
    # total 138/100.  κ_w = 1 − 60/138 = 78/138 = 13/23.
    exactly(cohen_kappa(pairs, Weights.QUADRATIC), Fraction(13, 23))


def test_weighted_kappa_does_not_depend_on_the_scale_of_the_weights() -> None:
    # The same ratings on 10..30 instead of 1..3: linear weights grow ×10, quadratic ×100, and
    # cancel between observed and expected disagreement.
    pairs = [(1, 1)] * 3 + [(1, 2)] + [(2, 2)] * 2 + [(2, 3)] + [(3, 3)] * 2 + [(3, 1)]
    scaled = [(10 * a, 10 * b) for a, b in pairs]
    assert cohen_kappa(scaled, Weights.LINEAR).exact == Fraction(5, 9)
    assert cohen_kappa(scaled, Weights.QUADRATIC).exact == Fraction(13, 23)


def test_perfect_agreement_and_systematic_disagreement() -> None:
    exactly(cohen_kappa([("a", "a"), ("b", "b"), ("a", "a")]), Fraction(1))
    # A always says the opposite of B, with both categories used equally:
    # p_o = 0, p_e = ½·½ + ½·½ = ½, κ = (0 − ½)/(1 − ½) = −1.
    exactly(cohen_kappa([("a", "b"), ("b", "a")]), Fraction(-1))


def test_cohen_kappa_edge_cases_are_none_with_a_reason() -> None:
    empty = cohen_kappa([])
    assert empty.value is None and "no item in common" in empty.reason
    # Both always say "yes": p_e = 1, the kappa is 0/0.
    same = cohen_kappa([("yes", "yes")] * 4)
    assert same.value is None and "no variation" in same.reason and same.items == 4
    # One constant rater, one varying: p_o = p_e, κ = 0 (defined).
    exactly(cohen_kappa([("yes", "yes"), ("yes", "no")]), Fraction(0))


# --- Krippendorff's alpha ---------------------------------------------------------------------

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: four observers,
# twelve units, values 1–5, missing values (None). Unit 12 has one value only and is not pairable.
KRIPPENDORFF_2011 = {
    "A": [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    "C": [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
}


def test_coincidence_matrix_of_krippendorff_2011() -> None:
    # Each unit u with m_u values adds (ordered pairs of values from different observers)/(m_u − 1):
    #   u1 {1,1,1} m=3: o11 += 6/2 = 3          u2 {2,2,3,2} m=4: o22 += 6/3 = 2, o23 = o32 += 3/3
    #   u3 {3,3,3,3}: o33 += 12/3 = 4           u4 {3,3,3,3}: o33 += 4
    #   u5 {2,2,2,2}: o22 += 4                  u6 {1,2,3,4}: every off-diagonal pair += 1/3
    #   u7 {4,4,4,4}: o44 += 4                  u8 {1,1,2,1}: o11 += 2, o12 = o21 += 1
    #   u9 {2,2,2,2}: o22 += 4                  u10 {5,5,5} m=3: o55 += 3
    #   u11 {1,1} m=2: o11 += 2                 u12 {3}: not pairable
    # o11 = 3 + 2 + 2 = 7, o22 = 2 + 4 + 4 = 10, o33 = 8, o44 = 4, o55 = 3,
    # o12 = 1 + 1/3 = 4/3, o23 = 1 + 1/3 = 4/3, o13 = o14 = o24 = o34 = 1/3.
    # n_1 = 7 + 4/3 + 1/3 + 1/3 = 9, n_2 = 13, n_3 = 10, n_4 = 5, n_5 = 3, n = 40.
    coincidences = Coincidences.of(table(KRIPPENDORFF_2011))
    third = Fraction(1, 3)
    expected = {
        (1, 1): 7, (2, 2): 10, (3, 3): 8, (4, 4): 4, (5, 5): 3,
        (1, 2): 4 * third, (2, 3): 4 * third, (1, 3): third, (1, 4): third, (2, 4): third,
        (3, 4): third,
    }  # fmt: skip
    for (c, k), weight in expected.items():
        assert coincidences.matrix[c, k] == weight
        assert coincidences.matrix[k, c] == weight
    assert coincidences.totals == {1: 9, 2: 13, 3: 10, 4: 5, 5: 3}
    assert coincidences.n == 40 and coincidences.items == 11


def test_krippendorff_2011_nominal() -> None:
    # α = 1 − (n − 1)(n − Σ o_cc)/(n² − Σ n_c²) = 1 − 39·(40 − 32)/(1600 − (81+169+100+25+9))
    #   = 1 − 312/1216 = 904/1216 = 113/152 ≈ 0.743 (the paper's value).
    exactly(krippendorff_alpha(table(KRIPPENDORFF_2011), Metric.NOMINAL), Fraction(113, 152))


def test_krippendorff_2011_interval() -> None:
    # δ = (c − k)². Σ_{c<k} o_ck δ = 4/3·1 + 1/3·4 + 1/3·9 + 4/3·1 + 1/3·4 + 1/3·1 = 26/3,
    # both halves: 52/3. Σ_{c<k} n_c n_k δ = 117 + 360 + 405 + 432 + 130 + 260 + 351 + 50 + 120 + 15
    # = 2240, both halves: 4480.  α = 1 − 39·(52/3)/4480 = 1 − 676/4480 = 951/1120 ≈ 0.849.
    exactly(krippendorff_alpha(table(KRIPPENDORFF_2011), Metric.INTERVAL), Fraction(951, 1120))


def test_krippendorff_2011_ordinal() -> None:
    # δ(c,k) = (Σ_{g=c..k} n_g − (n_c + n_k)/2)², n = (9, 13, 10, 5, 3):
    #   δ12 = (22 − 11)² = 121        δ13 = (32 − 9.5)² = 506.25   δ14 = (37 − 7)² = 900
    #   δ15 = (40 − 6)² = 1156        δ23 = (23 − 11.5)² = 132.25  δ24 = (28 − 9)² = 361
    #   δ25 = (31 − 8)² = 529         δ34 = (15 − 7.5)² = 56.25    δ35 = (18 − 6.5)² = 132.25
    #   δ45 = (8 − 4)² = 16
    # Σ_{c<k} o δ = 4/3·121 + 1/3·506.25 + 1/3·900 + 4/3·132.25 + 1/3·361 + 1/3·56.25 = 945.5
    # Σ_{c<k} n n δ = 117·121 + 90·506.25 + 45·900 + 27·1156 + 130·132.25 + 65·361 + 39·529
    #               + 50·56.25 + 30·132.25 + 15·16 = 199740
    # α = 1 − 39·(2·945.5)/(2·199740) = 1 − 73749/399480 = 325731/399480 ≈ 0.815.
    exactly(krippendorff_alpha(table(KRIPPENDORFF_2011), Metric.ORDINAL), Fraction(325731, 399480))


def test_observed_agreement_of_krippendorff_2011() -> None:
    # A_o = Σ o_cc / n = (7 + 10 + 8 + 4 + 3)/40 = 32/40 = 4/5.
    exactly(observed_agreement(table(KRIPPENDORFF_2011)), Fraction(4, 5))


BINARY_TWO_OBSERVERS = {  # Krippendorff (2011), section A: binary data, two observers
    "A": [0, 1, 0, 0, 0, 0, 0, 0, 1, 0],
    "B": [1, 1, 1, 0, 0, 1, 0, 0, 0, 0],
}


def test_alpha_and_kappa_on_binary_two_observers() -> None:
    data = table(BINARY_TWO_OBSERVERS)
    # Coincidences: 5 units (0,0) → o00 = 10; unit 2 (1,1) → o11 = 2; 4 mismatches → o01 = o10 = 4.
    # n_0 = 14, n_1 = 6, n = 20.  α = 1 − (n − 1)·o01/(n_0·n_1) = 1 − 19·4/84 = 8/84 = 2/21 ≈ 0.095.
    exactly(krippendorff_alpha(data), Fraction(2, 21))
    # Cohen: p_o = 6/10; A says 1 twice, B four times: p_e = .2·.4 + .8·.6 = .56;
    # κ = (.6 − .56)/(1 − .56) = .04/.44 = 1/11 (kappa and alpha differ: alpha pools marginals).
    result = kappa(data)
    assert result.method == "cohen" and result.label == "Cohen's kappa"
    exactly(result.estimate, Fraction(1, 11))
    exactly(observed_agreement(data), Fraction(6, 10))


def test_alpha_with_masi_distance_for_sets() -> None:
    # MASI = 1 − Jaccard·M: {a,b} vs {a}: J = 1/2, subset M = 2/3 → 1 − 1/3 = 2/3;
    # {a,b} vs {b,c}: J = 1/3, overlap M = 1/3 → 8/9; disjoint → 1; equal → 0.
    a, b, c = "a", "b", "c"
    assert masi_distance(frozenset({a, b}), frozenset({a})) == Fraction(2, 3)
    assert masi_distance(frozenset({a, b}), frozenset({b, c})) == Fraction(8, 9)
    assert masi_distance(frozenset({a}), frozenset({c})) == 1
    assert masi_distance(frozenset(), frozenset()) == 0
    assert jaccard_distance(frozenset({a, b}), frozenset({b, c})) == Fraction(2, 3)
    data = {
        1: {"X": frozenset({a}), "Y": frozenset({a})},
        2: {"X": frozenset({a, b}), "Y": frozenset({a})},
        3: {"X": frozenset({b}), "Y": frozenset({c})},
    }
    # Values: {a}×3, {a,b}, {b}, {c}; n = 6. Coincidences: o[{a},{a}] = 2, o[{a,b},{a}] = 1 (×2
    # orders), o[{b},{c}] = 1 (×2). Σ o δ = 2·(2/3) + 2·1 = 10/3.
    # Σ_{c≠k} n_c n_k δ = 2·(3·1·2/3 + 3·1·1 + 3·1·1 + 1·1·2/3 + 1·1·1 + 1·1·1) = 2·32/3 = 64/3.
    # α = 1 − 5·(10/3)/(64/3) = 1 − 50/64 = 7/32.
    exactly(krippendorff_alpha(data, Metric.MASI), Fraction(7, 32))
    # Observed agreement counts exact matches only: o[{a},{a}]/n = 2/6.
    exactly(observed_agreement(data), Fraction(1, 3))
    # Cohen's kappa with MASI weights: observed Σδ/N = (0 + 2/3 + 1)/3 = 5/9. X: {a},{a,b},{b};
    # Y: {a},{a},{c}. Expected = (1/9) Σ_x Σ_y δ(x, y) over X's and Y's three values each:
    # x={a}: 0 + 0 + 1 = 1; x={a,b}: 2/3 + 2/3 + 1 = 7/3; x={b}: 1 + 1 + 1 = 3; total 19/3,
    # so 19/27.  κ = 1 − (15/27)/(19/27) = 4/19.
    exactly(kappa(data, Weights.MASI).estimate, Fraction(4, 19))


def test_light_kappa_is_the_mean_of_pairwise_kappas() -> None:
    data = table({"A": [1, 1, 0, 0], "B": [1, 0, 0, 0], "C": [1, 1, 0, 1]})
    # AB: p_o = 3/4, p_e = (2·1 + 2·3)/16 = 1/2 → κ = 1/2.
    # AC: p_o = 3/4, p_e = (2·3 + 2·1)/16 = 1/2 → κ = 1/2.
    # BC: p_o = 2/4, p_e = (1·3 + 3·1)/16 = 3/8 → κ = (1/2 − 3/8)/(5/8) = 1/5.
    # Mean = (1/2 + 1/2 + 1/5)/3 = 2/5.
    result = kappa(data)
    assert result.method == "mean_pairwise"
    assert [pair[:2] for pair in result.pairs] == [("A", "B"), ("A", "C"), ("B", "C")]
    assert [pair[2].exact for pair in result.pairs] == [
        Fraction(1, 2), Fraction(1, 2), Fraction(1, 5)
    ]  # fmt: skip
    exactly(result.estimate, Fraction(2, 5))
    assert "3 of 3 pairs" in result.label


def test_mean_pairwise_kappa_leaves_out_undefined_pairs() -> None:
    # A and B both always say yes (undefined); C disagrees with each on item 1.
    data = table({"A": [True, True, None], "B": [True, True, True], "C": [False, None, True]})
    result = kappa(data)
    assert result.method == "mean_pairwise"
    undefined = [pair for pair in result.pairs if pair[2].value is None]
    assert [pair[:2] for pair in undefined] == [("A", "B")]
    # AC: one common item (True, False): p_o = 0, p_e = 1·0 + 0·1 = 0 → κ = 0.
    # BC: items 1, 3: (True, False), (True, True): p_o = 1/2, p_e = 1·1/2 = 1/2 → κ = 0.
    exactly(result.estimate, Fraction(0))
    assert "2 of 3 pairs" in result.label


# --- Edge cases -------------------------------------------------------------------------------


@pytest.mark.parametrize("metric", list(Metric))
def test_no_pairable_items_is_none(metric: Metric) -> None:
    values = frozenset({"a"}) if metric in (Metric.MASI, Metric.JACCARD) else 1
    for data in ({}, {1: {"A": values}, 2: {"B": values}}):
        estimate = krippendorff_alpha(data, metric)
        assert estimate.value is None and "two annotators" in estimate.reason
    assert observed_agreement({1: {"A": 1}}).value is None


def test_one_category_only_is_none_not_a_division_by_zero() -> None:
    data = {1: {"A": 3, "B": 3}, 2: {"A": 3, "B": 3, "C": 3}}
    for metric in (Metric.NOMINAL, Metric.ORDINAL, Metric.INTERVAL):
        estimate = krippendorff_alpha(data, metric)
        assert estimate.value is None and "same value" in estimate.reason
        assert estimate.items == 2
    exactly(observed_agreement(data), Fraction(1))
    assert kappa(data).estimate.value is None
    assert kappa({}).estimate.value is None


def test_single_raters_and_helpers() -> None:
    data = {
        1: {"A": "x", "B": "y"},
        2: {"A": "x"},
        3: {"B": "x", "C": "x"},
        4: {"C": "z", "A": "z"},
    }
    assert pairable(data) == {1: ["x", "y"], 3: ["x", "x"], 4: ["z", "z"]}
    assert raters(data) == ["A", "B", "C"]
    assert disagreements(data) == [1]
    assert majority(["y", "n", "y"]) == "y"
    assert majority(["y", "n"]) is None and majority([]) is None
    assert confusion([(1, 0), (1, 0), (0, 0)]) == {(1, 0): 2, (0, 0): 1}


def test_results_do_not_depend_on_order() -> None:
    data = table(KRIPPENDORFF_2011)
    shuffled = {unit: dict(reversed(data[unit].items())) for unit in reversed(list(data))}
    for metric in (Metric.NOMINAL, Metric.ORDINAL, Metric.INTERVAL):
        assert krippendorff_alpha(data, metric) == krippendorff_alpha(shuffled, metric)


def test_numeric_metrics_refuse_non_numbers() -> None:
    with pytest.raises(TypeError):
        krippendorff_alpha({1: {"A": "x", "B": "y"}}, Metric.INTERVAL)
    with pytest.raises(TypeError):
        cohen_kappa([(True, False)], Weights.LINEAR)


# --- Humans vs a detector ---------------------------------------------------------------------


def test_detector_agreement_counts_majority_ties_and_alpha() -> None:
    humans = {
        "t1": {"A": True, "B": True},  # majority yes, detector yes
        "t2": {"A": False, "B": False},  # majority no, detector yes
        "t3": {"A": True, "B": False},  # tie: left out of kappa and confusion
        "t4": {"A": False},  # majority no, detector no
        "t5": {"A": True},  # no detector value: left out
    }
    detector = {"t1": True, "t2": True, "t3": False, "t4": False}
    result = detector_agreement(humans, detector)
    assert result.items == 4 and result.ties == 1
    assert result.confusion == {(True, True): 1, (False, True): 1, (False, False): 1}
    assert result.disagreements == ["t2"]
    # Kappa over (T,T), (F,T), (F,F): p_o = 2/3; majority yes 1/3, detector yes 2/3;
    # p_e = 1/3·2/3 + 2/3·1/3 = 4/9; κ = (6/9 − 4/9)/(5/9) = 2/5.
    exactly(result.kappa, Fraction(2, 5))
    # Alpha with the detector as rater "detector": t1 {T,T,T}, t2 {F,F,T}, t3 {T,F,F}, t4 {F,F}.
    # m=3 units add pairs/2: t1 oTT += 3; t2 oFF += 1, oFT = oTF += 1; t3 the same; t4 oFF += 2.
    # oTT = 3, oFF = 4, oTF = oFT = 2; n_T = 5, n_F = 6, n = 11.
    # α = 1 − (n − 1)·oTF·2/(2·n_T·n_F) = 1 − 10·2/30 = 1/3.
    exactly(result.alpha_with_detector, Fraction(1, 3))
    # Humans only: t1 {T,T}, t2 {F,F}, t3 {T,F} (t4 has one label): oTT = 2, oFF = 2, oTF = 1;
    # n_T = 3, n_F = 3, n = 6. α = 1 − 5·1/9 = 4/9.
    exactly(result.alpha_humans, Fraction(4, 9))


def test_detector_agreement_without_items() -> None:
    result = detector_agreement({"t1": {"A": True}}, {})
    assert result.items == 0 and result.kappa.value is None
    assert result.alpha_with_detector.value is None and result.confusion == {}
