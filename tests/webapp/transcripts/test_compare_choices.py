"""Comparing runs offers only dialogues that exist, and starts from where the reader is: a
dialogue page offers the other runs' samples of its task; the transcript list's "Compare a task
across runs" carries its filter. Runs are real (launched, played by the worker task and the
engine with scripted models)."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.urls import reverse

from tests.factories import (
    ProtocolFactory,
    StudentFactory,
    TaskFactory,
    TaskSetFactory,
    TeacherFactory,
)
from webapp.dialogues.models import Dialogue

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_runs(play: Any) -> dict[str, Any]:
    """Run "five" played 5 samples of each task, run "four" only 4 (samples 0–3)."""
    task_set = TaskSetFactory()
    tasks = TaskFactory.create_batch(2, task_set=task_set)
    roles = {
        "task_set": task_set, "protocol": ProtocolFactory(), "student": StudentFactory(),
        "teacher": TeacherFactory(),
    }  # fmt: skip
    five = play(name="five", samples_per_task=5, **roles)
    four = play(name="four", samples_per_task=4, **roles)
    return {"five": five, "four": four, "task": tasks[0], "other_task": tasks[1]}


def links_in(page: str, element_id: str) -> list[str]:
    """The hrefs of the list in the element with this id."""
    start = page.index(f'id="{element_id}"')
    end = page.index("</ul>", start)
    return [html.unescape(href) for href in re.findall(r'href="([^"]+)"', page[start:end])]


def compared(client: Any, url: str) -> Any:
    response = client.get(url)
    assert response.status_code == 200
    return response


def test_a_dialogue_page_offers_only_samples_the_other_run_has(
    researcher_client: Any, two_runs: dict[str, Any]
) -> None:
    five, four, task = two_runs["five"], two_runs["four"], two_runs["task"]
    dialogue = Dialogue.objects.get(run=five, task=task, sample_index=4)
    page = researcher_client.get(reverse("dialogue_detail", args=[dialogue.pk])).content.decode()
    offered = [link for link in links_in(page, "compare-with") if "/compare/" in link]
    shown = []
    for link in offered:
        response = compared(researcher_client, link)
        # Both sides of every comparison offered are real dialogues: none is empty.
        assert response.context["left"] == dialogue
        right = response.context["right"]
        assert right is not None and right.run_id == four.pk and right.task_id == task.pk
        shown.append(right.sample_index)
    assert sorted(shown) == [0, 1, 2, 3]  # its every sample, beside this sample 4
    assert "It has no sample 4 of this task." in page and "samples 0–3" in page


def test_a_sample_both_runs_have_is_compared_directly(
    researcher_client: Any, two_runs: dict[str, Any]
) -> None:
    five, four, task = two_runs["five"], two_runs["four"], two_runs["task"]
    dialogue = Dialogue.objects.get(run=four, task=task, sample_index=2)
    page = researcher_client.get(reverse("dialogue_detail", args=[dialogue.pk])).content.decode()
    assert "It has no sample" not in page
    first = links_in(page, "compare-with")[0]
    response = compared(researcher_client, first)
    assert response.context["left"] == dialogue
    assert response.context["right"] == Dialogue.objects.get(run=five, task=task, sample_index=2)


def test_the_compare_page_offers_the_samples_a_run_has_instead_of_an_empty_side(
    researcher_client: Any, two_runs: dict[str, Any]
) -> None:
    five, four, task = two_runs["five"], two_runs["four"], two_runs["task"]
    params = {"task": task.pk, "left_run": five.pk, "right_run": four.pk, "sample": 4}
    response = compared(researcher_client, reverse("dialogue_compare") + "?" + "&".join(
        f"{key}={value}" for key, value in params.items()))  # fmt: skip
    assert response.context["right"] is None
    page = response.content.decode()
    assert "This run has no dialogue of this task with sample 4: it has samples 0–3." in page
    links = re.findall(r'class="sample-link" href="([^"]+)"', page)
    assert len(links) == 4
    for link in links:
        shown = compared(researcher_client, html.unescape(link)).context
        assert shown["left"].sample_index == 4 and shown["right"] is not None


def test_compare_runs_on_the_list_carries_its_run_and_task(
    researcher_client: Any, two_runs: dict[str, Any]
) -> None:
    five, four, task = two_runs["five"], two_runs["four"], two_runs["task"]
    listing = researcher_client.get(reverse("dialogue_list"), {"run": five.pk, "task": task.pk})
    page = listing.content.decode()
    link = re.search(r'id="compare-these" href="([^"]+)"', page)
    assert link, "the list offers Compare runs next to its rows"
    response = compared(researcher_client, html.unescape(link[1]))
    context = response.context
    # The list's run is the left side, its task the task; the other run and the sample are
    # filled in with what exists, so the page compares at once.
    assert context["task"] == task and context["left_run"].pk == five.pk
    assert context["right_run"].pk == four.pk
    assert context["left"].run_id == five.pk and context["right"].run_id == four.pk
    assert context["left"].sample_index == context["right"].sample_index == 0
    assert 'id="compare-prefilled"' in response.content.decode()


def test_compare_runs_from_a_list_of_one_run_offers_its_tasks(
    researcher_client: Any, two_runs: dict[str, Any]
) -> None:
    five, four = two_runs["five"], two_runs["four"]
    page = researcher_client.get(reverse("dialogue_list"), {"run": five.pk}).content.decode()
    link = html.unescape(re.search(r'id="compare-these" href="([^"]+)"', page)[1])  # type: ignore[index]
    choices = compared(researcher_client, link)
    assert [task.pk for task in choices.context["task_choices"]] == [
        two_runs["task"].pk,
        two_runs["other_task"].pk,
    ]
    assert "played by 2 runs" in choices.content.decode()
    for task_link in links_in(choices.content.decode(), "compare-task-choices"):
        shown = compared(researcher_client, task_link).context
        assert shown["left"].run_id == five.pk and shown["right"].run_id == four.pk


def test_the_compare_link_follows_the_filter_the_rows_show(
    researcher_client: Any, two_runs: dict[str, Any]
) -> None:
    """Filtering swaps only the rows (htmx): the link lives with them, so it is redrawn. It
    carries the filter, not the list's page and sort, nor a value the list ignored."""
    four, task = two_runs["four"], two_runs["task"]
    rows = researcher_client.get(
        reverse("dialogue_list"),
        {"run": four.pk, "task": task.pk, "sort": "-run", "page": 1, "turns": "abc"},
        headers={"HX-Request": "true", "HX-Target": "dialogue-rows"},
    ).content.decode()
    link = re.search(r'id="compare-these" href="([^"]+)"', rows)
    assert link and html.unescape(link[1]) == (
        f"{reverse('dialogue_compare')}?run={four.pk}&task={task.pk}"
    )


def test_an_annotator_is_offered_only_the_dialogues_of_their_queues(
    client: Any, annotator: Any, researcher: Any, two_runs: dict[str, Any]
) -> None:
    from webapp.annotations.models import LabelSchema
    from webapp.annotations.services import queue_create

    five, four, task = two_runs["five"], two_runs["four"], two_runs["task"]
    mine = Dialogue.objects.get(run=five, task=task, sample_index=4)
    beside = Dialogue.objects.get(run=four, task=task, sample_index=1)
    queue_create(
        name="q", schema=LabelSchema.objects.first(), filter_query="",
        dialogue_ids=[mine.pk, beside.pk], annotators=[annotator], annotators_per_item=1,
        created_by=researcher,
    )  # fmt: skip
    client.force_login(annotator)
    page = client.get(reverse("dialogue_detail", args=[mine.pk])).content.decode()
    assert "sample 1" in page and "samples 0–3" not in page
    offered = [link for link in links_in(page, "compare-with") if "/compare/" in link]
    assert len(offered) == 1
    shown = compared(client, offered[0]).context
    assert (shown["left"], shown["right"]) == (mine, beside)
