"""Accuracy after turn k while a run plays (issue 16): over the dialogues played to turn k, the
batch in play included, and marked provisional on the run page until the run has succeeded.
The worker's side (recording the batch, a resume replacing it): tests/workers/test_live_rounds.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from tests.factories import TaskFactory
from tests.transcript_builders import attempt, feedback, make_run, store
from webapp.runs.charts import PROVISIONAL_NOTE
from webapp.runs.metrics import BatchInPlay, cumulative_accuracy
from webapp.runs.models import Run


def counts(curve: list[Any]) -> list[tuple[int, int]]:
    return [(point.accuracy.successes, point.accuracy.total) for point in curve]


def test_a_batch_adds_up_its_rounds_and_a_new_one_starts_afresh() -> None:
    batch = BatchInPlay().after_round(1, 8, [1, 1]).after_round(2, 5, [2, None, 2])
    assert batch == BatchInPlay(round=2, going=5, ended=5, solved_at={1: 2, 2: 2})
    assert BatchInPlay.from_json(batch.to_json()) == batch
    assert batch.after_round(1, 9, [1]) == BatchInPlay(1, 9, 1, {1: 1}), "round 1: a new batch"
    assert BatchInPlay.from_json({}) == BatchInPlay(), "nothing recorded: the empty batch"


def test_dialogues_count_for_the_turns_they_were_played_to() -> None:
    """T = 3. Stored: from an earlier batch, one solved at turn 1 and one that ended unsolved at
    max turns; from the batch in play (round 2 played, 3 going), one solved at turn 2 and one
    that ended unsolved at turn 1 (shards exhausted)."""
    batch = BatchInPlay(round=2, going=3, ended=2, solved_at={2: 1})
    curve = cumulative_accuracy(
        first_correct_counts={1: 1, 2: 1}, total=4, max_turns=3, batch=batch
    )
    # Turns 1 and 2: every dialogue, the going ones unsolved so far. Turn 3, not reached by the
    # batch: the earlier batch only (the batch's early enders alone would overstate it).
    assert counts(curve) == [(1, 7), (2, 7), (1, 2)]


def test_a_batch_with_nothing_going_changes_nothing() -> None:
    """A played-out batch (the last round of a run, or one about to be replaced): its ended
    dialogues count for every turn, like all stored ones."""
    played_out = BatchInPlay(round=3, going=0, ended=2, solved_at={2: 1})
    stored = {"first_correct_counts": {1: 1, 2: 1}, "total": 4, "max_turns": 3}
    assert cumulative_accuracy(**stored, batch=played_out) == cumulative_accuracy(**stored)
    assert counts(cumulative_accuracy(**stored)) == [(1, 4), (2, 4), (2, 4)]


@pytest.mark.django_db
def test_the_run_page_marks_figures_provisional_until_the_run_has_succeeded(
    researcher_client,
) -> None:  # type: ignore[no-untyped-def]
    task = TaskFactory()
    run = make_run("live", task.task_set)
    store(run, task.pk, 0, "a_first", [attempt("3", "3", True)])
    store(run, task.pk, 1, "a_late", [attempt("4", "4", False), feedback("no"),
                                       attempt("3", "3", True)])  # fmt: skip
    batch = BatchInPlay(round=2, going=3, ended=2, solved_at={1: 1, 2: 1})
    Run.objects.filter(pk=run.pk).update(
        status=Run.Status.RUNNING, batch_in_play=batch.to_json(), progress_total=10
    )
    response = researcher_client.get(reverse("run_live", args=[run.pk]))
    html = response.content.decode()
    assert 'id="metrics-provisional"' in html and "over the dialogues played to turn k" in html
    assert "Batch in play: round 2 of 5 played, 3 of its dialogues still going (2 ended)" in html
    assert "<td>5 of 10</td><td>5 of 10</td><td>0 of 10</td>" in html, "played to turn k"
    assert "1/5 solved at turn 1" in html
    figure = response.context["figure"]
    assert figure["data"][0]["name"].endswith("(n=5, provisional)")
    assert figure["data"][0]["x"] == [1, 2], "no point for turns no batch has reached"
    assert [note["text"] for note in figure["layout"]["annotations"]][-1] == PROVISIONAL_NOTE

    Run.objects.filter(pk=run.pk).update(
        status=Run.Status.SUCCEEDED, batch_in_play=BatchInPlay(5, 0, 2, {1: 1, 2: 1}).to_json()
    )
    final = researcher_client.get(reverse("run_live", args=[run.pk]))
    html = final.content.decode()
    assert "provisional" not in html.lower() and "Batch in play" not in html
    assert "1/2 solved at turn 1" in html
