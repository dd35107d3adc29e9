"""Writes for the model registry. Every way a model is registered (the models page, the demo,
build_house_model) goes through these, so none can store a credential (see credentials.py) or
parameters its backend would refuse (``models_gpu.spec.backends``)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError

from models_gpu.spec.backends import backend_problems
from webapp.models_registry.credentials import credential_problems
from webapp.models_registry.models import ModelSpec


def model_spec_create(
    *,
    name: str,
    backend: str,
    location: str = "",
    generation_params: dict[str, Any] | None = None,
    description: str = "",
) -> ModelSpec:
    """Register a new model; ValidationError (by field) if it would store a credential or
    parameters its backend refuses."""
    params = generation_params or {}
    _refuse_invalid(backend=backend, location=location, generation_params=params)
    return ModelSpec.objects.create(
        name=name,
        backend=backend,
        location=location,
        generation_params=params,
        description=description,
    )


def model_spec_register(
    *,
    name: str,
    backend: str,
    location: str = "",
    generation_params: dict[str, Any] | None = None,
    description: str = "",
    replace: bool,
) -> tuple[ModelSpec, bool]:
    """The model called ``name`` and whether it was created now. An existing one is updated
    with the given fields when ``replace`` (a rebuilt checkpoint), else left as it is (the demo,
    set up twice). Refuses credentials like ``model_spec_create``, whichever case applies."""
    params = generation_params or {}
    _refuse_invalid(backend=backend, location=location, generation_params=params)
    fields = {
        "backend": backend,
        "location": location,
        "generation_params": params,
        "description": description,
    }
    if replace:
        return ModelSpec.objects.update_or_create(name=name, defaults=fields)
    return ModelSpec.objects.get_or_create(name=name, defaults=fields)


def model_spec_update(
    *,
    model: ModelSpec,
    name: str,
    backend: str,
    location: str = "",
    generation_params: dict[str, Any] | None = None,
    description: str = "",
) -> ModelSpec:
    """Change a registered model, refused like ``model_spec_create``. Safe for the runs that
    used it: each froze the model's backend, location and parameters into its configuration
    at launch, and only runs launched from now on see the change. Lineage is kept."""
    params = generation_params or {}
    _refuse_invalid(backend=backend, location=location, generation_params=params)
    model.name, model.backend, model.location = name, backend, location
    model.generation_params, model.description = params, description
    model.save(update_fields=["name", "backend", "location", "generation_params", "description"])
    return model


def model_spec_set_retired(*, model: ModelSpec, retired: bool) -> ModelSpec:
    """Retire a model (it leaves the launch forms and the default list) or bring it back.
    Never a deletion: runs and trained models still point at it."""
    model.retired = retired
    model.save(update_fields=["retired"])
    return model


def _refuse_invalid(*, backend: str, location: str, generation_params: dict[str, Any]) -> None:
    """A credential anywhere, or what ``models_gpu.spec.backends`` refuses: ValidationError."""
    problems = credential_problems(location=location, generation_params=generation_params)
    if problems:
        raise ValidationError({field: [problem] for field, problem in problems.items()})
    fields = {"backend": "backend", "location": "location", "params": "generation_params"}
    errors: dict[str, list[str]] = {}
    for field, message in backend_problems(backend, location, generation_params):
        errors.setdefault(fields[field], []).append(message)
    if errors:
        raise ValidationError(errors)
