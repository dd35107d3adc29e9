"""The inbox and turn pages of a person in the dialogue: who sees what, claims, answers,
drafts, and a researcher's reassign and end."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from tests.factories import TaskFactory, UserFactory, frozen_run
from webapp.accounts.models import User
from webapp.dialogues.models import Dialogue, PendingTurn
from webapp.runs.models import Run

pytestmark = pytest.mark.django_db

REFERENCE = "secret-reference-4242"
SAME_DIALOGUE = ("run", "task", "sample_index", "seed", "role", "turns", "request")


def _student_attempt(text: str, extracted: str, correct: bool) -> dict[str, Any]:
    return {
        "index": 0, "round": 1, "role": "student", "kind": "attempt", "text": text,
        "private_context": {}, "extracted_answer": extracted, "is_correct": correct,
        "score": 1.0 if correct else 0.0, "verdict_details": {"expected": REFERENCE},
        "leak_flag": False,
    }  # fmt: skip


def _pending(
    run: Run, role: str = "teacher", *, messages: list[dict[str, str]] | None = None, **fields: Any
) -> PendingTurn:
    """A parked turn as the worker writes it (services.pending_park), built directly."""
    task = TaskFactory(task_set=run.task_set, reference={"answer": REFERENCE})
    if role == "teacher":
        private = {
            "extracted": "41",
            "reference": dict(task.reference),
            "verdict_details": {"why": "off by one"},
        }
        turns = [_student_attempt("It is 41.", "41", False)]
    else:
        private, turns = {}, []
    return PendingTurn.objects.create(
        run=run,
        task=task,
        sample_index=0,
        seed=7,
        role=role,
        round=1,
        rounds_played=len(turns),
        turns=turns,
        request={
            "messages": messages
            or [
                {"role": "system", "content": "You are a patient teacher."},
                {"role": "assistant", "content": task.prompt},
                {"role": "user", "content": "It is 41."},
            ],
            "private_context": private,
        },
        **{"deadline": timezone.now() + timedelta(days=1), **fields},
    )


def _run(*people: User) -> Run:
    run = frozen_run(name="people run", status=Run.Status.WAITING)
    run.people.add(*people)
    return run


def _turn_url(pending: PendingTurn, suffix: str = "") -> str:
    return reverse("people_turn", args=[pending.pk]) + suffix


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_inbox_lists_only_the_turns_the_user_may_answer(annotator_client, annotator, researcher):
    run = _run(annotator, researcher)
    teacher_turn = _pending(run, "teacher")
    student_turn = _pending(run, "student")
    other_run_turn = _pending(_run(researcher), "teacher")

    page = annotator_client.get(reverse("people_inbox")).content.decode()

    assert _turn_url(teacher_turn) in page
    assert _turn_url(student_turn) not in page
    assert _turn_url(other_run_turn) not in page
    assert "people run" in page
    assert 'id="nav-inbox"' in page


def test_empty_inbox_says_how_turns_arrive(annotator_client):
    page = annotator_client.get(reverse("people_inbox")).content.decode()
    assert "parks its dialogues here" in page


def test_inbox_applies_time_outs(researcher_client, researcher):
    run = _run(researcher)
    late = _pending(run, "student", deadline=timezone.now() - timedelta(minutes=1))

    page = researcher_client.get(reverse("people_inbox")).content.decode()

    assert _turn_url(late) not in page
    late.refresh_from_db()
    assert late.status == PendingTurn.Status.TIMED_OUT
    assert Dialogue.objects.get(run=run).end_reason == "no_answer"


def test_turn_page_escapes_model_output(researcher_client, researcher):
    pending = _pending(
        _run(researcher),
        "student",
        messages=[{"role": "user", "content": "<script>alert('x')</script>"}],
    )

    page = researcher_client.get(_turn_url(pending)).content.decode()

    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page


def test_teacher_sees_the_task_reference_and_verdicts(annotator_client, annotator):
    pending = _pending(_run(annotator), "teacher")

    page = annotator_client.get(_turn_url(pending)).content.decode()

    assert 'id="private"' in page and REFERENCE in page
    assert "off by one" in page
    assert "✘ wrong" in page and "<code>41</code>" in page
    assert 'name="text"' in page
    # Who said what: the task opens the teacher's side of the conversation, but no person wrote
    # it; the student's reply comes from the student.
    speakers = re.findall(r'class="speaker">([^<]*)<', page)
    assert speakers == ["Instructions", "The task, as you posed it", "Student"]


def test_student_sees_nothing_private(researcher_client, researcher):
    pending = _pending(_run(researcher), "student")

    page = researcher_client.get(_turn_url(pending)).content.decode()

    assert REFERENCE not in page
    assert 'id="private"' not in page
    assert 'name="text"' in page


def test_annotator_cannot_open_a_student_turn(annotator_client, annotator):
    pending = _pending(_run(annotator), "student")
    assert annotator_client.get(_turn_url(pending)).status_code == 404


def test_a_claimed_turn_tells_the_second_person_who_holds_it(annotator, researcher):
    pending = _pending(_run(annotator, researcher), "teacher")
    assert _client(annotator).get(_turn_url(pending)).status_code == 200

    page = _client(researcher).get(_turn_url(pending)).content.decode()

    assert f"{annotator.username} is answering this turn" in page
    assert 'class="notice taken" role="alert"' in page
    assert 'name="text"' not in page


def test_opening_a_turn_prefills_the_draft(researcher_client, researcher):
    pending = _pending(_run(researcher), "student", draft="half an answer")
    page = researcher_client.get(_turn_url(pending)).content.decode()
    assert ">half an answer</textarea>" in page


def test_answering_stores_the_answer_and_wakes_the_run(researcher_client, researcher):
    pending = _pending(_run(researcher), "student")
    researcher_client.get(_turn_url(pending))

    response = researcher_client.post(_turn_url(pending), {"text": "  The answer is 9.  "})

    assert response.status_code == 302 and response["Location"] == _turn_url(pending)
    pending.refresh_from_db()
    assert pending.status == PendingTurn.Status.ANSWERED
    assert pending.answer == "The answer is 9."
    assert pending.answered_by == researcher
    assert Run.objects.get(pk=pending.run_id).status == Run.Status.QUEUED
    page = researcher_client.get(_turn_url(pending)).content.decode()
    assert "The model is replying" in page
    assert 'hx-trigger="every 2s"' in page
    # While the run's next job waits, the page asks what it waits for, and so does the inbox.
    wait_note = reverse("run_wait", args=[pending.run_id])
    assert f'hx-get="{wait_note}"' in page
    inbox = researcher_client.get(reverse("people_inbox")).content.decode()
    assert "Your answers, waiting for the model" in inbox and f'hx-get="{wait_note}"' in inbox


def test_empty_answer_is_refused(researcher_client, researcher):
    pending = _pending(_run(researcher), "student")
    researcher_client.get(_turn_url(pending))

    response = researcher_client.post(_turn_url(pending), {"text": "   "})

    assert response.status_code == 400
    assert "Write your answer first." in response.content.decode()
    pending.refresh_from_db()
    assert pending.status == PendingTurn.Status.OPEN


def test_a_second_answer_is_refused_with_409(annotator, researcher):
    pending = _pending(_run(annotator, researcher), "teacher")
    first, second = _client(annotator), _client(researcher)
    first.get(_turn_url(pending))
    first.post(_turn_url(pending), {"text": "Check the carry."})

    response = second.post(_turn_url(pending), {"text": "My own hint."})

    assert response.status_code == 409
    page = response.content.decode()
    assert f"{annotator.username} answered this turn first" in page
    assert 'role="alert"' in page and "taken" in page
    assert ">My own hint.</textarea>" in page
    pending.refresh_from_db()
    assert pending.answer == "Check the carry."


def test_draft_is_saved_for_the_holder_only(annotator, researcher):
    pending = _pending(_run(annotator, researcher), "teacher")
    holder = _client(annotator)
    holder.get(_turn_url(pending))

    saved = holder.post(_turn_url(pending, "draft/"), {"text": "Look again at"})
    refused = _client(researcher).post(_turn_url(pending, "draft/"), {"text": "overwrite"})

    assert "Draft saved." in saved.content.decode()
    assert "not saved" in refused.content.decode()
    pending.refresh_from_db()
    assert pending.draft == "Look again at"


def test_next_redirects_to_the_dialogue_s_next_turn(researcher_client, researcher):
    run = _run(researcher)
    pending = _pending(run, "student", status=PendingTurn.Status.DONE, answered_by=researcher)
    waiting = researcher_client.get(_turn_url(pending, "next/"))
    assert waiting.status_code == 200 and "The model is replying" in waiting.content.decode()
    following = PendingTurn.objects.create(
        **{name: getattr(pending, name) for name in SAME_DIALOGUE},
        round=2,
        rounds_played=1,
    )

    response = researcher_client.get(_turn_url(pending, "next/"), headers={"HX-Request": "true"})

    assert response["HX-Redirect"] == _turn_url(following)


def test_next_shows_the_final_verdict_and_stops_polling(researcher_client, researcher):
    run = _run(researcher)
    pending = _pending(run, "student", status=PendingTurn.Status.DONE, answered_by=researcher)
    dialogue = Dialogue.objects.create(
        run=run, task=pending.task, sample_index=0, seed=7, outcome="solved",
        first_correct_turn=2, num_turns=2, end_reason="solved",
    )  # fmt: skip

    response = researcher_client.get(_turn_url(pending, "next/"))

    assert response.status_code == 286
    page = response.content.decode()
    assert "solved at turn 2" in page
    assert reverse("dialogue_detail", args=[dialogue.pk]) in page
    assert "every 2s" not in page


def test_the_replying_note_goes_once_the_dialogue_ends(researcher_client, researcher):
    """The note "Sent. The model is replying…" stood beside "The dialogue ended": it is part of
    the polled outcome, so the verdict replaces it."""
    run = _run(researcher)
    pending = _pending(run, "student", status=PendingTurn.Status.DONE, answered_by=researcher)
    polled = researcher_client.get(_turn_url(pending, "next/")).content.decode()
    assert "The model is replying…" in polled
    Dialogue.objects.create(
        run=run, task=pending.task, sample_index=0, seed=7, outcome="unsolved",
        num_turns=2, end_reason="max_turns",
    )  # fmt: skip

    for page in (
        researcher_client.get(_turn_url(pending, "next/")).content.decode(),
        researcher_client.get(_turn_url(pending)).content.decode(),
    ):
        assert "The dialogue ended" in page
        assert "replying" not in page
    assert '<p id="sent"><strong>Sent.</strong></p>' in page


def test_researcher_reassigns_a_turn(researcher_client, researcher, annotator):
    run = _run(researcher, annotator)
    pending = _pending(run, "teacher", claimed_by=researcher, claimed_at=timezone.now())

    response = researcher_client.post(
        _turn_url(pending, "reassign/"), {"reassign-to": annotator.pk, "reassign-reason": "yours"}
    )

    assert response.status_code == 302
    pending.refresh_from_db()
    assert pending.assigned_to == annotator and pending.claimed_by is None
    assert pending.events[-1]["reason"] == "yours"


def test_reassign_needs_a_reason(researcher_client, researcher):
    pending = _pending(_run(researcher), "teacher")
    response = researcher_client.post(_turn_url(pending, "reassign/"), {"reassign-to": ""})
    assert response.status_code == 400
    pending.refresh_from_db()
    assert pending.events == []


def test_annotator_cannot_reassign_or_end(annotator_client, annotator):
    pending = _pending(_run(annotator), "teacher")
    assert annotator_client.post(_turn_url(pending, "end/"), {"end-reason": "x"}).status_code == 403
    assert (
        annotator_client.post(_turn_url(pending, "reassign/"), {"reassign-reason": "x"}).status_code
        == 403
    )


def test_researcher_ends_a_dialogue_unanswered(researcher_client, researcher):
    run = _run(researcher)
    pending = _pending(run, "teacher")
    page = researcher_client.get(_turn_url(pending)).content.decode()
    assert "data-confirm=" in page and "End this dialogue unanswered" in page

    response = researcher_client.post(_turn_url(pending, "end/"), {"end-reason": "student left"})

    assert response.status_code == 302
    pending.refresh_from_db()
    # Ended by a person, not timed out: the deadline is days away.
    assert pending.status == PendingTurn.Status.ENDED
    assert (
        pending.events[-1]["action"] == "ended" and pending.events[-1]["by"] == researcher.username
    )
    dialogue = Dialogue.objects.get(run=run, task=pending.task)
    assert (dialogue.end_reason, dialogue.outcome) == ("ended_by_person", "unsolved")
    assert (dialogue.ended_by, dialogue.end_note) == (researcher.username, "student left")
    page = researcher_client.get(_turn_url(pending)).content.decode()
    assert "student left" in page
    assert "not solved" in page
    assert "Ended by a person" in page and "did not answer in time" not in page


def test_someone_else_s_user_factory_turn_is_hidden_from_annotators(annotator_client):
    other = UserFactory(role="annotator")
    pending = _pending(_run(other), "teacher")
    assert annotator_client.get(_turn_url(pending)).status_code == 404


def test_inbox_says_who_holds_a_claimed_turn(annotator, researcher):
    pending = _pending(_run(annotator, researcher), "teacher")
    _client(annotator).get(_turn_url(pending))

    page = _client(researcher).get(reverse("people_inbox")).content.decode()

    assert f"{annotator.username} is answering it" in page


def test_inbox_needs_a_login(client):
    response = client.get(reverse("people_inbox"))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_a_person_playing_the_user_sees_the_pieces_not_revealed_yet(researcher_client, researcher):
    run = _run(researcher)
    pending = _pending(run, "user_simulator")
    pending.request["private_context"] = {
        "unrevealed_shards": ["The second number is 7.", "Add them."],
        "next_shard": "The second number is 7.",
    }
    pending.save(update_fields=["request"])
    page = researcher_client.get(_turn_url(pending)).content.decode()
    assert 'id="private-shards"' in page and "The second number is 7." in page
