"""In-context plasticity: after each teacher turn, correct answers lost and wrong ones fixed;
and the student's turn kinds by turn (webapp.runs.selectors.run_metrics)."""

from __future__ import annotations

import pytest

from tests.factories import TaskFactory
from tests.transcript_builders import attempt, feedback, make_run, store, turn
from webapp.metrics.export import csv_cells, metric_rows
from webapp.runs import selectors

pytestmark = pytest.mark.django_db


def test_lost_and_fixed_answers_are_counted_by_the_teacher_turn_between_them(
    researcher_client,
) -> None:  # type: ignore[no-untyped-def]
    task = TaskFactory()
    run = make_run("plastic", task.task_set)
    # Correct, then talked out of it: lost after teacher turn 1.
    store(run, task.pk, 0, "a_first", [
        attempt("3", "3", True), feedback("Are you sure?"), attempt("4", "4", False),
    ])  # fmt: skip
    # Wrong, fixed after teacher turn 1, kept after teacher turn 2.
    store(run, task.pk, 1, "a_late", [
        attempt("4", "4", False), feedback("Check it."), attempt("3", "3", True),
        feedback("Sure?"), attempt("3", "3", True),
    ])  # fmt: skip
    # A question first: nothing to compare until two attempts.
    store(run, task.pk, 2, "a_question", [
        turn("student", "question", "Which base?"), feedback("Ten."), attempt("4", "4", False),
    ])  # fmt: skip
    metrics = selectors.run_metrics(run=run)
    first, second = metrics.plasticity
    assert (first.after_turn, first.previously_correct, first.lost) == (1, 1, 1)
    assert (first.previously_wrong, first.fixed) == (1, 1)
    assert (second.after_turn, second.previously_correct, second.lost, second.fixed) == (2, 1, 0, 0)
    kinds = {k.turn: dict(k.counts) for k in metrics.student_turn_kinds}
    assert kinds == {1: {"attempt": 2, "question": 1}, 2: {"attempt": 3}, 3: {"attempt": 1}}
    rows = [csv_cells(row) for row in metric_rows(metrics)]
    lost_row = ["correct_answer_lost_after_teacher_turn", "1", "", "1.0", "0.206549", "1.0"]
    assert lost_row in [cells[:6] for cells in rows]
    page = researcher_client.get(f"/runs/{run.pk}/").content.decode()
    assert 'id="plasticity-table"' in page and "attempt 67% · question 33%" in page
