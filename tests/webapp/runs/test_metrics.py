"""Run metrics counted in the database (the arithmetic: tests/webapp/metrics)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.factories import ProtocolFactory, TaskFactory, TaskSetFactory, frozen_run
from tests.transcript_builders import (
    attempt,
    feedback,
    shard,
    sharded_run,
    store,
    store_sharded_pair,
)
from webapp.metrics.export import CSV_COLUMNS, metric_rows
from webapp.runs import selectors
from webapp.runs.models import Run

# --- Counting in the database ------------------------------------------------------------------


@pytest.mark.django_db
def test_run_metrics_of_the_corpus_run(corpus: dict[str, Any]) -> None:
    """run A: a_first (solved at 1), a_late (solved at 3, one of two feedbacks leaks),
    a_question (a question, then a wrong attempt). Max turns 5 (its protocol)."""
    metrics = selectors.run_metrics(run=corpus["run_a"])
    assert metrics.dialogues == 3 and metrics.max_turns == 5 and not metrics.sharded
    assert [p.accuracy.successes for p in metrics.accuracy_by_turn] == [1, 1, 2, 2, 2]
    assert metrics.single_turn_accuracy is not None
    assert metrics.single_turn_accuracy.successes == 1
    assert metrics.single_turn_accuracy.total == 3
    # Turns to solve 1 and 3: mean 2; resamples of two mean 1, 2 or 3 (a quarter each way).
    assert metrics.turns_to_solve.mean == 2 and metrics.turns_to_solve.count == 2
    assert (metrics.turns_to_solve.low, metrics.turns_to_solve.high) == (1, 3)
    # One sample per task asked for; task one: 2 samples both solved, task two: 1 unsolved.
    assert [(p.k, p.value, p.tasks) for p in metrics.pass_at_k] == [(1, 0.5, 2)]
    counts = metrics.turn_counts
    assert (counts.student_turns, counts.attempts, counts.questions) == (6, 5, 1)
    assert (counts.teacher_turns, counts.leaks) == (3, 1)
    assert metrics.leak_rate.rate == pytest.approx(1 / 3)
    assert metrics.question_rate.rate == pytest.approx(1 / 6)
    assert metrics.dialogues_with_questions.rate == pytest.approx(1 / 3)
    assert metrics.shows_questions
    assert (counts.student_prompt_tokens, counts.teacher_prompt_tokens) == (6, 3)
    [domain] = metrics.by_domain
    assert (domain.group, domain.accuracy.successes, domain.accuracy.total) == ("arithmetic", 2, 3)
    assert domain.mean_turns_to_solve == 2
    assert [row.group for row in metrics.by_difficulty] == ["(none)"]


@pytest.mark.django_db
def test_premature_attempts_and_questions_of_a_sharded_run() -> None:
    task = TaskFactory()
    run = sharded_run(task.task_set)
    store_sharded_pair(run, task.pk)
    # An attempt before any shard turn counts neither way; a single shard is everything.
    store(
        run, task.pk, 2, "b_same", [attempt("?", "", False), shard(1, 1), attempt("7", "7", False)]
    )
    metrics = selectors.run_metrics(run=run)
    assert metrics.sharded
    counts = metrics.turn_counts
    assert (counts.attempts_after_shards, counts.premature_attempts) == (5, 2)
    assert metrics.premature_attempt_rate.rate == 0.4
    assert (counts.questions, counts.student_turns) == (1, 7)
    assert metrics.dialogues_with_questions.successes == 1
    # Solved at round 3 (the question was the student's second turn).
    assert [p.accuracy.successes for p in metrics.accuracy_by_turn] == [0, 0, 1, 1]


@pytest.mark.django_db
def test_breakdowns_by_domain_and_difficulty() -> None:
    task_set = TaskSetFactory()
    easy = TaskFactory(task_set=task_set, domain="arithmetic", difficulty=1.0)
    hard = TaskFactory(task_set=task_set, domain="algebra", difficulty=2.5)
    plain = TaskFactory(task_set=task_set, domain="", difficulty=None)
    run = sharded_run(task_set)  # any run will do; sharded shows the premature query works too
    store(run, easy.pk, 0, "a_first", [attempt("3", "3", True)])
    store(
        run,
        easy.pk,
        1,
        "a_late",
        [attempt("4", "4", False), feedback("no"), attempt("3", "3", True)],
    )
    store(run, hard.pk, 0, "b_same", [attempt("1", "1", False)])
    store(run, plain.pk, 0, "b_solved", [attempt("3", "3", True)])
    metrics = selectors.run_metrics(run=run)
    by_domain = {row.group: row for row in metrics.by_domain}
    assert list(by_domain) == ["algebra", "arithmetic", "(none)"]
    assert (by_domain["arithmetic"].accuracy.successes, by_domain["arithmetic"].accuracy.total) == (
        2,
        2,
    )
    assert by_domain["arithmetic"].mean_turns_to_solve == 1.5
    assert (
        by_domain["algebra"].accuracy.rate == 0 and by_domain["algebra"].mean_turns_to_solve is None
    )
    assert [row.group for row in metrics.by_difficulty] == ["1", "2.5", "(none)"]
    assert [row.accuracy.total for row in metrics.by_difficulty] == [2, 1, 1]


@pytest.mark.django_db
def test_a_solve_after_max_turns_does_not_count() -> None:
    """Solved means solved within the run's max turns, in every metric."""
    task = TaskFactory()
    run = sharded_run(task.task_set, max_turns=2)
    store(run, task.pk, 0, "a_late", [
        attempt("1", "1", False), attempt("2", "2", False), attempt("3", "3", True),
    ])  # fmt: skip
    metrics = selectors.run_metrics(run=run)
    assert [p.accuracy.successes for p in metrics.accuracy_by_turn] == [0, 0]
    assert metrics.pass_at_k[0].value == 0 and metrics.turns_to_solve.count == 0
    assert metrics.by_domain[0].accuracy.successes == 0


def build_run(dialogues: int, *, sharded: bool) -> Run:
    task_set = TaskSetFactory()
    tasks = TaskFactory.create_batch(3, task_set=task_set)
    run = (
        sharded_run(task_set)
        if sharded
        else frozen_run(task_set=task_set, protocol=ProtocolFactory(max_turns=4))
    )
    for number in range(dialogues):
        task = tasks[number % 3]
        if sharded:
            store_sharded_pair(run, task.pk, first_sample=2 * (number // 3))
        else:
            leak = number % 2 == 0
            store(run, task.pk, number // 3, "a_late", [
                attempt("4", "4", False), feedback("no", leak=leak), attempt("3", "3", True),
            ])  # fmt: skip
    return run


@pytest.mark.django_db
@pytest.mark.parametrize(("sharded", "queries"), [(False, 7), (True, 8)])
@pytest.mark.parametrize("dialogues", [1, 30])
def test_metric_queries_do_not_grow_with_dialogues(
    django_assert_num_queries, sharded: bool, queries: int, dialogues: int
) -> None:  # type: ignore[no-untyped-def]
    run = build_run(dialogues, sharded=sharded)
    with django_assert_num_queries(queries):
        metrics = selectors.run_metrics(run=run)
    assert metrics.dialogues == dialogues * (2 if sharded else 1)
    assert metrics.pass_at_k, "pass@k computed"


@pytest.mark.django_db
def test_metric_rows_are_tidy_and_hide_what_does_not_apply(corpus: dict[str, Any]) -> None:
    rows = list(metric_rows(selectors.run_metrics(run=corpus["run_a"])))
    assert all(set(row) <= set(CSV_COLUMNS) for row in rows)
    metrics = [row["metric"] for row in rows]
    assert metrics.count("accuracy_after_turn") == 5
    assert "premature_attempt_rate" not in metrics, "not a sharded run"
    assert "question_rate_per_student_turn" in metrics, "the run has a question"
    third = next(r for r in rows if r["metric"] == "accuracy_after_turn" and r["k"] == 3)
    assert (third["successes"], third["n"]) == (2, 3)
    assert third["low"] < third["value"] < third["high"]
