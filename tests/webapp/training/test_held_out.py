"""Leakage is caught at launch: a training run whose held-out evaluation shares tasks with its
training data (by prompt and reference: across task sets, versions and duplicates) is refused
with the overlap counted, unless the researcher ticks that it is deliberate; then its results
say "not held out" on the training page (the transfer matrix and the comparison page:
tests/webapp/experiments/test_transfer.py)."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from tests.factories import TaskFactory, TaskSetFactory
from tests.webapp.training.launch_form import form_data
from tests.webapp.training.test_online_form import online_data
from webapp.runs.models import Run
from webapp.training.heldout import training_run_task_keys

pytestmark = pytest.mark.django_db


def test_evaluating_on_the_set_the_dialogues_came_from_is_refused_with_the_overlap(
    researcher_client: Any, world: dict[str, Any]
) -> None:
    """The issue's case: trained on a run's solved dialogues, evaluated on the same task set."""
    url = reverse("training_create")
    refused = researcher_client.post(url, form_data(world, eval_task_set=world["task_set"].pk))
    [error] = refused.context["form"].errors["eval_task_set"]
    assert error.startswith("1 of the 1 tasks of collected sums")
    assert "would not be held out" in error
    assert not Run.objects.filter(kind=Run.Kind.TRAIN).exists()


def test_a_copy_of_a_training_task_in_another_set_counts_as_the_same_task(
    researcher_client: Any, world: dict[str, Any]
) -> None:
    copies = TaskSetFactory(name="held out, v2")
    TaskFactory(task_set=copies, prompt="What is 1 + 2?", reference={"answer": "3"})
    TaskFactory(task_set=copies, prompt="What is 9 + 9?", reference={"answer": "18"})
    TaskFactory(task_set=copies, prompt="What is 1 + 2?", reference={"answer": "4"})  # not it
    refused = researcher_client.post(
        reverse("training_create"), form_data(world, eval_task_set=copies.pk)
    )
    assert refused.context["form"].errors["eval_task_set"][0].startswith("1 of the 3 tasks")


def test_a_deliberate_overlap_launches_and_the_training_page_says_not_held_out(
    researcher_client: Any, world: dict[str, Any]
) -> None:
    launched = researcher_client.post(
        reverse("training_create"),
        form_data(world, eval_task_set=world["task_set"].pk, evaluate_trained_tasks="on"),
    )
    assert launched.status_code == 302
    run = Run.objects.get(kind=Run.Kind.TRAIN)
    assert len(training_run_task_keys(run)) == 1, "the snapshot recorded its tasks"
    page = researcher_client.get(reverse("training_run_detail", args=[run.pk])).content.decode()
    assert 'id="not-held-out"' in page and "1 of the 1 evaluation task are in the" in page


def test_a_held_out_set_launches_without_a_mark(
    researcher_client: Any, world: dict[str, Any]
) -> None:
    assert researcher_client.post(reverse("training_create"), form_data(world)).status_code == 302
    run = Run.objects.get(kind=Run.Kind.TRAIN)
    page = researcher_client.get(reverse("training_run_detail", args=[run.pk])).content.decode()
    assert 'id="not-held-out"' not in page


def test_online_training_refuses_evaluating_on_its_training_tasks(
    researcher_client: Any, world: dict[str, Any]
) -> None:
    url = reverse("training_online_create")
    refused = researcher_client.post(url, online_data(world, eval_task_set=world["task_set"].pk))
    assert "would not be held out" in refused.context["form"].errors["eval_task_set"][0]
    # Priming on dialogues of the held-out set's tasks is training on them too.
    primed = researcher_client.post(
        url,
        online_data(
            world,
            task_set=world["held_out"].pk,
            eval_task_set=world["task_set"].pk,
            priming_selection="outcome=solved",
        ),
    )
    assert "would not be held out" in primed.context["form"].errors["eval_task_set"][0]
    assert not Run.objects.filter(kind=Run.Kind.TRAIN).exists()
