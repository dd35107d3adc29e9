"""Run metrics: the pure arithmetic against hand-computed values, then the database counts."""

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
from webapp.runs import selectors
from webapp.runs.metrics import (
    CSV_COLUMNS,
    TurnCounts,
    accounting_rows,
    csv_cells,
    mean_from_histogram,
    metric_rows,
    pass_at_k,
    pass_at_k_curve,
    wilson_interval,
)
from webapp.runs.models import Run

# --- Pure functions --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("successes", "total", "low", "high"),
    [
        # p = 1/4, z² = 3.8415: centre (0.25 + 0.4802)/1.9604 = 0.3725, margin 0.3269.
        (1, 4, 0.0456, 0.6994),
        # 0/10: the interval still has width (the normal one would be [0, 0]).
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (50, 100, 0.4038, 0.5962),
    ],
)
def test_wilson_interval_matches_hand_computed_values(successes, total, low, high) -> None:  # type: ignore[no-untyped-def]
    interval = wilson_interval(successes, total)
    assert interval.low == pytest.approx(low, abs=1e-4)
    assert interval.high == pytest.approx(high, abs=1e-4)
    assert interval.percent == pytest.approx(100 * successes / total)


def test_wilson_interval_refuses_impossible_counts() -> None:
    with pytest.raises(ValueError, match="successes must be between 0 and total"):
        wilson_interval(5, 4)


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


def test_pass_at_k_curve_averages_over_tasks_with_enough_samples() -> None:
    # Three tasks: 2 samples 1 solved, 2 samples none solved, 1 sample solved (run in progress).
    curve = pass_at_k_curve({(2, 1): 1, (2, 0): 1, (1, 1): 1})
    assert [point.k for point in curve] == [1, 2]
    assert curve[0].value == pytest.approx((0.5 + 0.0 + 1.0) / 3)
    assert curve[0].tasks == 3
    assert curve[1].value == pytest.approx((1.0 + 0.0) / 2)
    assert curve[1].tasks == 2
    assert pass_at_k_curve({}) == []


def test_mean_from_histogram_with_a_normal_interval() -> None:
    # Values 1, 1, 3, 3: mean 2, sample variance 4/3, standard error sqrt(1/3).
    estimate = mean_from_histogram({1: 2, 3: 2})
    assert estimate.mean == 2 and estimate.count == 4
    assert estimate.low == pytest.approx(2 - 1.959964 * (1 / 3) ** 0.5, abs=1e-5)
    assert estimate.high == pytest.approx(2 + 1.959964 * (1 / 3) ** 0.5, abs=1e-5)
    single = mean_from_histogram({2: 1})
    assert (single.mean, single.count, single.low) == (2, 1, None)
    assert mean_from_histogram({}).mean is None


def test_accounting_prefers_the_workers_record_and_falls_back_to_stored_turns() -> None:
    counts = TurnCounts(student_turns=7, teacher_turns=4, student_prompt_tokens=70,
                        teacher_prompt_tokens=40, student_completion_tokens=14,
                        teacher_completion_tokens=8)  # fmt: skip
    live, recorded = accounting_rows({}, counts, elapsed_seconds=12.34)
    assert not recorded
    assert [(row.label, row.value) for row in live] == [
        ("student generations", 7), ("teacher calls", 4), ("prompt tokens", 110),
        ("completion tokens", 22), ("wall time", 12.3),
    ]  # fmt: skip
    worker = {"student_generations": 9, "teacher_calls": 5, "prompt_tokens": 1,
              "completion_tokens": 2, "wall_seconds": 3.0}  # fmt: skip
    final, recorded = accounting_rows(worker, counts, elapsed_seconds=99.0)
    assert recorded
    assert [row.value for row in final] == [9, 5, 1, 2, 3.0]


def test_csv_cells_leave_missing_values_empty() -> None:
    cells = csv_cells({"metric": "pass_at_k", "k": 2, "value": 0.123456789, "n": 3})
    assert cells == ["pass_at_k", "2", "", "0.123457", "", "", "", "3"]
    assert len(CSV_COLUMNS) == len(cells)


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
    # Turns to solve 1 and 3: mean 2, sample variance 2, standard error 1.
    assert metrics.turns_to_solve.mean == 2 and metrics.turns_to_solve.count == 2
    assert metrics.turns_to_solve.low == pytest.approx(2 - 1.959964, abs=1e-5)
    # task one: 2 samples both solved; task two: 1 sample unsolved.
    assert [(p.k, p.value, p.tasks) for p in metrics.pass_at_k] == [(1, 0.5, 2), (2, 1.0, 1)]
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
@pytest.mark.parametrize(("sharded", "queries"), [(False, 6), (True, 7)])
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
