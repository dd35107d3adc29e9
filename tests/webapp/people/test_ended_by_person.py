"""A dialogue a researcher ends by hand from its waiting turn is "ended by a person", with who
and why, on every page and export that shows how dialogues end; a time-out stays "no_answer".
Before, a hand ending was stored as a time-out ("A person did not answer in time") while the
deadline was still days away."""

from __future__ import annotations

import importlib
import json
from datetime import timedelta

import pytest
from django.apps import apps
from django.urls import reverse
from django.utils import timezone

from tests.webapp.people.test_people_pages import _pending, _run, _turn_url
from webapp.dialogues.models import Dialogue, PendingTurn
from webapp.people import services

pytestmark = pytest.mark.django_db


def _end_by_hand(client, pending: PendingTurn, reason: str = "the student left") -> Dialogue:  # type: ignore[no-untyped-def]
    response = client.post(_turn_url(pending, "end/"), {"end-reason": reason})
    assert response.status_code == 302
    return Dialogue.objects.get(run=pending.run, task=pending.task)


def test_a_hand_ending_is_not_a_time_out(researcher_client, researcher) -> None:  # type: ignore[no-untyped-def]
    pending = _pending(_run(researcher), "teacher", deadline=timezone.now() + timedelta(days=6))
    dialogue = _end_by_hand(researcher_client, pending)
    pending.refresh_from_db()
    assert pending.status == PendingTurn.Status.ENDED
    assert dialogue.end_reason == Dialogue.EndReason.ENDED_BY_PERSON
    assert dialogue.outcome == Dialogue.Outcome.UNSOLVED and dialogue.first_correct_turn is None
    assert (dialogue.ended_by, dialogue.end_note) == (researcher.username, "the student left")


def test_a_time_out_stays_no_answer_with_nobody_named(researcher) -> None:  # type: ignore[no-untyped-def]
    pending = _pending(_run(researcher), "student", deadline=timezone.now() - timedelta(minutes=1))
    assert services.pending_expire() == 1
    pending.refresh_from_db()
    assert pending.status == PendingTurn.Status.TIMED_OUT
    assert pending.events[-1]["action"] == "timed_out" and pending.events[-1]["by"] == ""
    dialogue = Dialogue.objects.get(run=pending.run)
    assert (dialogue.end_reason, dialogue.ended_by, dialogue.end_note) == ("no_answer", "", "")


def test_the_dialogue_page_says_who_ended_it_and_why(researcher_client, researcher) -> None:  # type: ignore[no-untyped-def]
    dialogue = _end_by_hand(researcher_client, _pending(_run(researcher), "teacher"))
    page = researcher_client.get(reverse("dialogue_detail", args=[dialogue.pk])).content.decode()
    assert "Ended by a person" in page
    assert f"({researcher.username}: “the student left”)" in page
    assert "did not answer in time" not in page


def test_the_transcript_list_filters_and_marks_hand_endings(researcher_client, researcher) -> None:  # type: ignore[no-untyped-def]
    run = _run(researcher)
    ended = _end_by_hand(researcher_client, _pending(run, "teacher"))
    late = _pending(run, "student", deadline=timezone.now() - timedelta(minutes=1))
    services.pending_expire()
    timed_out = Dialogue.objects.get(run=run, task=late.task)
    url = reverse("dialogue_list")

    by_hand = researcher_client.get(url, {"end_reason": "ended_by_person"})
    assert [row.pk for row in by_hand.context["page"].object_list] == [ended.pk]
    assert "ended by a person" in by_hand.content.decode()
    no_answer = researcher_client.get(url, {"end_reason": "no_answer"})
    assert [row.pk for row in no_answer.context["page"].object_list] == [timed_out.pk]
    assert "ended by a person</span>" not in no_answer.content.decode()
    page = researcher_client.get(url).content.decode()
    assert 'name="end_reason"' in page and 'value="ended_by_person"' in page


def test_the_export_carries_the_end_reason_who_and_why(researcher_client, researcher) -> None:  # type: ignore[no-untyped-def]
    dialogue = _end_by_hand(researcher_client, _pending(_run(researcher), "teacher"))
    response = researcher_client.get(reverse("dialogue_export_download"), {"format": "jsonl"})
    records = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    (record,) = [record for record in records if record["id"] == dialogue.pk]
    assert record["end_reason"] == "ended_by_person"
    assert (record["ended_by"], record["end_note"]) == (researcher.username, "the student left")


def test_the_data_migration_marks_earlier_hand_endings(researcher) -> None:  # type: ignore[no-untyped-def]
    """Stored before the fix: a hand ending and a time-out both "timed_out" / "no_answer"; the
    turn's events tell them apart, and only the hand ending is changed."""
    run = _run(researcher)
    stored = []
    for action, by, reason in [
        ("ended", researcher.username, "wrong task"),
        ("timed_out", "", "no answer before the deadline"),
    ]:
        pending = _pending(run, "teacher")
        event = {"at": "2026-01-01T00:00:00+00:00", "action": action, "by": by, "reason": reason}
        pending.status = PendingTurn.Status.TIMED_OUT
        pending.events = [{**event, "action": "reassigned", "reason": "away"}, event]
        pending.save()
        stored.append(
            Dialogue.objects.create(
                run=run,
                task=pending.task,
                sample_index=0,
                seed=7,
                outcome="unsolved",
                num_turns=1,
                end_reason="no_answer",
            )
        )
    migration = importlib.import_module("webapp.dialogues.migrations.0012_ended_by_person")
    migration.mark_hand_endings(apps, None)

    hand, late = (Dialogue.objects.get(pk=dialogue.pk) for dialogue in stored)
    assert (hand.end_reason, hand.ended_by, hand.end_note) == (
        "ended_by_person",
        researcher.username,
        "wrong task",
    )
    assert (late.end_reason, late.ended_by) == ("no_answer", "")
    statuses = list(PendingTurn.objects.order_by("pk").values_list("status", flat=True))
    assert statuses == ["ended", "timed_out"]

    migration.unmark_hand_endings(apps, None)
    assert Dialogue.objects.get(pk=hand.pk).end_reason == "no_answer"
