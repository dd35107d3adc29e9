"""No model stores a credential: not the models page, not the services the demo and commands use."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from webapp.models_registry.forms import ModelSpecForm
from webapp.models_registry.models import ModelSpec
from webapp.models_registry.services import model_spec_create, model_spec_register

pytestmark = pytest.mark.django_db

KEY = "s3cr3t-value-0123456789"
REFUSED_URLS = [
    f"http://127.0.0.1:8000/v1?api_key={KEY}",
    f"https://api.example.com/v1?key={KEY}",
    f"https://api.example.com/v1#access_token={KEY}",
    f"https://api.example.com/v1?X-Amz-Signature={KEY}&region=eu",
    f"https://user:{KEY}@api.example.com/v1",
    f"https://{KEY}@api.example.com/v1",
    # No key at all, yet a query cannot work in a base URL (the client appends its paths).
    "https://api.example.com/v1?api-version=2024-06-01",
    "https://api.example.com/v1#models",
    "https://api.example.com/v1?",
    # A key-shaped path segment.
    "https://api.example.com/sk-abcdefghij0123456789/v1",
    # Percent-encoded: a query, a fragment or userinfo once decoded (twice for double encoding).
    f"http://127.0.0.1:8000/v1%3Fapi_key%3D{KEY}",
    f"http://127.0.0.1:8000/v1%253Fapi_key%253D{KEY}",
    f"http://127.0.0.1:8000/v1%23access_token%3D{KEY}",
    f"https://user%3A{KEY}%40api.example.com/v1",
    "https://api.example.com/v1%3Fapi-version%3D2024-06-01",
    # Encoded more times than are decoded: cannot be checked, so refused.
    f"http://127.0.0.1:8000/v1%25252525253Fapi_key%25252525253D{KEY}",
]


def model_form(location: str, params: dict | None = None) -> ModelSpecForm:
    return ModelSpecForm(
        {"name": "hosted", "backend": "openai", "location": location,
         "generation_params": json.dumps(params or {"model": "m"})}
    )  # fmt: skip


@pytest.mark.parametrize("location", REFUSED_URLS)
def test_the_form_refuses_credentials_anywhere_in_the_url(location: str) -> None:
    form = model_form(location)
    assert not form.is_valid()
    message = " ".join(form.errors["location"])
    # Says where the key belongs instead, and never echoes it back.
    assert 'name it in the parameters, {"api_key_env": "OPENAI_API_KEY"}' in message
    assert "environment variable on the worker" in message
    assert KEY not in message


def test_the_message_says_a_query_cannot_work_and_why() -> None:
    form = model_form(f"http://127.0.0.1:8000/v1?api_key={KEY}")
    assert not form.is_valid()
    message = form.errors["location"][0]
    assert "looks like a key" in message
    assert "base URL alone, with no ?query or #fragment" in message


def test_a_plain_base_url_and_a_named_key_variable_are_accepted() -> None:
    params = {"model": "m", "api_key_env": "DIALAB_MODEL_KEY_LLM"}
    form = model_form("https://api.example.com/v1", params)
    assert form.is_valid(), form.errors


def test_a_checkpoint_whose_name_merely_looks_keyish_is_accepted() -> None:
    form = ModelSpecForm(
        {"name": "c", "backend": "transformers", "location": "/models/sk-learn-baseline-v2",
         "generation_params": "{}"}
    )  # fmt: skip
    assert form.is_valid(), form.errors


@pytest.mark.parametrize(
    "location", ["arithmetic-student?api_key=" + KEY, "feedback-teacher password=" + KEY]
)
def test_other_backends_locations_cannot_hold_a_key_either(location: str) -> None:
    form = ModelSpecForm(
        {"name": "s", "backend": "scripted", "location": location, "generation_params": "{}"}
    )
    assert not form.is_valid()
    assert KEY not in str(form.errors)


def test_the_page_refuses_it_without_storing_or_showing_the_key(researcher_client) -> None:  # type: ignore[no-untyped-def]
    response = researcher_client.post(
        reverse("model_list"),
        {"name": "hosted", "backend": "openai",
         "location": f"http://127.0.0.1:8000/v1?api_key={KEY}",
         "generation_params": '{"model": "m"}'},
    )  # fmt: skip
    page = response.content.decode()
    assert response.status_code == 200
    assert "Dialab never stores API keys" in page
    assert not ModelSpec.objects.exists()


@pytest.mark.parametrize("location", REFUSED_URLS)
def test_the_service_refuses_what_the_form_refuses(location: str) -> None:
    with pytest.raises(ValidationError) as refused:
        model_spec_create(name="hosted", backend="openai", location=location)
    assert "location" in refused.value.message_dict
    assert KEY not in str(refused.value)
    assert not ModelSpec.objects.exists()


@pytest.mark.parametrize(
    "params", [{"model": "m", "api_key": KEY}, {"model": "sk-abcdefghijklmnopqrstu"}]
)
def test_the_service_refuses_keys_in_the_parameters(params: dict) -> None:
    with pytest.raises(ValidationError) as refused:
        model_spec_create(
            name="hosted", backend="openai", location="http://h/v1", generation_params=params
        )
    assert "generation_params" in refused.value.message_dict


def test_register_refuses_even_when_the_model_already_exists() -> None:
    """The demo and build_house_model go through model_spec_register: neither path, creating
    or updating, can write a credential."""
    model, created = model_spec_register(
        name="house",
        backend="openai",
        location="http://h/v1",
        generation_params={"model": "m"},
        replace=True,
    )
    assert created
    for replace in (True, False):
        with pytest.raises(ValidationError):
            model_spec_register(
                name="house",
                backend="openai",
                location=f"http://u:{KEY}@h/v1",
                generation_params={"model": "m"},
                replace=replace,
            )
    model.refresh_from_db()
    assert model.location == "http://h/v1"


def test_the_demo_registers_its_models_through_the_service(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from webapp.demo import services as demo

    registered: list[str] = []
    real = demo.model_spec_register

    def spy(**fields):  # type: ignore[no-untyped-def]
        registered.append(fields["name"])
        return real(**fields)

    monkeypatch.setattr(demo, "model_spec_register", spy)
    demo.demo_project_create(task_count=4, launch_run=False)
    assert len(registered) == 4
    assert set(ModelSpec.objects.values_list("name", flat=True)) == set(registered)


def test_a_url_stored_before_the_check_is_shown_redacted(researcher_client) -> None:  # type: ignore[no-untyped-def]
    # Written straight through the ORM, as a row saved before credentials were refused.
    ModelSpec.objects.create(
        name="legacy", backend="openai", location=f"http://u:{KEY}@h/v1?api_key={KEY}"
    )
    page = researcher_client.get(reverse("model_list")).content.decode()
    assert "legacy" in page
    assert KEY not in page
    assert "[redacted]" in page
