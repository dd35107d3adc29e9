"""Writes for training: freeze a selection into a dataset snapshot, launch a training run
(web side); record its curves, register the trained model and evaluate it (worker side)."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from django.conf import settings
from django.db import transaction

from models_gpu.spec.online import OnlineConfig
from models_gpu.spec.reports import PreviewResult
from models_gpu.spec.run import RoleSpec, RunConfig, RunConfigError
from models_gpu.spec.training import TrainingConfig, TrainingDialogue
from models_gpu.spec.training_run import (
    NOTHING_TO_TRAIN,
    DatasetRef,
    TrainingRunConfig,
    training_run_problems,
)
from webapp.accounts.models import User
from webapp.core import queues
from webapp.core.dispatch import enqueue_on_commit
from webapp.core.interactive_jobs import JobRecovery, job_claim, jobs_recover
from webapp.models_registry.models import ModelSpec
from webapp.runs import services as runs
from webapp.runs.models import MetricPoint, Run
from webapp.training.heldout import selection_task_keys
from webapp.training.models import DatasetSnapshot, TrainingPreview
from webapp.training.selectors import (
    previews_waiting,
    selection_counts,
    selection_dialogues,
    training_dialogues,
)

# A priming stage's curves are the fine-tuning ones under this prefix ("priming_loss", ...).


class EmptySelection(ValueError):
    """The filter selects no dialogue: there is nothing to train on."""


def snapshot_create(*, filter_query: str, reader: User, name: str = "") -> DatasetSnapshot:
    """Freeze the dialogues ``filter_query`` (the transcript list's query string) selects for
    ``reader`` into a snapshot file, streamed from the database; ``EmptySelection`` when none
    matches. The file is named by its sha256, so identical selections share one file. Unnamed,
    the snapshot is named by what selected it."""
    dialogues = selection_dialogues(selection=filter_query, reader=reader)
    counts = selection_counts(dialogues)
    if counts.dialogues == 0:
        raise EmptySelection(NOTHING_TO_TRAIN)
    sha256, path = _write_snapshot(training_dialogues(dialogues))
    return DatasetSnapshot.objects.create(
        task_keys=sorted(selection_task_keys(dialogues)),
        name=name or f"{counts.dialogues} dialogues selected by ?{filter_query}",
        filter_query=filter_query,
        dialogue_count=counts.dialogues,
        turn_count=counts.turns,
        student_turn_count=counts.student_turns,
        source_runs=counts.runs,
        sha256=sha256,
        path=str(path),
        created_by=reader,
    )


def _write_snapshot(dialogues: Iterable[TrainingDialogue]) -> tuple[str, Path]:
    directory = Path(settings.DIALAB_DATASETS_DIR)
    directory.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    handle, temporary = tempfile.mkstemp(dir=directory, suffix=".part")
    try:
        with os.fdopen(handle, "wb") as out:
            for dialogue in dialogues:
                line = json.dumps(dialogue.to_json(), sort_keys=True, ensure_ascii=False)
                data = (line + "\n").encode()
                digest.update(data)
                out.write(data)
        final = directory / f"{digest.hexdigest()}.jsonl"
        os.replace(temporary, final)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return digest.hexdigest(), final


def dataset_ref(snapshot: DatasetSnapshot) -> DatasetRef:
    return DatasetRef(
        id=snapshot.pk,
        name=snapshot.name,
        dialogues=snapshot.dialogue_count,
        sha256=snapshot.sha256,
        path=snapshot.path,
    )


def _role_spec(model: ModelSpec) -> RoleSpec:
    """``runs.role_spec`` of a model that is there (a base, a trained model): never None."""
    spec = runs.role_spec(model)
    assert spec is not None
    return spec


def training_run_config(
    *,
    base: ModelSpec,
    snapshot: DatasetSnapshot,
    training: TrainingConfig,
    evaluation: RunConfig,
    question_writer: ModelSpec | None = None,
) -> TrainingRunConfig:
    """The frozen configuration of a training run; ``RunConfigError`` listing every problem
    (by field) when it could not run."""
    config = TrainingRunConfig(
        base=_role_spec(base),
        dataset=dataset_ref(snapshot),
        training=training,
        evaluation=evaluation,
        question_writer=runs.role_spec(question_writer),
    )
    problems = training_run_problems(config)
    if problems:
        raise RunConfigError(problems)
    return config


def online_training_run_config(
    *,
    base: ModelSpec,
    rollouts: RunConfig,
    training: TrainingConfig,
    online: OnlineConfig,
    evaluation: RunConfig,
    priming: TrainingConfig | None = None,
    priming_snapshot: DatasetSnapshot | None = None,
) -> TrainingRunConfig:
    """The frozen configuration of an online SML run: ``rollouts`` says which tasks the base
    model plays while it trains, under which protocol, with which teacher; with ``priming``, a
    priming stage on ``priming_snapshot`` comes first. ``RunConfigError`` listing every problem
    when it could not run."""
    config = TrainingRunConfig(
        base=_role_spec(base),
        dataset=dataset_ref(priming_snapshot) if priming_snapshot else None,
        training=training,
        evaluation=evaluation,
        online=online,
        rollouts=rollouts,
        priming=priming,
    )
    problems = training_run_problems(config)
    if problems:
        raise RunConfigError(problems)
    return config


@transaction.atomic
def training_run_create(*, name: str, config: TrainingRunConfig, created_by: User | None) -> Run:
    """Create a queued training run and dispatch it (on the batch queue) after commit."""
    evaluation = config.evaluation
    assert evaluation is not None, "a training run is evaluated on held-out tasks"
    protocol_id, student_id = evaluation.protocol.id, config.base.id
    assert protocol_id is not None and student_id is not None, "made from the database's rows"
    run = Run.objects.create(
        name=name,
        kind=Run.Kind.TRAIN,
        task_set_id=evaluation.task_set.id,
        protocol_id=protocol_id,
        student_id=student_id,
        config=config.to_json(),
        config_hash=config.config_hash(),
        created_by=created_by,
        queue=queues.run_queue(people=False),
    )
    runs.run_dispatch_on_commit(run_id=run.pk, kind=run.kind, queue=run.queue)
    return run


PREVIEW_TASK = "workers.tasks.training_preview"  # interactive: it only tokenizes


@transaction.atomic
def preview_create(
    *, selection: str, base_model: ModelSpec, training: TrainingConfig, created_by: User
) -> TrainingPreview:
    """Ask a worker what this launch would train on (``TrainingPreview``)."""
    preview = TrainingPreview.objects.create(
        selection=selection,
        base_model=base_model,
        training_config=training.to_json(),
        created_by=created_by,
    )
    enqueue_on_commit(PREVIEW_TASK, preview.pk)
    return preview


def preview_claim(*, preview_id: int) -> bool:
    """Take the preview (``webapp.core.interactive_jobs.job_claim``); False once it has its
    answer, so that a message sent again does nothing then."""
    return job_claim(TrainingPreview, preview_id)


def previews_recover() -> JobRecovery:
    """Send again the previews whose worker died while building them (``jobs_recover``)."""
    return jobs_recover(TrainingPreview, task_name=PREVIEW_TASK, doing="building this preview")


def previews_resend() -> list[int]:
    """Send again every preview no worker has taken, after the broker lost its messages (a
    Redis restart without persistence); returns their ids. A duplicate of an answered one does
    nothing (``preview_claim``)."""
    waiting = list(previews_waiting().values_list("pk", flat=True))
    for preview_id in waiting:
        enqueue_on_commit(PREVIEW_TASK, preview_id)
    return waiting


def preview_record(*, preview_id: int, result: PreviewResult | None, error: str = "") -> None:
    stored = result.to_json() if result is not None else None
    TrainingPreview.objects.filter(pk=preview_id).update(result=stored, error=error)


# --- Worker side -------------------------------------------------------------------------------


def training_progress(*, run_id: int, step: int, total_steps: int) -> None:
    Run.objects.filter(pk=run_id).update(progress_done=step, progress_total=total_steps)


def metric_points_record(*, run_id: int, step: int, values: Mapping[str, float]) -> None:
    """One point per curve at ``step``; a step logged again (by a resumed worker) keeps the
    first value."""
    MetricPoint.objects.bulk_create(
        [
            MetricPoint(run_id=run_id, name=name, step=step, value=value)
            for name, value in values.items()
        ],
        ignore_conflicts=True,
    )


@transaction.atomic
def trained_model_register(*, run_id: int, location: str) -> ModelSpec:
    """The trained checkpoint as a model of the registry, with its lineage: the base model and
    the training run (whose frozen configuration names the method, the dataset snapshot and its
    hash). Registering again (a worker that died after it) returns the model already made."""
    run = Run.objects.select_related("student").get(pk=run_id)
    existing = run.produced_models.first()
    if existing is not None:
        return existing
    base = run.student
    config = TrainingRunConfig.from_json(run.config)
    method, trained_on = _what_trained(config)
    return ModelSpec.objects.create(
        name=f"{base.name} + {method} (run {run.pk})",
        description=f"Trained by run {run.pk} ({run.name}) from {base.name} {trained_on}.",
        backend=base.backend,
        location=location,
        generation_params=base.generation_params,
        base_model=base,
        trained_by_run=run,
    )


def _what_trained(config: TrainingRunConfig) -> tuple[str, str]:
    """The method's short name, and what it trained on, in words."""
    online, rollouts, dataset = config.online, config.rollouts, config.dataset
    on_dataset = (
        f"on dataset {dataset.name!r} ({dataset.dialogues} dialogues, sha256 "
        f"{dataset.sha256[:12]}), method {config.dataset_training.method}"
        if dataset
        else ""
    )
    if online is not None and rollouts is not None:
        method = "online SML" if online.horizon > 1 else "single-turn RL"
        trained = (
            f"by {method} on the tasks of {rollouts.task_set.name!r} v{rollouts.task_set.version} "
            f"({rollouts.protocol.mode}, horizon {online.horizon}, group {online.group_size})"
        )
        if config.priming is None:
            return method, trained
        return f"{config.priming.method} + {method}", f"first {on_dataset}, then {trained}"
    assert dataset is not None, "an offline run trains on a dataset"
    return config.training.method, on_dataset


def evaluations_launch(*, run_id: int, trained: ModelSpec) -> list[Run]:
    """The held-out evaluation of the trained model, and the base model's with exactly the same
    configuration: reused when one exists that did not fail, else launched."""
    run = Run.objects.get(pk=run_id)
    config = TrainingRunConfig.from_json(run.config)
    if config.evaluation is None:
        return []
    launched = []
    base_config = config.evaluation
    base_run = (
        Run.objects.filter(kind=Run.Kind.EVAL, config_hash=base_config.config_hash())
        .exclude(status__in=[Run.Status.FAILED, Run.Status.CANCELLED])
        .order_by("created_at")
        .first()
    )
    if base_run is None:
        base_run = runs.evaluation_run_from_config(
            name=f"{config.base.name} on {base_config.task_set.name} (base of run {run.pk})",
            config=base_config,
            created_by=run.created_by,
        )
    launched.append(base_run)
    trained_config = config.trained_evaluation(_role_spec(trained))
    assert trained_config is not None
    existing = Run.objects.filter(kind=Run.Kind.EVAL, student=trained).first()
    launched.append(
        existing
        or runs.evaluation_run_from_config(
            name=f"{trained.name} on {base_config.task_set.name}",
            config=trained_config,
            created_by=run.created_by,
        )
    )
    return launched
