from __future__ import annotations

from django.conf import settings
from django.db import models


class Protocol(models.Model):
    """How a static task becomes a dialogue: mode, turn limit, what the teacher sees, prompts."""

    class Mode(models.TextChoices):
        DIDACTIC = "didactic", "Didactic (teacher feedback)"
        SHARDED = "sharded", "Sharded (underspecified, one shard per turn)"
        SELF_CORRECTION = "self_correction", "Self-correction (no teacher)"
        SINGLE_TURN = "single_turn", "Single-turn baseline"

    name = models.CharField(max_length=200, unique=True)
    mode = models.CharField(max_length=32, choices=Mode.choices, default=Mode.DIDACTIC)
    max_turns = models.PositiveSmallIntegerField(default=5)

    class SelfCorrection(models.TextChoices):
        NUDGE = "nudge", "Nudge (a fixed 'try again' message)"
        CRITIQUE = "critique", "Critique (the student critiques its own answer first)"

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
    stop_rules = models.JSONField(
        default=dict, blank=True, help_text='e.g. {"stop_on_correct": true}'
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Run(models.Model):
    """One evaluation, training or generation job and its life: queued → running → finished.

    ``config`` is a frozen snapshot of everything the job used (task set version, model specs,
    protocol, sampling), taken at launch; ``config_hash`` identifies identical configurations.
    """

    class Kind(models.TextChoices):
        EVAL = "eval", "Evaluation"
        TRAIN = "train", "Training"
        GENERATE = "generate", "Generation"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
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
    samples_per_task = models.PositiveSmallIntegerField(default=1)
    batch_size = models.PositiveIntegerField(
        default=64, help_text="Dialogues the engine advances together."
    )
    seed = models.BigIntegerField(default=0)
    config = models.JSONField(default=dict)
    config_hash = models.CharField(max_length=64, db_index=True)

    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    accounting = models.JSONField(
        default=dict, blank=True, help_text="Generations, teacher calls, tokens, wall time."
    )
    error = models.TextField(blank=True)
    cancel_requested = models.BooleanField(default=False)
    worker = models.CharField(max_length=200, blank=True)
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

    @property
    def is_finished(self) -> bool:
        return self.status in self.TERMINAL_STATUSES

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
