from __future__ import annotations

from django.conf import settings
from django.db import models

# Until migration 0005, submitting an item stored each suggestion left unanswered through a
# revision with the nonce ``prefill-<assignment>-<question>-<turn>``.
PREFILL_NONCE_PREFIX = "prefill-"


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

    class Prefill(models.TextChoices):
        NONE = "", "Nothing"
        LEAK_FLAG = "leak_flag", "The turn's leak flag (yes/no)"

    schema = models.ForeignKey(LabelSchema, on_delete=models.CASCADE, related_name="questions")
    key = models.SlugField(max_length=64)
    text = models.CharField(max_length=500)
    kind = models.CharField(max_length=32, choices=Kind.choices)
    target = models.CharField(max_length=32, choices=Target.choices)
    options = models.JSONField(
        default=list, blank=True, help_text="Choices, or [min, max] for a rating scale."
    )
    guidelines = models.TextField(blank=True, help_text="Markdown, shown beside the question.")
    position = models.PositiveSmallIntegerField(default=0)
    # Where a suggested answer comes from, for the human to confirm ("" = none). A suggestion
    # is only ever shown: it is stored once the person confirms it or chooses an answer.
    prefill = models.CharField(max_length=32, choices=Prefill.choices, blank=True, default="")
    # Every question must be answered before an item is submitted, unless it is optional.
    optional = models.BooleanField(
        default=False,
        help_text="Annotators may submit an item without answering it (otherwise required).",
    )

    class Meta:
        ordering = ["schema", "position"]
        constraints = [
            models.UniqueConstraint(fields=["schema", "key"], name="unique_question_key")
        ]

    def __str__(self) -> str:
        return self.key

    @property
    def scale(self) -> list[int]:
        """The values of a rating scale, [min, max] inclusive."""
        if self.kind != self.Kind.RATING or len(self.options) != 2:
            return []
        low, high = (int(bound) for bound in self.options)
        return list(range(low, high + 1))

    @property
    def answer_choices(self) -> list[object]:
        """What number key i chooses: the i-th scale value or the i-th option."""
        if self.kind == self.Kind.RATING:
            return list(self.scale)
        if self.kind in (self.Kind.SINGLE_CHOICE, self.Kind.MULTIPLE_CHOICE):
            return list(self.options)
        if self.kind == self.Kind.YES_NO:
            return [True, False]
        return []

    @property
    def role(self) -> str:
        """The turn role this question is about ("" for whole dialogues)."""
        return {"teacher_turn": "teacher", "student_turn": "student"}.get(self.target, "")


class Annotation(models.Model):
    """One annotator's answer to one question about a dialogue or one of its turns.

    A label (what agreement, exports and label filters count) is a submitted answer the person
    gave: ``is_draft`` False and ``source`` not ``UNCONFIRMED_PREFILL``
    (``selectors.given_labels``)."""

    class Source(models.TextChoices):
        PERSON = "person", "Chosen by the annotator"
        CONFIRMED_SUGGESTION = "confirmed_suggestion", "A suggestion the annotator confirmed"
        # Written by item submission before suggestions needed confirming (migration 0005
        # marks them): the suggestion, never seen to be agreed with. Not a label.
        UNCONFIRMED_PREFILL = "unconfirmed_prefill", "A suggestion nobody confirmed"

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
    # True until the author submits the item; drafts are saved as each answer is given.
    is_draft = models.BooleanField(default=False)
    source = models.CharField(max_length=24, choices=Source.choices, default=Source.PERSON)
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


class AnnotationRevision(models.Model):
    """One change of an annotation: who, when, old → new. ``nonce`` is generated by the client
    per answer given, so a retried or duplicated request never writes a second revision."""

    annotation = models.ForeignKey(Annotation, on_delete=models.CASCADE, related_name="revisions")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="annotation_revisions"
    )
    old_value = models.JSONField(null=True, blank=True)
    new_value = models.JSONField(null=True, blank=True)
    nonce = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["author", "nonce"], name="unique_revision_nonce")
        ]

    def __str__(self) -> str:
        return f"revision of {self.annotation_id}"

    @property
    def unconfirmed_prefill(self) -> bool:
        """Written by item submission from a suggestion nobody confirmed (before 0005)."""
        return self.nonce.startswith(PREFILL_NONCE_PREFIX)


class LabelQueue(models.Model):
    """Dialogues picked by a transcript filter, each given to ``annotators_per_item`` people."""

    name = models.CharField(max_length=200)
    schema = models.ForeignKey(LabelSchema, on_delete=models.PROTECT, related_name="queues")
    filter_query = models.TextField(
        blank=True, help_text="The /dialogues/ query it was built from."
    )
    annotators_per_item = models.PositiveSmallIntegerField(default=1)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return self.name


class QueueAssignment(models.Model):
    """One dialogue of a queue for one annotator (an "item")."""

    class Status(models.TextChoices):
        PENDING = "pending", "To do"
        SKIPPED = "skipped", "Skipped"
        DONE = "done", "Done"

    queue = models.ForeignKey(LabelQueue, on_delete=models.CASCADE, related_name="assignments")
    dialogue = models.ForeignKey(
        "dialogues.Dialogue", on_delete=models.CASCADE, related_name="assignments"
    )
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments"
    )
    position = models.PositiveIntegerField(help_text="Order of the dialogue in the queue.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    # Why the annotator put the item aside (required to skip); kept if the item is done later.
    skip_reason = models.CharField(max_length=500, blank=True, default="")
    submitted_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["queue", "position", "annotator"]
        constraints = [
            models.UniqueConstraint(
                fields=["queue", "dialogue", "annotator"], name="unique_assignment"
            )
        ]
        indexes = [
            models.Index(fields=["annotator", "queue", "position"]),
            models.Index(fields=["dialogue", "annotator"]),
        ]

    def __str__(self) -> str:
        return f"{self.queue_id}/{self.dialogue_id} for {self.annotator_id}"
