"""An annotator's transcript pages name only what their labelling queues hold: the filters offer
(and accept) only those runs, task sets and models, and the compare page only those tasks and
runs. Researchers keep seeing everything."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests.factories import StudentFactory, TaskFactory, TaskSetFactory, UserFactory
from tests.transcript_builders import attempt, feedback, make_run, store
from webapp.annotations.models import LabelSchema
from webapp.annotations.services import queue_create
from webapp.dialogues.models import Dialogue
from webapp.transcripts.forms import DialogueFilterForm

pytestmark = pytest.mark.django_db

# Names that appear nowhere else on the pages, so their absence means something.
HIDDEN = ("bravo-run", "bravo-set", "bravo-model")
SHOWN = ("alpha-run", "alpha-set", "alpha-model")


@pytest.fixture
def two_runs(researcher: Any, annotator: Any) -> dict[str, Any]:
    """Run A (alpha-…) and run B (bravo-…), each on its own task set with its own student;
    run C (charlie-run) plays run A's task too. The annotator's one queue holds A's dialogue."""
    alpha_set, bravo_set = TaskSetFactory(name="alpha-set"), TaskSetFactory(name="bravo-set")
    shared = TaskFactory(task_set=alpha_set, prompt="What is 1 + 2?")
    secret = TaskFactory(task_set=bravo_set, prompt="A bravo-only prompt")
    run_a = make_run("alpha-run", alpha_set, StudentFactory(name="alpha-model"))
    run_b = make_run("bravo-run", bravo_set, StudentFactory(name="bravo-model"))
    run_c = make_run("charlie-run", alpha_set, StudentFactory(name="charlie-model"))
    store(run_a, shared.pk, 0, "a_first", [attempt("3", "3", True)])
    store(run_b, secret.pk, 0, "b_same", [attempt("5", "5", False), feedback("No.")])
    store(run_c, shared.pk, 0, "b_solved", [attempt("3", "3", True)])
    queue_create(
        name="alpha queue", schema=LabelSchema.objects.create(name="visibility"),
        filter_query="", dialogue_ids=[run_a.dialogues.get().pk], annotators=[annotator],
        annotators_per_item=1, created_by=researcher,
    )  # fmt: skip
    return {"run_a": run_a, "run_b": run_b, "run_c": run_c, "shared": shared, "secret": secret}


def signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def page(client: Client, name: str, params: dict[str, Any] | None = None) -> str:
    response = client.get(reverse(name), params or {})
    assert response.status_code == 200
    return response.content.decode()


def test_the_transcript_filters_offer_an_annotator_only_their_queues(
    two_runs: dict[str, Any], annotator: Any, researcher: Any
) -> None:
    html = page(signed_in(annotator), "dialogue_list")
    assert all(name in html for name in SHOWN)
    assert not any(name in html for name in (*HIDDEN, "charlie-run", "charlie-model"))
    # Another run's id in the URL is ignored like an unknown one: no name, no rows of it.
    run_b = two_runs["run_b"]
    response = signed_in(annotator).get(reverse("dialogue_list"), {"run": run_b.pk})
    assert "bravo-run" not in response.content.decode()
    assert [row.pk for row in response.context["page"]] == [two_runs["run_a"].dialogues.get().pk]
    # And its dialogues stay out of reach.
    bravo_dialogue = run_b.dialogues.get()
    detail = reverse("dialogue_detail", args=[bravo_dialogue.pk])
    assert signed_in(annotator).get(detail).status_code == 404

    html = page(signed_in(researcher), "dialogue_list")
    assert all(name in html for name in (*SHOWN, *HIDDEN, "charlie-run"))
    assert signed_in(researcher).get(detail).status_code == 200


def test_an_annotator_s_options_cost_one_query_and_the_page_a_fixed_number(
    two_runs: dict[str, Any], annotator: Any, researcher: Any
) -> None:
    other = UserFactory(username="other-annotator", role="annotator")
    with CaptureQueriesContext(connection) as queries:
        form = DialogueFilterForm({"run": str(two_runs["run_a"].pk)}, reader=annotator)
        assert form.is_valid(), form.errors
        html = "".join(str(form[name]) for name in DialogueFilterForm.MODEL_SELECTS)
    assert len(queries) == 1
    assert "alpha-run" in html and "bravo-run" not in html
    assert annotator.username in html and other.username not in html
    # The query is compiled once for every annotator: each still gets their own options.
    assert "alpha-run" not in "".join(
        str(DialogueFilterForm({}, reader=other)[name]) for name in ("run", "task_set", "student")
    )

    client = signed_in(annotator)
    run_a, shared = two_runs["run_a"], two_runs["shared"]

    def queries_for(count: int) -> int:
        added = []
        for task in TaskFactory.create_batch(count, task_set=shared.task_set):
            store(run_a, task.pk, 0, "a_first", [attempt("3", "3", True)])
            added.append(Dialogue.objects.get(run=run_a, task=task).pk)
        queue_create(
            name=f"more {count}", schema=LabelSchema.objects.get(name="visibility"),
            filter_query="", dialogue_ids=added, annotators=[annotator],
            annotators_per_item=1, created_by=researcher,
        )  # fmt: skip
        with CaptureQueriesContext(connection) as context:
            response = client.get(reverse("dialogue_list"), {"run": run_a.pk, "outcome": "solved"})
        assert len(response.context["page"]) == Dialogue.objects.filter(run=run_a).count()
        return len(context.captured_queries)

    assert queries_for(2) == queries_for(20)


def test_the_compare_page_names_only_an_annotator_s_runs_and_tasks(
    two_runs: dict[str, Any], annotator: Any, researcher: Any
) -> None:
    run_a, run_c, shared = two_runs["run_a"], two_runs["run_c"], two_runs["shared"]
    client = signed_in(annotator)
    mine = {"task": shared.pk, "left_run": run_a.pk, "right_run": run_a.pk}
    html = page(client, "dialogue_compare", mine)
    assert "alpha-run" in html and "alpha-model" in html
    assert "charlie-run" not in html and "charlie-model" not in html  # not in the picker
    # A run, or a task, outside the annotator's queues answers 404 like their dialogues do, so
    # its name or prompt never shows; nor does run B's dialogue.
    run_b, secret = two_runs["run_b"], two_runs["secret"]
    outside = [
        {**mine, "right_run": run_c.pk},
        {"task": secret.pk},
        {"task": secret.pk, "left_run": run_b.pk, "right_run": run_b.pk},
    ]
    for params in outside:
        assert client.get(reverse("dialogue_compare"), params).status_code == 404, params

    researcher_client = signed_in(researcher)
    html = page(researcher_client, "dialogue_compare", {**mine, "right_run": run_c.pk})
    assert "alpha-run" in html and "charlie-run" in html and "charlie-model" in html
    html = page(researcher_client, "dialogue_compare", outside[2])
    assert "bravo-run" in html and "A bravo-only prompt" in html
