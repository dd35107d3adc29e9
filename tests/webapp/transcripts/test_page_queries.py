"""The SQL each transcript page runs: a fixed count, the same for a few rows, turns and runs as
for many, so that no query runs per row, per turn or per run (benchmarks/transcripts.py
measures the time; this keeps the counts it relies on).

Counts are for sessions in the cache (Redis, as the benchmark and deployments use); with the
database session store every page reads its session in one query more.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests.factories import TaskFactory, TaskSetFactory
from tests.transcript_builders import attempt, feedback, make_run, store
from webapp.dialogues import search
from webapp.dialogues.models import Dialogue

SESSION_QUERY = int(settings.SESSION_ENGINE.endswith(".db"))

# The user; then the page's own (webapp/transcripts/views.py): its ids, their count, their rows,
# the filters' options (one UNION) and the dialogues still in play (one sum over the runs). A page
# that is not full needs no count (pagination.py).
LIST_QUERIES = 1 + 5
DIALOGUE_QUERIES = 1 + 3  # the dialogue with its run and task, its turns, the task's other runs

pytestmark = pytest.mark.django_db


def _queries(client: Any, url: str, params: dict[str, Any] | None = None) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url, params or {}).status_code == 200
    return len(captured) - SESSION_QUERY


def _played(run: Any, task_id: int, sample: int, rounds: int) -> None:
    turns = []
    for _ in range(rounds - 1):
        turns += [attempt("The answer is 4.", "4", False), feedback("Carry the one.")]
    store(run, task_id, sample, "a_late", [*turns, attempt("The answer is 3.", "3", True)])


@pytest.mark.parametrize(
    "params",
    [
        {"outcome": "solved", "sort": "-first_correct"},
        {"q": "answer"},  # a word search: the per-dialogue search document
        {"q": '"carry the one"'},  # a phrase: it looks into the turns
    ],
    ids=["filtered and sorted", "word search", "phrase search"],
)
def test_the_list_runs_the_same_queries_for_2_rows_as_for_a_page_and_more(
    researcher_client: Any, params: dict[str, Any]
) -> None:
    task_set = TaskSetFactory()
    runs = [make_run(f"run {n}", task_set) for n in range(4)]

    def grow_to(count: int) -> int:
        while Dialogue.objects.count() < count:
            task = TaskFactory(task_set=task_set)
            for run in runs:
                _played(run, task.pk, 0, rounds=2)
        return _queries(researcher_client, reverse("dialogue_list"), params)

    # A search that looks into each turn reads one row past its page instead of counting; on
    # SQLite every search does (webapp/dialogues/search.py).
    expected = LIST_QUERIES - ("q" in params and connection.vendor != "postgresql")
    not_full = grow_to(2)  # the only page, and so the last: it needs no count either way
    assert grow_to(60) == grow_to(120) == expected
    counts_to_page_end = "q" in params and search.searches_turns(params["q"])
    assert not_full == expected - (not counts_to_page_end)


def test_the_dialogue_page_runs_the_same_queries_for_1_turn_as_for_8_and_for_more_runs(
    researcher_client: Any,
) -> None:
    task_set = TaskSetFactory()
    task = TaskFactory(task_set=task_set)
    first = make_run("first", task_set)
    _played(first, task.pk, 0, rounds=1)
    _played(first, task.pk, 1, rounds=8)
    short, long = Dialogue.objects.filter(run=first).order_by("num_turns")

    def page(dialogue: Dialogue) -> int:
        return _queries(researcher_client, reverse("dialogue_detail", args=[dialogue.pk]))

    assert page(short) == page(long) == DIALOGUE_QUERIES
    for n in range(5):  # other runs of the task, each offered for comparison
        _played(make_run(f"other {n}", task_set), task.pk, 0, rounds=2)
    assert page(long) == DIALOGUE_QUERIES
