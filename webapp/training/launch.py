"""A training launch form, launched: the selection frozen into a snapshot, the whole
configuration checked (``RunConfigError`` naming the form's fields), the run queued; nothing is
kept when a check fails. The launch pages and the API both launch through here."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from django.db import transaction

from models_gpu.spec.online import single_turn_baseline
from models_gpu.spec.run import RunConfig, RunConfigError
from webapp.accounts.models import User
from webapp.runs.models import Run
from webapp.runs.services import evaluation_config
from webapp.training import services
from webapp.training.forms import OnlineTrainingForm, TrainingForm


@transaction.atomic
def training_launch(form: TrainingForm, reader: User) -> Run:
    """Freeze the selection, check the whole configuration, queue the run; nothing is kept when
    a check fails (the transaction rolls back)."""
    data = form.cleaned_data
    snapshot = services.snapshot_create(filter_query=form.selection_query, reader=reader)
    config = services.training_run_config(
        base=data["base_model"],
        snapshot=snapshot,
        training=form.training_config(),
        evaluation=_evaluation(data),
        question_writer=data["question_writer"],
    )
    return services.training_run_create(name=form.run_name(), config=config, created_by=reader)


def _evaluation(data: dict[str, Any]) -> RunConfig:
    """The held-out evaluation the form describes (its problems named by the form's fields)."""
    return _run_config(
        data,
        task_set="eval_task_set",
        protocol="eval_protocol",
        teacher="eval_teacher",
        samples_per_task="eval_samples",
    )


def _run_config(data: dict[str, Any], **fields: str) -> RunConfig:
    """``evaluation_config`` of the base model with the form's ``fields`` (argument name: form
    field); ``RunConfigError`` whose problems name those form fields."""
    try:
        return evaluation_config(
            student=data["base_model"], **{name: data[field] for name, field in fields.items()}
        )
    except RunConfigError as error:
        raise RunConfigError(
            [p._replace(field=fields.get(p.field, p.field)) for p in error.problems]
        ) from None


@transaction.atomic
def online_training_launch(form: OnlineTrainingForm, reader: User) -> Run:
    """Queue the online run (and its single-turn sibling); nothing is kept when a check fails."""
    data = form.cleaned_data
    online = form.online_config()
    rollouts = _run_config(data, task_set="task_set", protocol="protocol", teacher="teacher")
    priming = form.priming_config()
    snapshot = (
        services.snapshot_create(filter_query=form.priming_query, reader=reader)
        if priming is not None
        else None
    )
    config = services.online_training_run_config(
        base=data["base_model"],
        rollouts=rollouts,
        training=form.training_config(),
        online=online,
        evaluation=_evaluation(data),
        priming=priming,
        priming_snapshot=snapshot,
    )
    run = services.training_run_create(name=form.run_name(), config=config, created_by=reader)
    if data["single_turn_baseline"] and online.horizon > 1:
        sibling = replace(config, online=single_turn_baseline(online))
        services.training_run_create(
            name=f"{run.name}: single-turn RL baseline", config=sibling, created_by=reader
        )
    return run
