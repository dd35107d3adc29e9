"""Registering models: every runnable backend, per-backend validation, no stored API keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.urls import reverse

from webapp.models_registry.forms import ModelSpecForm
from webapp.models_registry.models import ModelSpec

pytestmark = pytest.mark.django_db

# A variable the operator's default rule allows a model to name (models_gpu.spec.credentials).
KEY_ENV = "DIALAB_MODEL_KEY_MINE"


def form(backend: str, location: str, params: dict | str | None = None) -> ModelSpecForm:
    text = params if isinstance(params, str) else json.dumps(params or {})
    return ModelSpecForm(
        {"name": f"{backend} model", "backend": backend, "location": location,
         "generation_params": text}
    )  # fmt: skip


def errors(model_form: ModelSpecForm) -> str:
    assert not model_form.is_valid()
    return " ".join(message for messages in model_form.errors.values() for message in messages)


def test_each_backend_registers_with_a_valid_location(tiny_model_dir: Path) -> None:
    accepted = [
        form("scripted", "arithmetic-student", {"first_try_accuracy": 0.5, "delay_ms": 20}),
        form("transformers", str(tiny_model_dir), {"max_new_tokens": 32, "temperature": 0}),
        form("vllm", str(tiny_model_dir), {"dtype": "float32", "kv_cache_gib": 1}),
        form("openai", "http://127.0.0.1:8000/v1", {"model": "tiny", "api_key_env": KEY_ENV}),
    ]
    for model_form in accepted:
        assert model_form.is_valid(), model_form.errors
        assert model_form.warnings == [], "an existing checkpoint gives no warning"
        model_form.save()
    assert set(ModelSpec.objects.values_list("backend", flat=True)) == {
        "scripted", "transformers", "vllm", "openai"
    }  # fmt: skip


def test_a_checkpoint_missing_on_the_web_host_is_a_warning_not_an_error() -> None:
    model_form = form("transformers", "/models/on-the-gpu-host/house")
    assert model_form.is_valid(), model_form.errors
    assert "not a directory on this web host" in model_form.warnings[0]


def test_a_directory_that_is_not_a_checkpoint_is_a_warning(tmp_path: Path) -> None:
    model_form = form("vllm", str(tmp_path))
    assert model_form.is_valid(), model_form.errors
    assert "no config.json" in model_form.warnings[0]


@pytest.mark.parametrize(
    ("backend", "location", "params", "message"),
    [
        ("scripted", "gpt-4", {}, "a scripted model names its policy"),
        (
            "scripted",
            "feedback-teacher",
            {"temperature": 2},
            "unknown parameter(s) temperature; known: delay_ms",
        ),
        (
            "scripted",
            "feedback-teacher",
            {"first_try_accuracy": 0.5},
            "unknown parameter(s) first_try_accuracy",
        ),
        ("transformers", "", {}, "Give the checkpoint directory"),
        ("transformers", "http://host/model", {}, "A checkpoint is a directory path, not a URL"),
        (
            "transformers",
            "/ckpt",
            {"max_new_tokens": 0},
            "max_new_tokens must be at least 1 (got 0)",
        ),
        ("transformers", "/ckpt", {"temperature": "hot"}, "temperature must be a finite number"),
        ("vllm", "/ckpt", {"gpu_memory_utilization": 1.5}, "more than 0 and at most 1"),
        ("transformers", "/ckpt", {"device": "gpu0"}, "device must be auto, cpu, cuda or cuda:N"),
        ("vllm", "/ckpt", {"dtype": "int4"}, "dtype must be one of auto, float32"),
        ("openai", "127.0.0.1:8000/v1", {"model": "m"}, "an http(s) URL"),
        ("openai", "ftp://host/v1", {"model": "m"}, "an http(s) URL"),
        ("openai", "https://user:pw@host/v1", {"model": "m"}, "Leave credentials out of the URL"),
        ("openai", "https://host/v1", {}, "model is required"),
        ("openai", "https://host/v1", {"model": "m", "api_key": "abc"}, "never stores API keys"),
        ("openai", "https://host/v1", {"model": "m", "OPENAI_API_KEY": "x"}, "never stores API"),
        ("openai", "https://host/v1", {"model": "m", "auth_token": "x"}, "never stores API keys"),
        ("openai", "https://host/v1", {"model": "m", "api_key_env": "sk-abc123"}, "never stores"),
        (
            "openai",
            "https://host/v1",
            {"model": "m", "api_key_env": "MY KEY"},
            "api_key_env must be the NAME of an environment variable",
        ),
        ("openai", "https://host/v1", "[1, 2]", "must be a JSON object"),
    ],
)
def test_bad_registrations_are_refused_with_a_clear_message(
    backend: str, location: str, params: dict | str, message: str
) -> None:
    assert message in errors(form(backend, location, params))


def test_the_page_registers_a_model_and_shows_the_warning(researcher_client) -> None:  # type: ignore[no-untyped-def]
    response = researcher_client.post(
        reverse("model_list"),
        {"name": "house", "backend": "transformers", "location": "/gpu-host/house",
         "generation_params": '{"max_new_tokens": 64}'},
        follow=True,
    )  # fmt: skip
    page = response.content.decode()
    assert "Added house." in page
    assert "not a directory on this web host" in page
    assert ModelSpec.objects.get(name="house").generation_params == {"max_new_tokens": 64}


def test_a_refused_key_is_not_stored_and_not_echoed_back(researcher_client) -> None:  # type: ignore[no-untyped-def]
    response = researcher_client.post(
        reverse("model_list"),
        {"name": "hosted", "backend": "openai", "location": "https://api.example.com/v1",
         "generation_params": '{"model": "m", "api_key": "sk-secret-value"}'},
    )  # fmt: skip
    assert "never stores API keys" in response.content.decode()
    assert not ModelSpec.objects.exists()


def test_the_page_lists_every_backend_and_its_parameters(researcher_client) -> None:  # type: ignore[no-untyped-def]
    page = researcher_client.get(reverse("model_list")).content.decode()
    for name in ("scripted", "transformers", "vllm", "openai"):
        assert f'<option value="{name}"' in page
    assert "api_key_env" in page and "max_new_tokens" in page and "shard-revealer" in page
