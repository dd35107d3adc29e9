"""``/api/v1/task-sets``, ``/models``, ``/protocols``: what a run is launched with, by id and
name, as the launch form offers them (retired models and protocols left out)."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router, Schema

from webapp.api.runs import researcher_only
from webapp.models_registry.selectors import model_choices
from webapp.runs.selectors import protocol_list
from webapp.tasks.selectors import task_set_list

router = Router(tags=["catalog"])


class TaskSetOut(Schema):
    id: int
    name: str
    version: int
    task_count: int


class ModelOut(Schema):
    id: int
    name: str
    backend: str


class ProtocolOut(Schema):
    id: int
    name: str
    mode: str
    max_turns: int


@router.get("/task-sets", response=list[TaskSetOut], summary="Task sets, newest first")
def list_task_sets(request: HttpRequest) -> list[TaskSetOut]:
    researcher_only(request)
    return [
        TaskSetOut(id=s.pk, name=s.name, version=s.version, task_count=s.task_count)  # type: ignore[attr-defined]
        for s in task_set_list()
    ]


@router.get("/models", response=list[ModelOut], summary="Models a run may use")
def list_models(request: HttpRequest) -> list[ModelOut]:
    researcher_only(request)
    return [ModelOut(id=m.pk, name=m.name, backend=m.backend) for m in model_choices()]


@router.get("/protocols", response=list[ProtocolOut], summary="Protocols a run may use")
def list_protocols(request: HttpRequest) -> list[ProtocolOut]:
    researcher_only(request)
    return [
        ProtocolOut(id=p.pk, name=p.name, mode=p.mode, max_turns=p.max_turns)
        for p in protocol_list()
    ]
