from __future__ import annotations

import pytest

from webapp.runs.metrics import cumulative_accuracy, wilson_interval


def test_wilson_interval_known_values() -> None:
    interval = wilson_interval(8, 10)
    # Reference values for 8/10 at 95%: 0.4902 .. 0.9433.
    assert interval.low == pytest.approx(0.4902, abs=1e-4)
    assert interval.high == pytest.approx(0.9433, abs=1e-4)
    assert wilson_interval(0, 0).rate == 0.0
    assert wilson_interval(0, 5).low == 0.0
    assert wilson_interval(5, 5).high == 1.0


def test_cumulative_accuracy_counts_solved_by_turn_k() -> None:
    curve = cumulative_accuracy(first_correct_counts={1: 2, 3: 1}, total=5, max_turns=4)
    assert [p.turn for p in curve] == [1, 2, 3, 4]
    assert [p.accuracy.successes for p in curve] == [2, 2, 3, 3]
    assert [p.accuracy.rate for p in curve] == [0.4, 0.4, 0.6, 0.6]
