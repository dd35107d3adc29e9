"""Fixtures shared by the web-side tests."""

from __future__ import annotations

from typing import Any

import pytest

from tests.factories import TaskFactory, TaskSetFactory
from tests.transcript_builders import attempt, feedback, make_run, store, turn


@pytest.fixture
def corpus() -> dict[str, Any]:
    """Five dialogues in two runs over two tasks (in two task sets), one trait each."""
    first_set, second_set = TaskSetFactory(), TaskSetFactory()
    task_one, task_two = TaskFactory(task_set=first_set), TaskFactory(task_set=second_set)
    run_a, run_b = make_run("run A", first_set), make_run("run B", first_set)
    store(run_a, task_one.pk, 0, "a_first", [attempt("The answer is 3.", "3", True)])
    store(run_a, task_one.pk, 1, "a_late", [
        attempt("I think it is 4.", "4", False),
        feedback("Check the carry in the last column."),
        attempt("Still 4.", "4", False),
        feedback("It is three, not four.", leak=True),
        attempt("Then 3.", "3", True),
    ])  # fmt: skip
    store(run_a, task_two.pk, 0, "a_question", [
        turn("student", "question", "Do you mean base ten?"),
        feedback("Yes, base ten."),
        attempt("7", "7", False),
    ])  # fmt: skip
    store(run_b, task_one.pk, 0, "b_same", [
        attempt("Penguins running say 5.", "5", False),
        feedback("Not quite."),
        attempt("5 again.", "5", False),
    ])  # fmt: skip
    store(run_b, task_two.pk, 0, "b_solved", [
        attempt("No idea.", "", False),
        feedback("Add the two numbers."),
        attempt("9", "9", True),
    ])  # fmt: skip
    return {
        "run_a": run_a, "run_b": run_b, "task_one": task_one, "task_two": task_two,
        "first_set": first_set, "second_set": second_set,
    }  # fmt: skip
