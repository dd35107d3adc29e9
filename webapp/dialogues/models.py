from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper

from webapp.dialogues.numbering import MessageRef, legacy_anchor, message_anchor, message_number

# Each transcript-list sort walks one of these indexes (see ``filters.SORTS``): the sort key,
# then the tie-breakers in the same direction, so that one index serves both directions. The
# default sort (newest run first, its tasks in order) has an index for each direction, and so
# does the first correct turn, whose empty values come last both ways: its descending index
# (``DESC NULLS LAST``, which SQLite cannot declare) is made on PostgreSQL only, by migration 0005.
# The student model's name lives on another table: that sort orders the filtered rows.
SORT_INDEXES = [
    models.Index(
        fields=["-run", "task_position", "task", "sample_index", "id"],
        name="dialogue_sort_run_desc",
    ),
    models.Index(
        fields=["run", "task_position", "task", "sample_index", "id"], name="dialogue_sort_run"
    ),
    models.Index(
        fields=["task_position", "task", "run", "sample_index", "id"], name="dialogue_sort_task"
    ),
    models.Index(
        fields=["outcome", "run", "task", "sample_index", "id"], name="dialogue_sort_outcome"
    ),
    models.Index(
        fields=["first_correct_turn", "run", "task", "sample_index", "id"],
        name="dialogue_sort_first_correct",
    ),
    models.Index(
        fields=["num_turns", "run", "task", "sample_index", "id"], name="dialogue_sort_turns"
    ),
    models.Index(fields=["created_at", "id"], name="dialogue_sort_created"),
    models.Index(
        fields=["student_name", "run", "task", "sample_index", "id"], name="dialogue_sort_student"
    ),
]


class SearchDocumentField(SearchVectorField):
    """A tsvector on PostgreSQL; elsewhere a text column that stays empty."""

    def db_type(self, connection: BaseDatabaseWrapper) -> str:
        return "tsvector" if connection.vendor == "postgresql" else "text"


class Dialogue(models.Model):
    """One teacher–student conversation: a run × a task × a sample index (unique, so a resumed
    run can never store the same dialogue twice).

    Dialogues and their turns are written once, by ``services.dialogues_store``, which also
    copies onto the dialogue what the transcript list filters and sorts on (the task's position,
    three facts about the turns from ``summary.turn_summary``, and on PostgreSQL the lexemes of
    its turns for ``search``), so a list page reads the dialogue rows alone: no join or subquery
    per row.
    """

    class Outcome(models.TextChoices):
        SOLVED = "solved", "Solved"
        UNSOLVED = "unsolved", "Unsolved"
        ERROR = "error", "Error"

    class EndReason(models.TextChoices):
        SOLVED = "solved", "Solved"
        MAX_TURNS = "max_turns", "Reached max turns"
        SHARDS_EXHAUSTED = "shards_exhausted", "All shards revealed"
        ERROR = "error", "Error"
        NO_ANSWER = "no_answer", "A person did not answer in time"
        # A researcher ended it from its waiting turn's page (``ended_by``, ``end_note``); not a
        # time-out. Unsolved, like every dialogue that did not reach a correct answer.
        ENDED_BY_PERSON = "ended_by_person", "Ended by a person"

    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="dialogues")
    task = models.ForeignKey("tasks.Task", on_delete=models.PROTECT, related_name="dialogues")
    sample_index = models.PositiveIntegerField(default=0)
    seed = models.BigIntegerField()
    training_step = models.PositiveIntegerField(
        null=True,
        blank=True,
        db_index=True,
        help_text="Online training: the optimizer step whose rollouts this dialogue was.",
    )
    parent = models.ForeignKey(
        "self",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="forks",
        help_text="A fork's parent dialogue: the fork kept its first fork_turns turns.",
    )
    fork_turns = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="A fork: how many of its parent's turns it kept."
    )
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    first_correct_turn = models.PositiveSmallIntegerField(null=True, blank=True)
    num_turns = models.PositiveSmallIntegerField(
        help_text="Turn rounds played (the student's replies)."
    )
    end_reason = models.CharField(max_length=32, choices=EndReason.choices)
    # A dialogue a person ended by hand (``EndReason.ENDED_BY_PERSON``): who (their username,
    # as turns written in the browser name their person) and the reason they gave.
    ended_by = models.CharField(max_length=150, blank=True, default="")
    end_note = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    # Copies, for the transcript list (see the class docstring).
    task_position = models.PositiveIntegerField(
        default=0, help_text="The task's position in its task set (which never changes once run)."
    )
    student_name = models.CharField(
        max_length=200,
        default="",
        help_text="The student model's name as the run froze it at launch, for sorting.",
    )
    leaked = models.BooleanField(
        default=False, help_text="Some teacher turn was flagged as revealing the answer."
    )
    changed_answer = models.BooleanField(
        default=False,
        help_text="The student's attempts hold at least two distinct non-empty answers.",
    )
    turn_kinds = models.PositiveSmallIntegerField(
        default=0, help_text="The kinds of turn it has, one bit each (summary.KIND_BITS)."
    )
    # PostgreSQL: every lexeme of its turns, for one-word searches (see search.py). Selectors
    # that load whole dialogues defer it: no page shows it.
    search_document = SearchDocumentField(null=True, editable=False)

    class Meta:
        ordering = ["run", "task", "sample_index"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "task", "sample_index"], name="unique_dialogue_per_sample"
            )
        ]
        indexes = [
            # A run's dialogues of one outcome, in the default order.
            models.Index(
                fields=["run", "outcome", "task_position", "task", "sample_index", "id"],
                name="dialogue_run_outcome",
            ),
            models.Index(fields=["run", "first_correct_turn"]),
            # The filters on what the turns say pick few rows on one side (leaks are rare, and
            # so are some kinds of turn): an index finds those (``turn_kinds`` through the list
            # of values that have the bits asked for, see selectors._filter_turns).
            models.Index(fields=["leaked"], name="dialogue_leaked"),
            models.Index(fields=["changed_answer"], name="dialogue_changed_answer"),
            models.Index(fields=["turn_kinds"], name="dialogue_turn_kinds"),
            # "How it ended" finds the few dialogues with a rare end (by a person, an error).
            models.Index(fields=["end_reason"], name="dialogue_end_reason"),
            *SORT_INDEXES,
        ]

    def __str__(self) -> str:
        return f"dialogue {self.pk}"

    @property
    def fork_point(self) -> MessageRef | None:
        """A fork's last kept message of its parent (its turn k when the selector annotated
        ``fork_round``), or None for a dialogue that is not a fork."""
        if self.parent_id is None or not self.fork_turns:
            return None
        return MessageRef(
            dialogue_id=self.parent_id,
            index=self.fork_turns - 1,
            round=getattr(self, "fork_round", None),
        )


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
    # Feedback use (spec.results.TurnRow): null on other turns, on tasks whose feedback cannot
    # be checked, and on every turn stored before it was measured.
    move_valid = models.BooleanField(
        null=True, blank=True, help_text="A judged move of a checkable task: one the game allows."
    )
    move_consistent = models.BooleanField(
        null=True,
        blank=True,
        help_text="A move after the first: consistent with every earlier verdict's feedback.",
    )
    move_chance = models.FloatField(
        null=True,
        blank=True,
        help_text="Share of the valid moves that would have been consistent here (null: not "
        "countable).",
    )

    class Meta:
        ordering = ["dialogue", "index"]
        constraints = [
            models.UniqueConstraint(fields=["dialogue", "index"], name="unique_turn_index")
        ]
        indexes = [models.Index(fields=["role", "kind"])]

    def __str__(self) -> str:
        return f"{self.role} turn {self.index}"

    # The one numbering of messages (webapp/dialogues/numbering.py): every page and export
    # names a message with these.
    @property
    def message_number(self) -> int:
        return message_number(self.index)

    @property
    def message_anchor(self) -> str:
        return message_anchor(self.index)

    @property
    def legacy_anchor(self) -> str:
        return legacy_anchor(self.index)

    @property
    def message_ref(self) -> MessageRef:
        return MessageRef(
            dialogue_id=self.dialogue_id,
            index=self.index,
            round=self.round,
            role_display=self.get_role_display(),
        )

    @property
    def message_label(self) -> str:
        """The message's label, e.g. "Teacher · turn 2 · message #4"."""
        return self.message_ref.label


class PendingTurn(models.Model):
    """A dialogue parked for a person: the turns so far, whose turn it is, and what that role
    sees (``request``). The worker writes it when the engine parks the dialogue
    (``models_gpu.types.ParkedDialogue``), holding no thread for it; the person's answer wakes
    the run, whose worker plays the dialogue on from these turns with that answer.

    Life: open (waiting; ``claimed_by`` is who is answering, so no one else can) -> answered
    (the worker picks it up) -> done (the dialogue went on: ended, or parked again in a new row).
    An open turn can also time out (the dialogue ends "no_answer"), be ended by a researcher
    (the dialogue ends "ended_by_person") or be cancelled with its run; ``events`` records
    reassignments and endings with who and why.
    """

    class Status(models.TextChoices):
        OPEN = "open", "Waiting for an answer"
        ANSWERED = "answered", "Answered"
        DONE = "done", "Done"
        TIMED_OUT = "timed_out", "Timed out"
        ENDED = "ended", "Ended by a person"
        CANCELLED = "cancelled", "Cancelled"

    LIVE_STATUSES = (Status.OPEN, Status.ANSWERED)

    class Role(models.TextChoices):
        STUDENT = "student", "Student"
        TEACHER = "teacher", "Teacher"
        USER_SIMULATOR = "user_simulator", "User"

    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="pending_turns")
    task = models.ForeignKey("tasks.Task", on_delete=models.PROTECT, related_name="+")
    sample_index = models.PositiveIntegerField()
    seed = models.BigIntegerField()
    role = models.CharField(max_length=16, choices=Role.choices)
    round = models.PositiveSmallIntegerField(help_text="The round whose turn is waited for.")
    rounds_played = models.PositiveSmallIntegerField(
        help_text="Student replies so far: the turns whose outcome is known (live accuracy)."
    )
    turns = models.JSONField(help_text="The turns so far (spec.results.TurnRow fields).")
    request = models.JSONField(
        help_text="What the role sees: {messages: [{role, content}], private_context}."
    )
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.OPEN, db_index=True
    )
    assigned_to = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="Empty: any of the run's people may answer.",
    )
    claimed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    claimed_at = models.DateTimeField(null=True, blank=True)
    draft = models.TextField(blank=True)
    answer = models.TextField(blank=True)
    answered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    answered_at = models.DateTimeField(null=True, blank=True)
    deadline = models.DateTimeField(null=True, blank=True)
    events = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "task", "sample_index"],
                condition=models.Q(status__in=["open", "answered"]),
                name="one_live_pending_turn_per_dialogue",
            )
        ]
        indexes = [models.Index(fields=["run", "status"])]

    def __str__(self) -> str:
        return f"{self.role} turn {self.round} of run {self.run_id}, task {self.task_id}"
