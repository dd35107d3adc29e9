from __future__ import annotations

from django.db import models

from models_gpu.spec.backends import BACKENDS


class ModelSpec(models.Model):
    """A named model: its backend, where it lives, how it generates, where it came from."""

    # The backends and their parameters are models_gpu.spec.backends'. (Enum's functional API,
    # which the stubs do not type for TextChoices.)
    Backend = models.TextChoices(  # type: ignore[call-overload]
        "Backend", [(name.upper(), (name, backend.label)) for name, backend in BACKENDS.items()]
    )

    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    backend = models.CharField(max_length=16, choices=Backend.choices)
    location = models.CharField(
        max_length=500,
        blank=True,
        help_text="A checkpoint path, an endpoint URL, or a scripted policy name.",
    )
    generation_params = models.JSONField(default=dict, blank=True)
    base_model = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="derived_models"
    )
    trained_by_run = models.ForeignKey(
        "runs.Run",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="produced_models",
        help_text="The training run that produced this checkpoint.",
    )
    # Retired models leave the launch forms and the list (unless asked for); never deleted,
    # since runs and trained models point at them.
    retired = models.BooleanField(
        default=False, help_text="Hidden from the launch forms and, by default, from the list."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
