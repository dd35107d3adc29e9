"""A run's figures from counts (webapp.metrics.figures, export), against hand-computed values."""

from __future__ import annotations

import pytest

from models_gpu.spec.reports import Accounting
from webapp.metrics.export import CSV_COLUMNS, csv_cells
from webapp.metrics.figures import (
    FeedbackUseTurn,
    TurnCounts,
    accounting_rows,
    accuracy_after_turns,
    feedback_use_table,
    pass_at_k,
    pass_at_k_curve,
    pass_at_k_tasks_left_out,
    pooled_feedback_use,
)
from webapp.metrics.partial import Counted


def whole(dialogues: int, max_turns: int = 4) -> Counted:
    return Counted(dialogues, max_turns, True, 0, dialogues, False)


def test_accuracy_after_turn_k_counts_solved_by_turn_k_over_one_denominator() -> None:
    curve = accuracy_after_turns(first_correct_counts={1: 2, 3: 1}, counted=whole(5), max_turns=4)
    assert [p.turn for p in curve] == [1, 2, 3, 4]
    assert [(p.accuracy.successes, p.accuracy.total) for p in curve] == [  # type: ignore[union-attr]
        (2, 5), (2, 5), (3, 5), (3, 5),
    ]  # fmt: skip


def test_turns_the_counted_dialogues_have_not_played_are_not_known() -> None:
    batch = Counted(10, 2, False, 0, 10, True)
    curve = accuracy_after_turns(first_correct_counts={1: 1, 2: 3}, counted=batch, max_turns=4)
    assert [p.accuracy is None for p in curve] == [False, False, True, True]
    assert curve[1].accuracy.successes == 4  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (5, 2, 2, 1 - 3 / 10),  # 1 - C(3,2)/C(5,2)
        (4, 1, 1, 0.25),  # pass@1 is the plain solve rate c/n
        (4, 1, 2, 1 - 3 / 6),  # 1 - C(3,2)/C(4,2)
        (4, 1, 4, 1.0),  # drawing every sample always includes the solved one
        (3, 0, 2, 0.0),
        (8, 8, 3, 1.0),
    ],
)
def test_pass_at_k_is_the_unbiased_estimator(n: int, c: int, k: int, expected: float) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(expected)


def test_pass_at_k_refuses_k_beyond_the_samples() -> None:
    with pytest.raises(ValueError, match="need 1 <= k <= n"):
        pass_at_k(2, 1, 3)
    with pytest.raises(ValueError, match="need 0 <= c <= n"):
        pass_at_k(2, 3, 1)


def test_pass_at_k_is_over_the_same_tasks_for_every_k() -> None:
    """Three tasks, two samples asked for: 2 samples 1 solved, 2 samples none, and 1 sample
    solved (its second not counted yet). Before, pass@1 counted all three and pass@2 two of them,
    so the curve could drop (50% at k = 4, 0% at k = 5 on a cancelled run)."""
    counts = {(2, 1): 1, (2, 0): 1, (1, 1): 1}
    curve = pass_at_k_curve(counts, samples=2)
    assert [(p.k, p.tasks) for p in curve] == [(1, 2), (2, 2)]
    assert curve[0].value == pytest.approx((0.5 + 0.0) / 2)
    assert curve[1].value == pytest.approx((1.0 + 0.0) / 2)
    assert pass_at_k_tasks_left_out(counts, samples=2) == 1
    assert pass_at_k_curve({}, samples=2) == []


def test_accounting_prefers_the_workers_record_and_falls_back_to_stored_turns() -> None:
    counts = TurnCounts(stored_student_turns=7, stored_teacher_turns=4, student_prompt_tokens=70,
                        teacher_prompt_tokens=40, student_completion_tokens=14,
                        teacher_completion_tokens=8)  # fmt: skip
    live, recorded = accounting_rows(Accounting(), counts, elapsed_seconds=12.34)
    assert not recorded
    assert [(row.label, row.value) for row in live] == [
        ("student generations", 7), ("teacher calls", 4), ("prompt tokens", 110),
        ("completion tokens", 22), ("wall time", 12.3),
    ]  # fmt: skip
    worker = Accounting(student_generations=9, teacher_calls=5, prompt_tokens=1,
                        completion_tokens=2, wall_seconds=3.0)  # fmt: skip
    final, recorded = accounting_rows(worker, counts, elapsed_seconds=99.0)
    assert recorded
    assert [row.value for row in final] == [9, 5, 1, 2, 3.0]


def test_csv_cells_leave_missing_values_empty() -> None:
    cells = csv_cells({"metric": "pass_at_k", "k": 2, "value": 0.123456789, "n": 3})
    assert cells == ["pass_at_k", "2", "", "0.123457", "", "", "", "3"]
    assert len(CSV_COLUMNS) == len(cells)


def _turn(
    turn: int, moves: int, valid: int, later: int, consistent: int, chance: float, counted: int
) -> FeedbackUseTurn:
    return FeedbackUseTurn(
        turn=turn, moves=moves, valid=valid, later=later, consistent=consistent,
        chance_sum=chance, chance_counted=counted,
    )  # fmt: skip


def test_feedback_use_of_several_runs_pools_their_moves_turn_by_turn() -> None:
    one = [_turn(1, 4, 3, 0, 0, 0.0, 0), _turn(2, 3, 3, 3, 2, 1.5, 3)]
    other = [_turn(2, 2, 1, 2, 0, 0.0, 0)]
    first, second = pooled_feedback_use([one, other])
    assert first == one[0]
    assert second == _turn(2, 5, 4, 5, 2, 1.5, 3)
    assert (second.consistent_share.successes, second.consistent_share.total) == (2, 5)
    assert second.chance == 0.5, "the mean over the 3 moves that have one, not over 5"


def test_a_feedback_use_table_has_the_turns_with_later_moves_and_says_who_has_none() -> None:
    checked = [_turn(1, 2, 2, 0, 0, 0.0, 0), _turn(3, 2, 2, 2, 1, 0.0, 0)]
    turns, (row, unrecorded) = feedback_use_table([checked, []])
    assert turns == [3], "no move at turn 1 has earlier feedback"
    assert row.recorded and row.cells == [checked[1]]
    assert not unrecorded.recorded and unrecorded.cells == [None]
    assert feedback_use_table([[], []]) == ([], [])
