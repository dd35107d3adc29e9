from __future__ import annotations

from django.conf import settings
from django.db import models


class LabelSchema(models.Model):
    """A named set of questions that annotators answer about dialogues or turns."""

    name = models.CharField(max_length=200, unique=True)
    guidelines = models.TextField(blank=True, help_text="Markdown, shown next to each item.")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class LabelQuestion(models.Model):
    class Kind(models.TextChoices):
        RATING = "rating", "Rating scale"
        SINGLE_CHOICE = "single_choice", "Single choice"
        MULTIPLE_CHOICE = "multiple_choice", "Multiple choice"
        YES_NO = "yes_no", "Yes / no"
        FREE_TEXT = "free_text", "Free text"

    class Target(models.TextChoices):
        TEACHER_TURN = "teacher_turn", "Teacher turns"
        STUDENT_TURN = "student_turn", "Student turns"
        DIALOGUE = "dialogue", "Whole dialogues"

    schema = models.ForeignKey(LabelSchema, on_delete=models.CASCADE, related_name="questions")
    key = models.SlugField(max_length=64)
    text = models.CharField(max_length=500)
    kind = models.CharField(max_length=32, choices=Kind.choices)
    target = models.CharField(max_length=32, choices=Target.choices)
    options = models.JSONField(
        default=list, blank=True, help_text="Choices, or [min, max] for a rating scale."
    )
    guidelines = models.TextField(blank=True)
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["schema", "position"]
        constraints = [
            models.UniqueConstraint(fields=["schema", "key"], name="unique_question_key")
        ]

    def __str__(self) -> str:
        return self.key


class Annotation(models.Model):
    """One annotator's answer to one question about a dialogue or one of its turns."""

    question = models.ForeignKey(
        LabelQuestion, on_delete=models.CASCADE, related_name="annotations"
    )
    dialogue = models.ForeignKey(
        "dialogues.Dialogue", on_delete=models.CASCADE, related_name="annotations"
    )
    turn = models.ForeignKey(
        "dialogues.Turn",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="annotations",
    )
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="annotations"
    )
    value = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            # One answer per author and item; a dialogue-level item has no turn.
            models.UniqueConstraint(
                fields=["question", "turn", "author"],
                condition=models.Q(turn__isnull=False),
                name="unique_turn_annotation_per_author",
            ),
            models.UniqueConstraint(
                fields=["question", "dialogue", "author"],
                condition=models.Q(turn__isnull=True),
                name="unique_dialogue_annotation_per_author",
            ),
        ]
        indexes = [models.Index(fields=["dialogue", "author"])]

    def __str__(self) -> str:
        return f"{self.question_id} by {self.author_id}"
