from __future__ import annotations

from functools import cached_property

from django.conf import settings
from django.db import models
from django.utils import timezone

from models_gpu.spec.protocol import MODES, SELF_CORRECTION_STYLES
from models_gpu.spec.run import RunConfig
from models_gpu.spec.training_run import TrainingRunConfig
from webapp.core import queues


class Protocol(models.Model):
    """How a static task becomes a dialogue: mode, turn limit, what the teacher sees, prompts."""

    # The modes, self-correction styles and their rules are models_gpu.spec.protocol's. (Enum's
    # functional API, which the stubs do not type for TextChoices.)
    Mode = models.TextChoices(  # type: ignore[call-overload]
        "Mode", [(mode.upper(), (mode, label)) for mode, label in MODES.items()]
    )

    name = models.CharField(max_length=200, unique=True)
    mode = models.CharField(max_length=32, choices=Mode.choices, default=Mode.DIDACTIC)
    max_turns = models.PositiveSmallIntegerField(default=5)

    SelfCorrection = models.TextChoices(  # type: ignore[call-overload]
        "SelfCorrection",
        [(style.upper(), (style, label)) for style, label in SELF_CORRECTION_STYLES.items()],
    )

    teacher_sees_reference = models.BooleanField(default=True)
    teacher_sees_verifier_details = models.BooleanField(default=True)
    self_correction = models.CharField(
        max_length=16,
        choices=SelfCorrection.choices,
        default=SelfCorrection.NUDGE,
        help_text="How the self-correction mode asks the student to try again.",
    )
    regenerate_leaks = models.PositiveSmallIntegerField(
        default=0,
        help_text="How many times a teacher turn that leaks the answer is generated again.",
    )
    judge_turn_kinds = models.BooleanField(
        default=False,
        help_text="Student replies the rules find ambiguous (attempt or question?) go to the "
        "run's judge model; without a judge, the rules alone decide.",
    )
    judge_leaks = models.BooleanField(
        default=False,
        help_text="Teacher turns the string match did not flag go to the run's judge model, "
        "which says whether they give the answer away.",
    )
    prompt_templates = models.JSONField(default=dict, blank=True)
    # Retired protocols leave the launch form and the list (unless asked for); never deleted,
    # since runs point at them.
    retired = models.BooleanField(
        default=False, help_text="Hidden from the run form and, by default, from the list."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Tag(models.Model):
    """A researcher's label on runs ("baseline", "paper fig 2", "ablation"): filters the runs
    table."""

    name = models.CharField(max_length=50, unique=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Run(models.Model):
    """One evaluation, training or generation job and its life: queued → running → finished.

    ``config`` is the frozen configuration the job runs with (``models_gpu.spec.run.RunConfig``
    as JSON: task set version and fingerprint, models, protocol with its templates, samples,
    batch size, seed), taken at launch and the only thing the worker reads; ``config_hash``
    identifies identical configurations. The foreign keys name the same rows for queries and
    deletion protection; what ran is the config.
    """

    class Kind(models.TextChoices):
        EVAL = "eval", "Evaluation"
        TRAIN = "train", "Training"
        GENERATE = "generate", "Generation"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        WAITING = "waiting", "Waiting for people"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    TERMINAL_STATUSES = (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED)

    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.EVAL)
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.QUEUED, db_index=True
    )
    task_set = models.ForeignKey(
        "tasks.TaskSet", on_delete=models.PROTECT, related_name="runs", null=True
    )
    student = models.ForeignKey(
        "models_registry.ModelSpec", on_delete=models.PROTECT, related_name="student_runs"
    )
    teacher = models.ForeignKey(
        "models_registry.ModelSpec",
        on_delete=models.PROTECT,
        related_name="teacher_runs",
        null=True,
        blank=True,
    )
    user_simulator = models.ForeignKey(
        "models_registry.ModelSpec",
        on_delete=models.PROTECT,
        related_name="user_simulator_runs",
        null=True,
        blank=True,
    )
    judge = models.ForeignKey(
        "models_registry.ModelSpec",
        on_delete=models.PROTECT,
        related_name="judge_runs",
        null=True,
        blank=True,
    )
    protocol = models.ForeignKey(Protocol, on_delete=models.PROTECT, related_name="runs")
    tags = models.ManyToManyField(Tag, blank=True, related_name="runs")
    people = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        blank=True,
        related_name="runs_to_answer",
        help_text="Who may answer the turns of the roles a person plays in this run.",
    )
    config = models.JSONField(default=dict)
    config_hash = models.CharField(max_length=64, db_index=True)

    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    batch_in_play = models.JSONField(
        default=dict,
        blank=True,
        help_text="How far the batch of dialogues the worker is playing got "
        "(webapp.metrics.partial.BatchInPlay): what a partial run's figures count.",
    )
    accounting = models.JSONField(
        default=dict, blank=True, help_text="Generations, teacher calls, tokens, wall time."
    )
    error = models.TextField(blank=True)
    cancel_requested = models.BooleanField(default=False)
    worker = models.CharField(max_length=200, blank=True)
    queue = models.CharField(
        max_length=32,
        default=queues.BATCH,
        help_text="The Celery queue its jobs go to (webapp.core.queues.run_queue).",
    )
    job_id = models.CharField(
        max_length=64, blank=True, help_text="The Celery id of its latest job (revoked on cancel)."
    )
    attempts = models.PositiveSmallIntegerField(
        default=0, help_text="How many times a worker claimed the run (more than 1: resumed)."
    )

    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="runs"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    dispatched_at = models.DateTimeField(
        null=True, blank=True, help_text="When the job's message reached the broker."
    )
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["task_set", "kind", "status"])]

    def __str__(self) -> str:
        return self.name

    @cached_property
    def frozen_config(self) -> RunConfig:
        """An evaluation's configuration. A training run's is a ``TrainingRunConfig``
        (:attr:`training_config`); what its dialogues were played under is
        :attr:`dialogue_config`, which every reader of a dialogue's run uses."""
        if self.kind == self.Kind.TRAIN:
            raise ValueError(
                f"run {self.pk} is a training run: its configuration is a training run "
                "configuration (Run.training_config); its dialogues' is Run.dialogue_config"
            )
        return RunConfig.from_json(self.config)

    @cached_property
    def training_config(self) -> TrainingRunConfig:
        """A training run's configuration (every stored schema: ``READABLE_SCHEMAS``)."""
        if self.kind != self.Kind.TRAIN:
            raise ValueError(f"run {self.pk} is not a training run")
        return TrainingRunConfig.from_json(self.config)

    @cached_property
    def dialogue_config(self) -> RunConfig | None:
        """The configuration this run's dialogues were played under, for every kind of run: an
        evaluation's own; an online training run's ``rollouts`` (its base model the student,
        the policy being trained as it played); None for a run that plays no dialogues (an
        offline training run)."""
        if self.kind == self.Kind.TRAIN:
            return self.training_config.rollouts
        return self.frozen_config

    @property
    def is_finished(self) -> bool:
        return self.status in self.TERMINAL_STATUSES

    @property
    def is_partial(self) -> bool:
        """Until the run has succeeded, some of its dialogues have not ended (or never will): its
        figures are over the dialogues they count (``webapp.metrics.partial``)."""
        return self.status != self.Status.SUCCEEDED

    @property
    def elapsed_seconds(self) -> float | None:
        """Wall time since a worker started it, to its end or to now."""
        if self.started_at is None:
            return None
        return ((self.finished_at or timezone.now()) - self.started_at).total_seconds()

    @property
    def seconds_left(self) -> float | None:
        """A guess at the time to its end, from its pace so far (None until it made progress)."""
        elapsed = self.elapsed_seconds
        if elapsed is None or self.is_finished or not self.progress_done:
            return None
        return elapsed * max(self.progress_total - self.progress_done, 0) / self.progress_done

    @property
    def progress_percent(self) -> int:
        if not self.progress_total:
            return 0
        return round(100 * self.progress_done / self.progress_total)


class MetricPoint(models.Model):
    """One point of a curve (training loss, reward, accuracy) logged by a run."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="metric_points")
    name = models.CharField(max_length=100)
    step = models.IntegerField()
    value = models.FloatField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "name", "step"]
        constraints = [
            models.UniqueConstraint(fields=["run", "name", "step"], name="unique_metric_step")
        ]

    def __str__(self) -> str:
        return f"{self.name}@{self.step}={self.value}"
