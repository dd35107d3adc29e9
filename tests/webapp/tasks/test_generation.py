"""Generating task sets from the procedural families, from a form and from the shell."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from webapp.tasks.generation import generation_create
from webapp.tasks.models import TaskImport, TaskSet

pytestmark = pytest.mark.django_db


def test_the_form_shows_the_chosen_familys_knobs(researcher_client) -> None:  # type: ignore[no-untyped-def]
    url = reverse("task_set_generate")
    maze = researcher_client.get(url, {"family": "maze"}, headers={"HX-Request": "true"})
    html = maze.content.decode()
    assert 'name="knob_wall_density"' in html and "<html" not in html
    guess = researcher_client.get(url, {"family": "guess_number"}).content.decode()
    assert 'name="knob_high"' in guess and "knob_wall_density" not in guess


def test_generating_from_the_form_goes_through_a_worker(
    researcher_client, eager_celery, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    form = {
        "family": "maze",
        "count": 12,
        "seed": 3,
        "knob_rows": 5,
        "knob_cols": 7,
        "knob_wall_density": 0.2,
    }
    with django_capture_on_commit_callbacks(execute=True):
        response = researcher_client.post(reverse("task_set_generate"), form)
    task_import = TaskImport.objects.get()
    assert response["Location"] == reverse("task_import_detail", args=[task_import.pk])
    assert task_import.status == TaskImport.Status.SUCCEEDED, task_import.error
    tasks = list(task_import.task_set.tasks.order_by("position"))
    assert len(tasks) == 12 and {t.verifier_kind for t in tasks} == {"maze"}
    assert len(tasks[0].reference["grid"]) == 5
    assert task_import.task_set.name == "maze (12, seed 3)"
    page = researcher_client.get(reverse("task_import_detail", args=[task_import.pk]))
    assert "seed 3" in page.content.decode() and "rows 5" in page.content.decode()


def test_a_generated_set_records_and_shows_what_made_it(
    researcher_client, eager_celery, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    form = {"family": "arithmetic", "count": 4, "seed": 9, "knob_digits": 3, "knob_operations": "+"}
    with django_capture_on_commit_callbacks(execute=True):
        response = researcher_client.post(reverse("task_set_generate"), form)
    result = researcher_client.get(response["Location"]).content.decode()
    assert "<title>Generation · arithmetic (4, seed 9)" in result
    assert "<h1>Generation: arithmetic (4, seed 9)</h1>" in result
    assert 'id="import-status">Generated</span>' in result and "Import:" not in result
    task_set = TaskSet.objects.get()
    assert task_set.provenance == {
        "generator": "arithmetic",
        "count": 4,
        "seed": 9,
        "knobs": {"digits": 3, "operations": "+"},
    }
    page = researcher_client.get(reverse("task_set_detail", args=[task_set.pk])).content.decode()
    assert "family arithmetic · 4 tasks · seed 9 · digits 3 · operations +" in page


def test_versions_and_copies_keep_what_made_the_set(researcher_client) -> None:  # type: ignore[no-untyped-def]
    call_command("generate_tasks", "guess_number", "3", "--seed", "2", "--knob", "high=10")
    original = TaskSet.objects.get()
    assert original.provenance == {
        "generator": "guess_number", "count": 3, "seed": 2, "knobs": {"low": 1, "high": 10},
    }  # fmt: skip
    researcher_client.post(reverse("task_set_duplicate", args=[original.pk]))
    copy = TaskSet.objects.exclude(pk=original.pk).get()
    assert copy.provenance == original.provenance


def test_form_refuses_knobs_out_of_range(researcher_client) -> None:  # type: ignore[no-untyped-def]
    form = {
        "family": "arithmetic",
        "count": 5,
        "seed": 0,
        "knob_digits": 99,
        "knob_operations": "+",
    }
    response = researcher_client.post(reverse("task_set_generate"), form)
    assert "Ensure this value is less than or equal to 12." in response.content.decode()
    assert not TaskImport.objects.exists()


def test_knobs_the_family_refuses_are_shown_on_the_form_and_nothing_is_sent(
    researcher_client, eager_celery, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    form = {"family": "guess_number", "count": 5, "seed": 0, "knob_low": 10, "knob_high": 3}
    with django_capture_on_commit_callbacks(execute=True):
        response = researcher_client.post(reverse("task_set_generate"), form)
    assert "high must be more than low" in response.content.decode()
    assert not TaskImport.objects.exists() and not TaskSet.objects.exists()


def test_the_service_refuses_bad_knobs_whoever_calls_it() -> None:
    with pytest.raises(ValueError, match="rows must be at least 3"):
        generation_create(
            family="maze", count=3, seed=0, knobs={"rows": 1}, task_set_name="m", created_by=None
        )
    assert not TaskImport.objects.exists()


def test_same_seed_same_tasks_from_the_command() -> None:
    call_command("generate_tasks", "arithmetic", "20", "--seed", "5", "--knob", "digits=3")
    call_command("generate_tasks", "arithmetic", "20", "--seed", "5", "--knob", "digits=3")
    first, second = TaskSet.objects.order_by("pk")
    fields = ("position", "prompt", "reference")
    assert list(first.tasks.values_list(*fields)) == list(second.tasks.values_list(*fields))
    assert first.tasks.count() == 20


def test_command_reports_bad_knobs() -> None:
    with pytest.raises(CommandError, match="cannot generate 'maze' tasks"):
        call_command("generate_tasks", "maze", "3", "--knob", "rows=1")
    with pytest.raises(CommandError, match="NAME=VALUE"):
        call_command("generate_tasks", "maze", "3", "--knob", "rows")
    assert not TaskSet.objects.exists()


def test_annotators_cannot_generate(annotator_client) -> None:  # type: ignore[no-untyped-def]
    assert annotator_client.get(reverse("task_set_generate")).status_code == 403
