"""``/api/v1/models``, ``/protocols``: what a run is launched with, registered and retired as on
the models and protocols pages, through their forms (the same checks and messages) and
services. A retired model or protocol leaves the launch forms; runs that used it keep it."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Router, Schema, Status

from models_gpu.spec.templates import TEMPLATE_NAMES, resolve_templates
from webapp.api.auth import RESEARCHERS, log_write
from webapp.api.common import (
    Id,
    Refused,
    filled_in,
    form_refused,
    refused,
    unknown_names,
)
from webapp.core.redaction import redact
from webapp.models_registry import services as models
from webapp.models_registry.forms import ModelSpecForm
from webapp.models_registry.models import ModelSpec
from webapp.models_registry.selectors import model_choices
from webapp.runs import services as runs
from webapp.runs.forms import ProtocolForm, template_field_name
from webapp.runs.models import Protocol
from webapp.runs.selectors import protocol_list

router = Router(tags=["models and protocols"], auth=RESEARCHERS)


class ModelOut(Schema):
    """A registered model; a credential in its location is shown redacted, as on its page."""

    id: int
    name: str
    backend: str
    location: str
    description: str
    retired: bool
    base_model: int | None
    trained_by_run: int | None
    created_at: datetime


class ModelIn(Schema):
    """A model, as the models page's form takes it: the backend's rules apply (a checkpoint
    directory for transformers and vLLM, a policy for scripted, an http(s) endpoint for
    openai), and ``generation_params`` never holds a key (name its environment variable in
    ``api_key_env``)."""

    name: str
    backend: str
    location: str = ""
    generation_params: dict[str, Any] = {}
    description: str = ""


class ModelRegistered(ModelOut):
    """``warnings``: what the page would warn of (a checkpoint not found on the web host)."""

    warnings: list[str]


class Retire(Schema):
    """``retired: false`` brings it back."""

    retired: bool = True


class ProtocolOut(Schema):
    id: int
    name: str
    mode: str
    max_turns: int
    teacher_sees_reference: bool
    teacher_sees_verifier_details: bool
    self_correction: str
    regenerate_leaks: int
    judge_turn_kinds: bool
    judge_leaks: bool
    retired: bool
    templates: dict[str, str]


class ProtocolIn(Schema):
    """A protocol, as the protocols page's form takes it; settings left out take the form's
    defaults, templates left out the default templates (``GET /protocols`` shows them)."""

    name: str
    mode: str | None = None
    max_turns: int | None = None
    teacher_sees_reference: bool | None = None
    teacher_sees_verifier_details: bool | None = None
    self_correction: str | None = None
    regenerate_leaks: int | None = None
    judge_turn_kinds: bool | None = None
    judge_leaks: bool | None = None
    templates: dict[str, str] = {}


def _model_out(model: ModelSpec) -> dict[str, Any]:
    return {
        "id": model.pk,
        "name": model.name,
        "backend": model.backend,
        "location": redact(model.location),
        "description": model.description,
        "retired": model.retired,
        "base_model": model.base_model_id,
        "trained_by_run": model.trained_by_run_id,
        "created_at": model.created_at,
    }


def _protocol_out(protocol: Protocol) -> ProtocolOut:
    settings = {name: getattr(protocol, name) for name in runs.PROTOCOL_SETTINGS}
    return ProtocolOut(
        id=protocol.pk,
        name=protocol.name,
        retired=protocol.retired,
        templates=dict(resolve_templates(protocol.prompt_templates)),
        **settings,
    )


@router.get("/models", response=list[ModelOut], summary="Models a run may use")
def list_models(request: HttpRequest, include_retired: bool = False) -> list[dict[str, Any]]:
    found = ModelSpec.objects.order_by("name") if include_retired else model_choices()
    return [_model_out(model) for model in found]


@router.post("/models", response={201: ModelRegistered, 422: Refused}, summary="Register a model")
def register_model(request: HttpRequest, model: ModelIn) -> Status[Any]:
    data = {**model.dict(), "generation_params": json.dumps(model.generation_params)}
    form = ModelSpecForm(data)
    if not form.is_valid():
        return form_refused(form, "The model was not registered.")
    try:
        created = models.model_spec_create(**form.model_fields())
    except ValidationError as error:  # the form checks the same first; as the page does
        form.add_error(None, error)
        return form_refused(form, "The model was not registered.")
    log_write(request, f"register model {created.pk}")
    return Status(201, {**_model_out(created), "warnings": form.warnings})


@router.post("/models/{model_id}/retire", response=ModelOut, summary="Retire or restore a model")
def retire_model(request: HttpRequest, model_id: Id, body: Retire) -> dict[str, Any]:
    model = get_object_or_404(ModelSpec, pk=model_id)
    models.model_spec_set_retired(model=model, retired=body.retired)
    log_write(request, f"{'retire' if body.retired else 'restore'} model {model.pk}")
    return _model_out(model)


@router.get("/protocols", response=list[ProtocolOut], summary="Protocols a run may use")
def list_protocols(request: HttpRequest, include_retired: bool = False) -> list[ProtocolOut]:
    return [_protocol_out(p) for p in protocol_list(include_retired=include_retired)]


@router.post("/protocols", response={201: ProtocolOut, 422: Refused}, summary="Create a protocol")
def create_protocol(request: HttpRequest, protocol: ProtocolIn) -> Status[Any]:
    """Through the protocols page's form: the protocol's rules (``models_gpu.spec.protocol``)
    refused on their fields."""
    unknown = unknown_names(protocol.templates, TEMPLATE_NAMES, "template")
    if unknown:
        return refused("The protocol was not created.", {"templates": unknown})
    settings = protocol.dict(exclude={"templates"})
    templates = {template_field_name(name): text for name, text in protocol.templates.items()}
    data = filled_in(ProtocolForm(), settings | templates)
    form = ProtocolForm(data)
    if not form.is_valid():
        return form_refused(form, "The protocol was not created.")
    created = runs.protocol_create(name=form.cleaned_data["name"], spec=form.protocol_spec())
    log_write(request, f"create protocol {created.pk}")
    return Status(201, _protocol_out(created))


@router.post(
    "/protocols/{protocol_id}/retire", response=ProtocolOut, summary="Retire or restore a protocol"
)
def retire_protocol(request: HttpRequest, protocol_id: Id, body: Retire) -> ProtocolOut:
    protocol = get_object_or_404(Protocol, pk=protocol_id)
    runs.protocol_set_retired(protocol=protocol, retired=body.retired)
    log_write(request, f"{'retire' if body.retired else 'restore'} protocol {protocol.pk}")
    return _protocol_out(protocol)
