"""Feedback use per turn (valid moves, moves consistent with the feedback so far, chance), from
the moves the engine checked and stored on the turns: counted by webapp.runs.selectors, shown
on the run page, exported in the metrics CSV."""

from __future__ import annotations

import pytest

from tests.factories import (
    ProtocolFactory,
    StudentFactory,
    TaskFactory,
    TaskSetFactory,
    TeacherFactory,
    frozen_run,
)
from tests.transcript_builders import attempt, feedback, make_run, move, store, turn
from webapp.dialogues.models import Turn
from webapp.metrics.export import csv_cells, metric_rows
from webapp.metrics.stats import wilson_interval
from webapp.runs import selectors
from webapp.runs.models import Run

pytestmark = pytest.mark.django_db


def guessing_run() -> Run:
    """Four dialogues whose feedback use is known, one of them stored before it was measured.

    turn 1: 2 moves, 1 valid; turn 2: 3 moves (one a dialogue's first), 3 valid, 1 of the 2
    later ones consistent, chance 0.5 and 0.5; turn 3: 2 moves, 1 valid, 1 of 2 consistent,
    chance 0.25 on one (not countable on the other)."""
    task = TaskFactory(domain="guess_number")
    run = make_run("guessing", task.task_set)
    store(run, task.pk, 0, "a_first", [
        move("50", valid=True), feedback("Too high."),
        move("20", valid=True, consistent=True, chance=0.5), feedback("Too low."),
        move("30", valid=True, consistent=True, chance=0.25, correct=True),
    ])  # fmt: skip
    store(run, task.pk, 1, "a_late", [
        move("500", valid=False), feedback("Out of range."),
        move("60", valid=True, consistent=False, chance=0.5), feedback("Too high."),
        move("sixty", valid=False, consistent=False),
    ])  # fmt: skip
    store(run, task.pk, 2, "a_question", [
        turn("student", "question", "Which range?"), feedback("1 to 100."),
        move("40", valid=True),
    ])  # fmt: skip
    store(run, task.pk, 3, "b_same", [attempt("7", "7", False)])  # played before: no check
    return run


def test_feedback_use_is_counted_per_turn_with_intervals() -> None:
    turns = selectors.run_metrics(run=guessing_run()).feedback_use
    counts = [(t.turn, t.moves, t.valid, t.later, t.consistent, t.chance_counted) for t in turns]
    assert counts == [(1, 2, 1, 0, 0, 0), (2, 3, 3, 2, 1, 2), (3, 2, 1, 2, 1, 1)]
    first, second, third = turns
    assert first.valid_share == wilson_interval(1, 2)
    assert first.consistent_share.total == 0 and first.chance is None
    assert second.consistent_share == wilson_interval(1, 2)
    assert round(second.consistent_share.low, 4) == 0.0945
    assert second.chance == pytest.approx(0.5)
    assert third.chance == pytest.approx(0.25), "the mean over the moves that have one"


def test_the_run_page_shows_the_feedback_use_panel(researcher_client) -> None:  # type: ignore[no-untyped-def]
    run = guessing_run()
    page = researcher_client.get(f"/runs/{run.pk}/").content.decode()
    assert 'id="feedback-use-table"' in page
    second = page.split('data-turn="2"')[1].split("</tr>")[0]
    assert "100.0%" in second and "3/3" in second, "valid moves"
    assert "50.0%" in second and "[9.5–90.5%]" in second and "1/2" in second, "consistent"


def test_feedback_use_is_in_the_metrics_csv(researcher_client) -> None:  # type: ignore[no-untyped-def]
    run = guessing_run()
    rows = [csv_cells(row) for row in metric_rows(selectors.run_metrics(run=run))]
    assert ["valid_move_share", "1", "", "0.5", "0.094531", "0.905469", "1", "2"] in rows
    assert ["consistent_move_share", "2", "", "0.5", "0.094531", "0.905469", "1", "2"] in rows
    assert ["consistent_move_chance", "3", "", "0.25", "", "", "", "1"] in rows
    assert not any(r[:2] == ["consistent_move_share", "1"] for r in rows), "no later move at 1"
    download = researcher_client.get(f"/runs/{run.pk}/metrics.csv").content.decode()
    assert "consistent_move_share,2,,0.5,0.094531,0.905469,1,2" in download


def test_a_run_without_checked_moves_has_no_feedback_use_panel(researcher_client) -> None:  # type: ignore[no-untyped-def]
    """Tasks whose feedback cannot be checked, or dialogues played before moves were checked:
    no figure at all, never a 0%."""
    task = TaskFactory()
    run = make_run("unchecked", task.task_set)
    store(run, task.pk, 0, "a_late", [
        attempt("4", "4", False), feedback("No."), attempt("3", "3", True),
    ])  # fmt: skip
    metrics = selectors.run_metrics(run=run)
    assert metrics.feedback_use == []
    assert not any(row["metric"].endswith("_move_share") for row in metric_rows(metrics))
    page = researcher_client.get(f"/runs/{run.pk}/").content.decode()
    assert 'id="feedback-use"' not in page and 'id="plasticity-table"' in page


def test_a_run_the_worker_plays_records_every_judged_move() -> None:
    """The whole path: the engine checks each move of an arithmetic task, the worker stores it
    on the turn, the run's figures count it (every judged attempt is a move; all moves after
    a dialogue's first are "later")."""
    from workers.evaluation import execute_evaluation

    task_set = TaskSetFactory()
    for i in range(6):
        TaskFactory(task_set=task_set, prompt=f"What is {10 + i} + {20 + i}?",
                    reference={"answer": str(30 + 2 * i)})  # fmt: skip
    student = StudentFactory(generation_params={"first_try_accuracy": 0.0, "feedback_gain": 0.4})
    run = frozen_run(
        task_set=task_set, student=student, teacher=TeacherFactory(),
        protocol=ProtocolFactory(max_turns=3), seed=5,
    )  # fmt: skip
    assert execute_evaluation(run.pk, worker="test", background_heartbeat=False)
    turns = selectors.run_metrics(run=run).feedback_use
    attempts = Turn.objects.filter(dialogue__run=run, kind=Turn.Kind.ATTEMPT)
    assert [t.moves for t in turns] == [
        attempts.filter(round=k).count() for k in (1, 2, 3)
    ]  # fmt: skip
    assert turns[0].moves == 6 and turns[0].later == 0
    assert all(t.later == t.moves for t in turns[1:]), "every dialogue's first move is at turn 1"
    assert all(t.chance is None for t in turns), "arithmetic states no range: chance uncounted"
