"""Reading training data out of the transcript tables."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields
from itertools import islice
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db.models import Count, Q, QuerySet
from django.http import QueryDict

from models_gpu.spec.results import TurnRow
from models_gpu.spec.run import RunConfig
from models_gpu.spec.templates import render_for_dialogue
from models_gpu.spec.training import TrainingConfig, TrainingDialogue
from models_gpu.spec.training_run import NOTHING_TO_TRAIN, TrainingRunConfig
from webapp.accounts.models import User
from webapp.core.interactive_jobs import WORKERS_GAVE_OUT
from webapp.dialogues import search
from webapp.dialogues.models import Dialogue, Turn
from webapp.models_registry.models import ModelSpec
from webapp.runs.models import Run
from webapp.training.models import TrainingPreview
from webapp.transcripts import selectors
from webapp.transcripts.filters import DialogueFilters
from webapp.transcripts.forms import DialogueFilterForm

# Dialogues read per query while a snapshot is written: memory stays flat however many match.
CHUNK = 500
TURN_FIELDS = tuple(field.name for field in fields(TurnRow))  # the Turn columns of those names


def selected_dialogues(*, filters: DialogueFilters, reader: User | None) -> QuerySet[Dialogue]:
    """The dialogues a transcript filter selects for training, in id order."""
    searches_turns = search.searches_turns(filters.search)
    chosen = selectors.dialogue_list(filters=filters, reader=reader, searches_turns=searches_turns)
    return chosen.order_by("pk")


def selection_dialogues(*, selection: str, reader: User | None) -> QuerySet[Dialogue]:
    """The dialogues the transcript filter ``selection`` (the transcript list's query string)
    selects for ``reader``'s training, in id order; an invalid parameter is ignored, as the
    transcript list ignores it."""
    filters = DialogueFilterForm.from_query(QueryDict(selection), reader=reader).filters()
    return selected_dialogues(filters=filters, reader=reader)


@dataclass(frozen=True)
class SelectionCounts:
    dialogues: int
    solved: int
    turns: int
    student_turns: int
    runs: list[dict[str, Any]]  # [{id, name, dialogues}], most dialogues first


def selection_counts(dialogues: QuerySet[Dialogue]) -> SelectionCounts:
    ids = dialogues.order_by().values("pk")
    turns = Turn.objects.filter(dialogue__in=ids).aggregate(
        turns=Count("pk"), student=Count("pk", filter=Q(role=Turn.Role.STUDENT))
    )
    runs = (
        Dialogue.objects.filter(pk__in=ids)
        .values("run_id", "run__name")
        .annotate(dialogues=Count("pk"))
        .order_by("-dialogues", "run_id")
    )
    return SelectionCounts(
        dialogues=dialogues.count(),
        solved=dialogues.filter(outcome=Dialogue.Outcome.SOLVED).count(),
        turns=turns["turns"],
        student_turns=turns["student"],
        runs=[
            {"id": row["run_id"], "name": row["run__name"], "dialogues": row["dialogues"]}
            for row in runs
        ],
    )


def training_dialogues(dialogues: QuerySet[Dialogue]) -> Iterator[TrainingDialogue]:
    """Each dialogue as training reads it, ``CHUNK`` at a time: the student's system prompt and
    the task as the run's frozen configuration showed them, and the stored turns."""
    ids = dialogues.values_list("pk", flat=True)
    configs: dict[int, RunConfig] = {}
    last = 0
    while True:
        chunk = list(ids.filter(pk__gt=last).order_by("pk")[:CHUNK])
        if not chunk:
            return
        last = chunk[-1]
        rows = (
            Dialogue.objects.filter(pk__in=chunk)
            .order_by("pk")
            .values("pk", "run_id", "task__prompt", "task__reference", "task__shards")
        )
        turns: dict[int, list[TurnRow]] = {pk: [] for pk in chunk}
        for turn in Turn.objects.filter(dialogue_id__in=chunk).order_by("dialogue_id", "index"):
            turns[turn.dialogue_id].append(TurnRow(**{f: getattr(turn, f) for f in TURN_FIELDS}))
        for row in rows:
            config = configs.get(row["run_id"]) or _run_config(row["run_id"], configs)
            protocol = config.protocol
            yield TrainingDialogue(
                dialogue_id=row["pk"],
                student_system=render_for_dialogue(
                    protocol.templates,
                    "student_system",
                    max_turns=protocol.max_turns,
                    shards_total=len(row["task__shards"] or ()),
                ),
                task_prompt=row["task__prompt"],
                sharded=protocol.mode == "sharded",
                reference=row["task__reference"],
                turns=tuple(turns[row["pk"]]),
            )


def _run_config(run_id: int, configs: dict[int, RunConfig]) -> RunConfig:
    """What the run's dialogues were played under (an online training run's: its rollouts')."""
    config = Run.objects.get(pk=run_id).dialogue_config
    assert config is not None, "a run with stored dialogues played them under a configuration"
    configs[run_id] = config
    return configs[run_id]


def training_output_dir(run: Run) -> Path:
    """Where a training run keeps its checkpoints and its final model. Named by the run's id and
    configuration hash: ids start again with a new database, and a directory left by another
    run must never be resumed from."""
    return Path(settings.DIALAB_TRAINING_DIR) / f"run-{run.pk}-{run.config_hash[:12]}"


@dataclass(frozen=True)
class TrainingRunToPlay:
    """What a worker reads of the training run it claimed: its configuration, how many times
    it was claimed (more than once: it resumes) and its output directory."""

    config: TrainingRunConfig
    attempts: int
    output_dir: Path


def training_run_to_play(*, run_id: int) -> TrainingRunToPlay:
    run = Run.objects.get(pk=run_id)
    return TrainingRunToPlay(
        config=TrainingRunConfig.from_json(run.config),
        attempts=run.attempts,
        output_dir=training_output_dir(run),
    )


@dataclass(frozen=True)
class PreviewSelection:
    """What a worker needs to build a training preview: the base model's location, the
    launch's training configuration, how many dialogues the selection holds, and the first
    ``sample_size`` of them by id, as training reads them."""

    base_model: str
    training: TrainingConfig
    selected: int
    sample: list[TrainingDialogue]


def preview_selection(*, preview_id: int, sample_size: int) -> PreviewSelection:
    preview = TrainingPreview.objects.select_related("base_model", "created_by").get(pk=preview_id)
    reader = preview.created_by
    dialogues = selection_dialogues(selection=preview.selection, reader=reader)
    return PreviewSelection(
        base_model=preview.base_model.location,
        training=TrainingConfig.from_json(preview.training_config),
        selected=dialogues.count(),
        sample=list(islice(training_dialogues(dialogues), sample_size)),
    )


def previewed_template_problem(*, reader: User, base_model: ModelSpec, method: str) -> str:
    """Why ``reader``'s newest finished preview of ``base_model`` found it cannot train
    ``method`` (its chat template cannot express the layout, or its tokenizer does not load);
    "" when it found nothing wrong or there is no such preview. The web process never loads a
    tokenizer, so this is how the launch form knows before a worker would fail the run."""
    preview = (
        TrainingPreview.objects.filter(created_by=reader, base_model=base_model)
        .filter(Q(result__isnull=False) | ~Q(error=""))
        .exclude(error__endswith=WORKERS_GAVE_OUT)  # its workers died: it found nothing
        .order_by("-pk")
        .first()
    )
    if preview is None:
        return ""
    if preview.report is not None:
        return preview.report.error_for(method)
    about_this_method = preview.training_config.get("method") == method
    return preview.error if about_this_method and preview.error != NOTHING_TO_TRAIN else ""


@dataclass(frozen=True)
class TrainingEvaluations:
    """A training run's held-out evaluations: the base model's (the first evaluation run with
    exactly the configuration the run froze) and the trained model's; None where there is none
    (yet)."""

    base: Run | None
    trained: Run | None

    @property
    def runs(self) -> list[Run]:
        return [run for run in (self.base, self.trained) if run is not None]

    @property
    def unfinished(self) -> list[Run]:
        """What a succeeded training run still waits for before its figures are final."""
        return [run for run in self.runs if not run.is_finished]


def training_run_evaluations(*, run: Run, trained_model: ModelSpec | None) -> TrainingEvaluations:
    config = TrainingRunConfig.from_json(run.config)
    base = trained = None
    if config.evaluation is not None:
        base = (
            Run.objects.filter(kind=Run.Kind.EVAL, config_hash=config.evaluation.config_hash())
            .order_by("created_at")
            .first()
        )
    if trained_model is not None:
        trained = trained_model.student_runs.filter(kind=Run.Kind.EVAL).first()
    return TrainingEvaluations(base, trained)


def previews_waiting() -> QuerySet[TrainingPreview]:
    """The previews no worker has taken yet (nor answered: previews older than ``started_at``)."""
    return TrainingPreview.unanswered().filter(started_at=None)
