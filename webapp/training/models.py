"""Training data: dataset snapshots frozen from transcript filters."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from models_gpu.spec.reports import PreviewResult
from webapp.core.interactive_jobs import InteractiveJob


class DatasetSnapshot(models.Model):
    """The dialogues a transcript filter selected, frozen at launch into a file.

    The file (``path``: one ``models_gpu.spec.training.TrainingDialogue`` JSON per line, in
    dialogue id order) holds everything training reads: the student's system prompt, the task
    as the student saw it, the turns, the private reference. So a training run trains on exactly
    this, even if a run it came from is deleted later; ``sha256`` is the hash of the file's
    bytes, checked by the worker before it trains. Immutable: nothing updates a snapshot.
    """

    name = models.CharField(max_length=200)
    filter_query = models.TextField(
        blank=True, help_text="The transcript list's query string that selected the dialogues."
    )
    dialogue_count = models.PositiveIntegerField()
    turn_count = models.PositiveIntegerField()
    student_turn_count = models.PositiveIntegerField()
    source_runs = models.JSONField(
        default=list, help_text="[{id, name, dialogues}] of the runs the dialogues came from."
    )
    sha256 = models.CharField(max_length=64)
    path = models.CharField(max_length=500)
    task_keys = models.JSONField(
        default=list,
        help_text="The task_key of every task its dialogues play (webapp.training.heldout).",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.dialogue_count} dialogues)"


class TrainingPreview(InteractiveJob):
    """What a training launch would train on, worked out by a worker (the web process never
    loads a tokenizer): token counts over a sample of the selection and one example per method
    with the trained tokens marked, or why the base model's chat template cannot express the
    method. ``result`` is None until the worker wrote it."""

    ANSWER_FIELD = "result"

    selection = models.TextField(blank=True, help_text="The transcript filter's query string.")
    base_model = models.ForeignKey(
        "models_registry.ModelSpec", on_delete=models.CASCADE, related_name="+"
    )
    training_config = models.JSONField(help_text="models_gpu.spec.training.TrainingConfig")
    result = models.JSONField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )

    def __str__(self) -> str:
        return f"training preview {self.pk}"

    @property
    def report(self) -> PreviewResult | None:
        """What the worker found (None until it wrote it)."""
        return PreviewResult.from_json(self.result) if self.result is not None else None
