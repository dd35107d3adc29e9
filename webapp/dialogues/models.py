from __future__ import annotations

from django.db import models


class Dialogue(models.Model):
    """One teacher–student conversation: a run × a task × a sample index (unique, so a resumed
    run can never store the same dialogue twice)."""

    class Outcome(models.TextChoices):
        SOLVED = "solved", "Solved"
        UNSOLVED = "unsolved", "Unsolved"
        ERROR = "error", "Error"

    class EndReason(models.TextChoices):
        SOLVED = "solved", "Solved"
        MAX_TURNS = "max_turns", "Reached max turns"
        SHARDS_EXHAUSTED = "shards_exhausted", "All shards revealed"
        ERROR = "error", "Error"

    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="dialogues")
    task = models.ForeignKey("tasks.Task", on_delete=models.PROTECT, related_name="dialogues")
    sample_index = models.PositiveSmallIntegerField(default=0)
    seed = models.BigIntegerField()
    outcome = models.CharField(max_length=16, choices=Outcome.choices, db_index=True)
    first_correct_turn = models.PositiveSmallIntegerField(null=True, blank=True)
    num_turns = models.PositiveSmallIntegerField(
        help_text="Turn rounds played (the student's replies)."
    )
    end_reason = models.CharField(max_length=32, choices=EndReason.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "task", "sample_index"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "task", "sample_index"], name="unique_dialogue_per_sample"
            )
        ]
        indexes = [
            models.Index(fields=["run", "outcome"]),
            models.Index(fields=["run", "first_correct_turn"]),
        ]

    def __str__(self) -> str:
        return f"dialogue {self.pk}"


class Turn(models.Model):
    """One message of a dialogue, with what its speaker privately saw and, for attempts, the
    verifier's verdict."""

    class Role(models.TextChoices):
        STUDENT = "student", "Student"
        TEACHER = "teacher", "Teacher"
        USER = "user", "User simulator"
        SYSTEM = "system", "System"

    class Kind(models.TextChoices):
        ATTEMPT = "attempt", "Answer attempt"
        QUESTION = "question", "Question"
        FEEDBACK = "feedback", "Feedback"
        SHARD = "shard", "Shard"
        OTHER = "other", "Other"

    dialogue = models.ForeignKey(Dialogue, on_delete=models.CASCADE, related_name="turns")
    index = models.PositiveSmallIntegerField(help_text="Position in the conversation, from 0.")
    round = models.PositiveSmallIntegerField(help_text="Turn round k, from 1.")
    role = models.CharField(max_length=16, choices=Role.choices)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    text = models.TextField()
    private_context = models.JSONField(default=dict, blank=True)
    extracted_answer = models.TextField(blank=True, help_text="Empty when none was found.")
    is_correct = models.BooleanField(null=True, blank=True, help_text="Null when not verified.")
    score = models.FloatField(null=True, blank=True)
    verdict_details = models.JSONField(default=dict, blank=True)
    leak_flag = models.BooleanField(default=False)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    latency_ms = models.FloatField(default=0)

    class Meta:
        ordering = ["dialogue", "index"]
        constraints = [
            models.UniqueConstraint(fields=["dialogue", "index"], name="unique_turn_index")
        ]
        indexes = [models.Index(fields=["role", "kind"])]

    def __str__(self) -> str:
        return f"{self.role} turn {self.index}"
