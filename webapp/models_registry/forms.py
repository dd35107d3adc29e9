from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from django import forms

from webapp.models_registry.backends import (
    BACKENDS,
    DEVICE_NAME,
    DTYPES,
    ENV_VAR_NAME,
    SCRIPTED_POLICIES,
    SCRIPTED_POLICY_PARAMS,
)
from webapp.models_registry.credentials import (
    location_credential_problem,
    secret_params_problem,
)
from webapp.models_registry.models import ModelSpec


class ModelSpecForm(forms.ModelForm):
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
    generation_params = forms.JSONField(
        required=False,
        initial=dict,
        help_text=(
            "A JSON object of the backend's parameters (known keys under “What each backend "
            "expects”; others are refused). Never paste an API key: name its environment "
            'variable, {"api_key_env": "OPENAI_API_KEY"}.'
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

    def clean_backend(self) -> str:
        backend: str = self.cleaned_data["backend"]
        if not BACKENDS[backend].available:
            raise forms.ValidationError(
                "The human backend (a person answering in the browser) is not available yet: "
                "choose scripted, transformers, vllm or openai."
            )
        return backend

    def clean_location(self) -> str:
        return str(self.cleaned_data.get("location") or "").strip()

    def clean_generation_params(self) -> dict[str, Any]:
        params = self.cleaned_data.get("generation_params") or {}
        if not isinstance(params, dict):
            raise forms.ValidationError("Generation parameters must be a JSON object.")
        return params

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        backend = cleaned.get("backend")
        if backend not in BACKENDS or "generation_params" not in cleaned:
            return cleaned
        location = cleaned.get("location", "")
        params = cleaned["generation_params"]
        {
            "scripted": self._check_scripted,
            "transformers": self._check_checkpoint,
            "vllm": self._check_checkpoint,
            "openai": self._check_endpoint,
        }[backend](location)
        # Whatever the backend: a location never holds a credential (the services check again).
        problem = location_credential_problem(location)
        if problem and not self.has_error("location"):
            self.add_error("location", problem)
        self._check_params(backend, params)
        if backend == "scripted" and location in SCRIPTED_POLICY_PARAMS:
            taken = {*SCRIPTED_POLICY_PARAMS[location], "delay_ms"}
            others = sorted(set(params) & set(BACKENDS[backend].params) - taken)
            if others:
                self.add_error(
                    "generation_params",
                    f"The {location} policy does not take {', '.join(others)}; it takes "
                    f"{', '.join(sorted(taken))}.",
                )
        return cleaned

    def _check_scripted(self, location: str) -> None:
        if location not in SCRIPTED_POLICIES:
            self.add_error(
                "location",
                f"A scripted model names its policy: one of {', '.join(SCRIPTED_POLICIES)}.",
            )

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

    def _check_params(self, backend: str, params: dict[str, Any]) -> None:
        info = BACKENDS[backend]
        secrets = secret_params_problem(params)
        if secrets:
            self.add_error("generation_params", secrets)
            return
        unknown = sorted(set(params) - set(info.params))
        if unknown:
            self.add_error(
                "generation_params",
                f"Unknown parameter(s) for the {backend} backend: {', '.join(unknown)}. "
                f"Known: {', '.join(info.params) or 'none'}.",
            )
        missing = [key for key in info.required_params if not params.get(key)]
        if missing:
            self.add_error(
                "generation_params",
                f"The {backend} backend needs {', '.join(missing)} in the parameters, e.g. "
                '{"model": "my-model"} (the name the endpoint serves).',
            )
        for key, value in params.items():
            problem = _number_problem(key, value)
            if problem:
                self.add_error("generation_params", problem)
        if "device" in params and not (
            isinstance(params["device"], str) and DEVICE_NAME.fullmatch(params["device"])
        ):
            self.add_error(
                "generation_params",
                f"device must be auto, cpu, cuda or cuda:N (got {params['device']!r}).",
            )
        if "dtype" in params and params["dtype"] not in DTYPES:
            self.add_error(
                "generation_params",
                f"dtype must be one of {', '.join(DTYPES)} (got {params['dtype']!r}).",
            )
        env_name = params.get("api_key_env")
        if env_name is not None and not (
            isinstance(env_name, str) and ENV_VAR_NAME.match(env_name)
        ):
            self.add_error(
                "generation_params",
                "api_key_env names an environment variable (letters, digits, underscores), "
                "e.g. OPENAI_API_KEY: the key itself is never stored.",
            )


# Numeric parameters: (integer only, lowest, highest or None).
_NUMBER_RANGES: dict[str, tuple[bool, float, float | None]] = {
    "max_new_tokens": (True, 1, None),
    "temperature": (False, 0, None),
    "top_p": (False, 0, 1),
    "top_k": (True, -1, None),
    "repetition_penalty": (False, 0, None),
    "first_try_accuracy": (False, 0, 1),
    "feedback_gain": (False, 0, 1),
    "ask_probability": (False, 0, 1),
    "final_accuracy": (False, 0, 1),
    "delay_ms": (False, 0, None),
    "max_model_len": (True, 1, None),
    "micro_batch_size": (True, 1, None),
    "gpu_memory_utilization": (False, 0, 1),
    "tensor_parallel_size": (True, 1, None),
    "timeout_seconds": (False, 0, None),
    "kv_cache_gib": (False, 0, None),
    "max_concurrency": (True, 1, None),
    "max_retries": (True, 0, None),
    "backoff_seconds": (False, 0, None),
}


def _number_problem(key: str, value: Any) -> str | None:
    if key not in _NUMBER_RANGES:
        return None
    integer, lowest, highest = _NUMBER_RANGES[key]
    kind = "a whole number" if integer else "a number"
    wrong_type = isinstance(value, bool) or not isinstance(value, int if integer else (int, float))
    if wrong_type or value < lowest or (highest is not None and value > highest):
        bounds = (
            f"at least {lowest:g}" if highest is None else f"between {lowest:g} and {highest:g}"
        )
        return f"{key} must be {kind}, {bounds} (got {value!r})."
    return None
