from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from django import forms

from models_gpu.spec.backends import (
    BACKENDS,
    SCRIPTED_POLICIES,
    backend_problems,
)
from webapp.core.json_input import JSONInputField
from webapp.core.redaction import REDACTED, redact
from webapp.models_registry.credentials import (
    location_credential_problem,
    secret_param_names,
    secret_params_problem,
)
from webapp.models_registry.models import ModelSpec

# What the form's fields are, as the services take them.
MODEL_FIELDS = ("name", "backend", "location", "generation_params", "description")


# ModelForm[ModelSpec] would fail at run time: Django's ModelForm is not subscriptable (without
# django_stubs_ext.monkeypatch()).
class ModelSpecForm(forms.ModelForm):  # type: ignore[type-arg]
    """Register a model for any role. Validation follows the backend, with messages that say
    what to write instead; a checkpoint missing on this host is only a warning (see
    ``warnings``), because the worker host that loads it may see other paths."""

    backend = forms.ChoiceField(
        choices=[(name, info.label) for name, info in BACKENDS.items()],
        initial=ModelSpec.Backend.SCRIPTED,
    )
    location = forms.CharField(
        max_length=500,
        required=False,
        help_text=(
            "scripted: a policy ("
            + ", ".join(SCRIPTED_POLICIES)
            + "). transformers / vllm: a checkpoint directory as the worker host sees it "
            "(only warned about when missing here, since GPU hosts may mount it elsewhere). "
            "openai: the endpoint's http(s) base URL, with no user:password@, ?query or #fragment "
            "(a key goes in an environment variable named by api_key_env)."
        ),
    )
    generation_params = JSONInputField(
        required=False,
        initial=dict,
        help_text=(
            "A JSON object of the backend's parameters (known keys under “What each backend "
            "expects”; others are refused). Never paste an API key: name its environment "
            'variable, {"api_key_env": "OPENAI_API_KEY"}, one the operator allows (see below).'
        ),
        widget=forms.Textarea(attrs={"rows": 3}),
    )

    class Meta:
        model = ModelSpec
        fields = ["name", "description", "backend", "location", "generation_params"]
        widgets = {"description": forms.Textarea(attrs={"rows": 2})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.warnings: list[str] = []
        # Editing or cloning a row stored before credentials were refused must not echo its
        # key into the page: the form shows it redacted, and refuses it until it is removed.
        self.initial["location"] = redact(self.initial.get("location") or "")
        self.initial["generation_params"] = _redacted_params(
            self.initial.get("generation_params") or {}
        )

    def model_fields(self) -> dict[str, Any]:
        """The cleaned fields, as ``model_spec_create`` and ``model_spec_update`` take them."""
        return {name: self.cleaned_data[name] for name in MODEL_FIELDS}

    def clean_location(self) -> str:
        return str(self.cleaned_data.get("location") or "").strip()

    def clean_generation_params(self) -> dict[str, Any]:
        params = self.cleaned_data.get("generation_params") or {}
        if not isinstance(params, dict):
            raise forms.ValidationError("Generation parameters must be a JSON object.")
        return params

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        backend: str | None = cleaned.get("backend")
        if backend is None or backend not in BACKENDS or "generation_params" not in cleaned:
            return cleaned
        location = cleaned.get("location", "")
        params = cleaned["generation_params"]
        # A scripted model's location is a policy name, which backend_problems checks.
        if backend in ("transformers", "vllm"):
            self._check_checkpoint(location)
        elif backend == "openai":
            self._check_endpoint(location)
        # Whatever the backend: a location never holds a credential (the services check again).
        problem = location_credential_problem(location)
        if problem and not self.has_error("location"):
            self.add_error("location", problem)
        self._check_params(backend, location, params)
        return cleaned

    def _check_checkpoint(self, location: str) -> None:
        if not location:
            self.add_error("location", "Give the checkpoint directory (a path on the worker).")
            return
        if "://" in location:
            self.add_error(
                "location",
                "A checkpoint is a directory path, not a URL (an HTTP endpoint is the openai "
                "backend).",
            )
            return
        path = Path(location).expanduser()
        if not path.is_dir():
            self.warnings.append(
                f"{location} is not a directory on this web host. That is fine if the worker "
                "hosts see it there; otherwise the run will fail when a worker loads it."
            )
        elif not (path / "config.json").is_file():
            self.warnings.append(
                f"{location} has no config.json: it does not look like a Hugging Face checkpoint."
            )

    def _check_endpoint(self, location: str) -> None:
        url = urlparse(location)
        if url.scheme not in ("http", "https") or not url.netloc:
            self.add_error(
                "location",
                "An OpenAI-compatible endpoint is an http(s) URL, e.g. http://127.0.0.1:8000/v1.",
            )

    def _check_params(self, backend: str, location: str, params: dict[str, Any]) -> None:
        """A credential first (never echoed back), then ``models_gpu.spec.backends``' rules."""
        secrets = secret_params_problem(params)
        if secrets:
            self.add_error("generation_params", secrets)
            return
        fields = {"backend": "backend", "location": "location", "params": "generation_params"}
        for field, message in backend_problems(backend, location, params):
            self.add_error(fields[field], f"{message}.")


def _redacted_params(params: dict[str, Any]) -> dict[str, Any]:
    secrets = set(secret_param_names(params))
    return {name: REDACTED if name in secrets else value for name, value in params.items()}
