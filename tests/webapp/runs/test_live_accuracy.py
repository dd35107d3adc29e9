"""The run page while a run plays and after it stopped early: every figure over the dialogues
it counts (webapp.metrics.partial), one denominator for every turn, marked partial until the
run has succeeded. The worker's side (recording the batch, a resume carrying it):
tests/workers/test_live_rounds.py."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from tests.factories import TaskFactory
from tests.transcript_builders import attempt, feedback, make_run, store
from webapp.metrics.partial import BatchInPlay
from webapp.runs import selectors
from webapp.runs.models import Run


def counts(curve: list[Any]) -> list[tuple[int, int] | None]:
    return [None if p.accuracy is None else (p.accuracy.successes, p.accuracy.total) for p in curve]


@pytest.fixture
def two_batches(db: None) -> Run:
    """T = 5. A finished batch of two (one solved at turn 1, one unsolved), then a batch in play
    at turn 2: one of its dialogues solved at turn 2 and stored, three still going."""
    task = TaskFactory()
    run = make_run("live", task.task_set)
    store(run, task.pk, 0, "a_first", [attempt("3", "3", True)])
    store(run, task.pk, 1, "b_same", [attempt("4", "4", False), feedback("no"),
                                     attempt("5", "5", False)])  # fmt: skip
    store(run, task.pk, 2, "a_late", [attempt("4", "4", False), feedback("no"),
                                      attempt("3", "3", True)])  # fmt: skip
    batch = BatchInPlay(round=2, going=3, ended=1)
    Run.objects.filter(pk=run.pk).update(
        status=Run.Status.RUNNING, batch_in_play=batch.to_json(), progress_total=10
    )
    return Run.objects.get(pk=run.pk)


def test_a_running_run_counts_its_finished_batches_for_every_turn(
    two_batches: Run, researcher_client
) -> None:  # type: ignore[no-untyped-def]
    metrics = selectors.run_metrics(run=two_batches)
    assert counts(metrics.accuracy_by_turn) == [(1, 2)] * 5, "the batch in play waits"
    assert metrics.counted.stored_not_counted == 1
    html = researcher_client.get(reverse("run_live", args=[two_batches.pk])).content.decode()
    assert (
        'id="metrics-partial"' in html and "2 of 10 dialogues (the batches that finished)" in html
    )
    assert "1 dialogue of the batch in play ended early and is stored but not counted" in html
    assert "Batch in play: turn 2 of 5 played, 3 of its dialogues still going (1 ended)" in html


def test_what_a_partial_run_spent_counts_every_stored_turn(two_batches: Run) -> None:
    """Spending is what was played, counted dialogues or not: the batch in play's stored turns
    count (a failed run showed 92 student generations for 95 played)."""
    metrics = selectors.run_metrics(run=two_batches)
    assert metrics.turn_counts.student_turns == 3, "the counted dialogues' turns"
    assert metrics.turn_counts.stored_student_turns == 5, "every stored turn"
    summary = selectors.run_summaries(runs=[two_batches])[two_batches.pk]
    assert summary.spent.student_generations == 5 and summary.spent.teacher_calls == 2


def test_the_first_batch_counts_for_the_turns_it_has_played(db: None, researcher_client) -> None:  # type: ignore[no-untyped-def]
    task = TaskFactory()
    run = make_run("first batch", task.task_set)
    store(run, task.pk, 0, "a_first", [attempt("3", "3", True)])
    batch = BatchInPlay(round=2, going=3, ended=1)
    Run.objects.filter(pk=run.pk).update(
        status=Run.Status.RUNNING, batch_in_play=batch.to_json(), progress_total=4
    )
    response = researcher_client.get(reverse("run_live", args=[run.pk]))
    assert counts(response.context["metrics"].accuracy_by_turn) == [(1, 4), (1, 4)] + [None] * 3
    html = response.content.decode()
    assert "the 4 dialogues of the batch in play, through turn 2" in html
    assert 'id="whole-dialogue-figures-later"' in html and 'id="metric-turns"' not in html
    summary = selectors.run_summaries(runs=[Run.objects.get(pk=run.pk)])[run.pk]
    assert summary.question_rate.total == 0 and summary.leak_rate.total == 0, "not known yet"
    figure = response.context["figure"]
    assert figure["data"][0]["name"].endswith("(n=4, partial)")
    assert figure["data"][0]["x"] == [1, 2], "no point for turns the batch has not played"


def test_a_cancelled_run_never_shows_a_curve_that_drops(db: None, researcher_client) -> None:  # type: ignore[no-untyped-def]
    """The issue's case: cancelled with 32 dialogues of finished batches (none solved) and a
    batch cut short at turn 4 whose 4 early solves were stored and 12 were still going. It read
    2.1, 2.1, 6.3, 8.3 then 0.0% after turn 5; the runs table said "Turn T 0.0%"."""
    task = TaskFactory()
    run = make_run("cancelled", task.task_set)
    for sample in range(32):
        store(run, task.pk, sample, "b_same", [attempt("4", "4", False)])
    for sample, turn in zip(range(32, 36), (1, 3, 3, 4), strict=True):
        wrong = [
            item for _ in range(turn - 1) for item in (attempt("4", "4", False), feedback("no"))
        ]
        turns = [*wrong, attempt("3", "3", True)]
        store(run, task.pk, sample, "a_late", turns)
    batch = BatchInPlay(round=4, going=12, ended=4)
    Run.objects.filter(pk=run.pk).update(
        status=Run.Status.CANCELLED, batch_in_play=batch.to_json(), progress_total=100
    )
    run.refresh_from_db()
    metrics = selectors.run_metrics(run=run)
    assert counts(metrics.accuracy_by_turn) == [(0, 32)] * 5
    assert metrics.by_domain[0].accuracy.total == 32, "every figure over the same dialogues"
    summary = selectors.run_summaries(runs=[run])[run.pk]
    assert summary.final_accuracy == metrics.final_accuracy, "the runs table agrees"
    html = researcher_client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "32 of 100 dialogues" in html and "without their batch-mates" in html


def test_once_the_run_has_succeeded_nothing_is_partial(two_batches: Run, researcher_client) -> None:  # type: ignore[no-untyped-def]
    Run.objects.filter(pk=two_batches.pk).update(
        status=Run.Status.SUCCEEDED, batch_in_play=BatchInPlay(5, 0, 1).to_json()
    )
    response = researcher_client.get(reverse("run_live", args=[two_batches.pk]))
    html = response.content.decode()
    assert "partial" not in html.lower() and "Batch in play" not in html
    assert counts(response.context["metrics"].accuracy_by_turn)[1] == (2, 3)
