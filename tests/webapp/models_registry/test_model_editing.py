"""Editing, cloning and retiring models: the runs that used a model keep what they were launched
with, a retired model leaves the launch forms and the list (never the database), and the
parameters read as words, not as a Python dict."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from tests.factories import StudentFactory, frozen_run
from webapp.models_registry import services
from webapp.models_registry.models import ModelSpec
from webapp.models_registry.selectors import parameter_items
from webapp.runs.forms import EvaluationRunForm

pytestmark = pytest.mark.django_db


def model_data(**overrides: Any) -> dict[str, Any]:
    data = {
        "name": "house",
        "description": "",
        "backend": "transformers",
        "location": "/gpu-host/house",
        "generation_params": json.dumps({"max_new_tokens": 8, "temperature": 0.7}),
    }
    return {**data, **overrides}


def test_parameters_read_as_names_and_values(researcher_client) -> None:  # type: ignore[no-untyped-def]
    ModelSpec.objects.create(
        name="house", backend="transformers", location="/ckpt",
        generation_params={"temperature": 0.7, "max_new_tokens": 8, "do_sample": True},
    )  # fmt: skip
    page = researcher_client.get(reverse("model_list")).content.decode()
    assert "{'" not in page and "&#x27;max_new_tokens&#x27;" not in page
    params = page.split('class="model-params"')[1].split("</td>")[0]
    assert "<code>do_sample</code> true" in params
    assert "<code>max_new_tokens</code> 8" in params
    assert "<code>temperature</code> 0.7" in params


def test_parameter_items_sort_by_name_and_hide_what_looks_like_a_key() -> None:
    items = parameter_items({"temperature": 0.7, "api_key": "abc", "stop": ["\n"], "model": "m"})
    assert items == [
        ("api_key", "[redacted]"), ("model", "m"), ("stop", '["\\n"]'), ("temperature", "0.7"),
    ]  # fmt: skip


def test_editing_a_model_leaves_the_runs_that_used_it_as_they_were(researcher_client) -> None:  # type: ignore[no-untyped-def]
    model = StudentFactory(name="student", location="arithmetic-student")
    run = frozen_run(student=model)
    edit_page = researcher_client.get(reverse("model_edit", args=[model.pk])).content.decode()
    assert "keep what they were launched with" in edit_page
    response = researcher_client.post(
        reverse("model_edit", args=[model.pk]),
        model_data(name="student v2", backend="scripted", location="feedback-teacher",
                   generation_params='{"delay_ms": 5}'),
        follow=True,
    )  # fmt: skip
    assert "Saved student v2." in response.content.decode()
    model.refresh_from_db()
    assert (model.name, model.location, model.generation_params) == (
        "student v2", "feedback-teacher", {"delay_ms": 5},
    )  # fmt: skip
    run.refresh_from_db()
    frozen = run.frozen_config.student
    assert (frozen.name, frozen.location, dict(frozen.params)) == (
        "student", "arithmetic-student", {},
    )  # fmt: skip
    run_page = researcher_client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "arithmetic-student" in run_page.split('id="run-student"')[1].split("</dd>")[0]


def test_an_edit_is_refused_like_a_registration(researcher_client) -> None:  # type: ignore[no-untyped-def]
    model = StudentFactory(name="student")
    response = researcher_client.post(
        reverse("model_edit", args=[model.pk]),
        model_data(backend="openai", location="https://host/v1",
                   generation_params='{"model": "m", "api_key": "sk-secret-value"}'),
    )  # fmt: skip
    assert response.status_code == 200
    assert "never stores API keys" in response.content.decode()
    model.refresh_from_db()
    assert model.backend == "scripted" and model.name == "student"
    with pytest.raises(ValidationError):
        services.model_spec_update(
            model=model, name="x", backend="openai", location="https://k:sk-abc@host/v1",
            generation_params={"model": "m"},
        )  # fmt: skip


def test_the_edit_form_does_not_echo_a_key_stored_before_keys_were_refused(
    researcher_client,
) -> None:  # type: ignore[no-untyped-def]
    key = "sk-live-0123456789abcdef"
    model = ModelSpec.objects.create(
        name="legacy", backend="openai", location="https://host/v1",
        generation_params={"model": "m", "api_key": key},
    )  # fmt: skip
    for view in ("model_edit", "model_clone"):
        page = researcher_client.get(reverse(view, args=[model.pk])).content.decode()
        assert key not in page and "[redacted]" in page


def test_clone_is_the_add_form_filled_in_from_the_model(researcher_client) -> None:  # type: ignore[no-untyped-def]
    source = ModelSpec.objects.create(
        name="house", backend="transformers", location="/ckpt", description="base",
        generation_params={"max_new_tokens": 8},
    )  # fmt: skip
    response = researcher_client.get(reverse("model_clone", args=[source.pk]))
    form = response.context["form"]
    assert form["name"].value() == "house (copy)"
    assert (form["location"].value(), form["description"].value()) == ("/ckpt", "base")
    assert json.loads(form["generation_params"].value()) == {"max_new_tokens": 8}
    researcher_client.post(
        reverse("model_clone", args=[source.pk]),
        model_data(name="house, hot", location="/ckpt",
                   generation_params='{"max_new_tokens": 8, "temperature": 1.2}'),
    )  # fmt: skip
    clone = ModelSpec.objects.get(name="house, hot")
    assert clone.pk != source.pk and clone.generation_params["temperature"] == 1.2
    source.refresh_from_db()
    assert source.generation_params == {"max_new_tokens": 8}


def test_a_retired_model_leaves_the_launch_form_and_the_list_but_not_the_database(
    researcher_client,
) -> None:  # type: ignore[no-untyped-def]
    kept, retired = StudentFactory(name="kept"), StudentFactory(name="old student")
    run = frozen_run(student=retired)
    researcher_client.post(reverse("model_retire", args=[retired.pk]), {"retired": "1"})
    retired.refresh_from_db()
    assert retired.retired
    run.refresh_from_db()
    assert run.student_id == retired.pk, "the run still points at it"

    choices = EvaluationRunForm().fields["student"].queryset
    assert list(choices) == [kept]
    page = researcher_client.get(reverse("model_list")).content.decode()
    assert f'id="model-{kept.pk}"' in page and f'id="model-{retired.pk}"' not in page
    assert "Show retired (1)" in page

    page = researcher_client.get(reverse("model_list") + "?retired=1").content.decode()
    assert f'id="model-{retired.pk}"' in page and "Restore" in page
    researcher_client.post(reverse("model_retire", args=[retired.pk]), {"retired": "0"})
    assert set(EvaluationRunForm().fields["student"].queryset) == {kept, retired}


def test_only_researchers_change_models(annotator_client) -> None:  # type: ignore[no-untyped-def]
    model = StudentFactory()
    for view in ("model_edit", "model_clone"):
        assert annotator_client.get(reverse(view, args=[model.pk])).status_code == 403
    response = annotator_client.post(reverse("model_retire", args=[model.pk]), {"retired": "1"})
    assert response.status_code == 403
    model.refresh_from_db()
    assert not model.retired
