"""The dialogue page says who saw what and labels every message apart: the reference is shown
as the teacher's only when a teacher turn was given it (the protocol may hide it), the
verifier's details say whether the teacher saw them, messages are numbered within labelled
turns, and the private-context switch is there only when a teacher spoke. Runs are real
(launched, played by the worker task and the engine with scripted models)."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.urls import reverse

from tests.factories import (
    ProtocolFactory,
    StudentFactory,
    TaskFactory,
    TaskSetFactory,
    TeacherFactory,
)
from webapp.dialogues.models import Dialogue, Turn
from webapp.dialogues.reading import who_saw
from webapp.models_registry.models import ModelSpec
from webapp.runs.models import Protocol

pytestmark = pytest.mark.django_db

TEACHER_AND_VERIFIER = "What only the teacher and the verifier see"
VERIFIER_ONLY = "What only the verifier sees"


def always_wrong_first() -> ModelSpec:
    """A scripted student that never answers right at once, so the teacher always speaks."""
    return StudentFactory(generation_params={"first_try_accuracy": 0.0, "feedback_gain": 0.5})


def didactic_dialogue(play: Any, **protocol_flags: bool) -> Dialogue:
    task_set = TaskSetFactory()
    TaskFactory.create_batch(2, task_set=task_set)
    run = play(
        task_set=task_set, protocol=ProtocolFactory(**protocol_flags),
        student=always_wrong_first(), teacher=TeacherFactory(),
    )  # fmt: skip
    return Dialogue.objects.filter(run=run).order_by("pk").first()  # type: ignore[return-value]


def page_of(client: Any, dialogue: Dialogue) -> str:
    response = client.get(reverse("dialogue_detail", args=[dialogue.pk]))
    assert response.status_code == 200
    return response.content.decode()


def task_panel(page: str) -> str:
    start = page.index('id="task-private"')
    return page[start : page.index("</details>", start)]


def verifier_summaries(page: str) -> list[str]:
    summary = r'class="private-context verifier-details">\s*<summary>([^<]*)</summary>'
    return re.findall(summary, page)


def test_a_reference_the_protocol_hid_is_not_shown_as_the_teacher_s(
    researcher_client: Any, play: Any
) -> None:
    dialogue = didactic_dialogue(play, teacher_sees_reference=False)
    teacher_turns = dialogue.turns.filter(role=Turn.Role.TEACHER)
    assert teacher_turns and all("reference" not in t.private_context for t in teacher_turns)
    page = page_of(researcher_client, dialogue)
    assert TEACHER_AND_VERIFIER not in page
    panel = task_panel(page)
    assert VERIFIER_ONLY in panel
    assert "The run's protocol hid the reference from the teacher" in html.unescape(panel)
    # The teacher still saw the verifier's details of each reply it answered.
    summaries = verifier_summaries(page)
    students = [t for t in dialogue.turns.all() if t.role == Turn.Role.STUDENT]
    answered = students[: len(teacher_turns)]
    assert summaries[: len(answered)] == ["Verifier details (the teacher saw them)"] * len(answered)


def test_a_reference_the_teacher_was_given_is_labelled_as_the_teacher_s(
    researcher_client: Any, play: Any
) -> None:
    dialogue = didactic_dialogue(play, teacher_sees_reference=True)
    assert all("reference" in t.private_context for t in dialogue.turns.filter(role="teacher"))
    page = page_of(researcher_client, dialogue)
    assert TEACHER_AND_VERIFIER in page and 'id="reference-note"' not in page
    assert TEACHER_AND_VERIFIER in task_panel(page)
    assert 'id="show-private"' in page


def test_verifier_details_the_protocol_hid_are_the_verifier_s_only(
    researcher_client: Any, play: Any
) -> None:
    dialogue = didactic_dialogue(play, teacher_sees_verifier_details=False)
    page = page_of(researcher_client, dialogue)
    assert "(the teacher saw them)" not in page and "(only the verifier saw them)" in page
    summaries = verifier_summaries(page)
    assert summaries and set(summaries) == {"Verifier details (only the verifier saw them)"}


def sharded_dialogue(play: Any) -> Dialogue:
    task_set = TaskSetFactory()
    TaskFactory(
        task_set=task_set, prompt="What is 3 + 4?", reference={"answer": "7"},
        shards=["I need a sum.", "The first number is 3.", "The second number is 4."],
    )  # fmt: skip
    run = play(
        task_set=task_set,
        protocol=ProtocolFactory(mode=Protocol.Mode.SHARDED, max_turns=4),
        # Asks for the next piece while any is missing: two user turns in a round each time.
        student=StudentFactory(
            location="sharded-student", generation_params={"ask_probability": 1.0}
        ),
        user_simulator=StudentFactory(location="shard-revealer"),
    )  # fmt: skip
    return Dialogue.objects.get(run=run)


def speaker_labels(page: str) -> list[str]:
    return [
        " ".join(re.sub(r"<[^>]+>", " ", label).split())
        for label in re.findall(r'<div class="speaker">(.*?)</div>', page, flags=re.S)
    ]


def test_sharded_messages_are_labelled_apart_and_there_is_no_teacher_switch(
    researcher_client: Any, play: Any
) -> None:
    dialogue = sharded_dialogue(play)
    turns = list(dialogue.turns.all())
    first_round_users = [t for t in turns if t.round == 1 and t.role == Turn.Role.USER]
    assert len(first_round_users) == 2, "shard 1 opens turn 1 and shard 2 answers its reply"
    page = page_of(researcher_client, dialogue)
    labels = [label for label in speaker_labels(page) if label != "Task"]
    assert len(labels) == len(turns)
    assert len(set(labels)) == len(labels), labels  # no two messages carry the same label
    # Each message named as on every page (webapp/dialogues/numbering.py).
    assert labels[0] == "User simulator · turn 1 · message #1 · shard 1 of 3"
    assert labels[2] == "User simulator · turn 1 · message #3 · shard 2 of 3"
    # Each turn k is named once, above its messages.
    heads = re.findall(r'<li class="round-head" id="round-(\d+)">Turn (\d+)</li>', page)
    assert [int(k) for k, _ in heads] == sorted({t.round for t in turns})
    # No teacher spoke: no switch for what the teacher saw, and the reference is the verifier's.
    assert 'id="show-private"' not in page and 'id="private-toggle"' not in page
    assert VERIFIER_ONLY in task_panel(page)
    assert "This protocol has no teacher" in task_panel(page)


def test_who_saw_reads_the_teacher_turns_private_context() -> None:
    def make(index: int, role: str, context: dict[str, Any] | None = None) -> Turn:
        return Turn(index=index, round=1, role=role, kind="other", text="",
                    private_context=context or {})  # fmt: skip

    turns = [
        make(0, "student"),
        make(1, "teacher", {"extracted": "4", "verdict_details": {"expected": "7"}}),
        make(2, "student"),
        make(3, "teacher", {"extracted": "5"}),
        make(4, "student"),
    ]
    seen = who_saw(turns, protocol_mode="didactic", teacher_sees_reference=False)
    assert seen.has_teacher_turns and not seen.teacher_saw_reference
    assert seen.details_seen_by_teacher == {0}
    assert "hid the reference" in seen.reference_note
    quiet = who_saw(turns[:1], protocol_mode="didactic", teacher_sees_reference=True)
    assert not quiet.has_teacher_turns and "never spoke" in quiet.reference_note
