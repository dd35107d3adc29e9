"""Writes for people in the dialogue: parking a dialogue for a person (worker side), and a
person claiming, drafting and answering its turn (web side), with reassignment and time-outs.

Who answers a turn is settled in the database, never in a browser: a turn is claimed with one
conditional update (so two people cannot both hold it) and answered with another that requires
the claim (so of two browsers racing, exactly one answer is stored and the other is told).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.db.models.functions import Now
from django.utils import timezone

from models_gpu.spec.reports import Accounting
from models_gpu.spec.results import DialogueRow, ParkedRow, TurnRow
from webapp.accounts.models import User
from webapp.dialogues.models import Dialogue, PendingTurn
from webapp.runs.models import Run
from webapp.runs.services import dialogues_store, run_finish, run_wait, run_wake

Key = tuple[int, int]  # (task id, sample index): one dialogue of a run


class TurnTaken(Exception):
    """Someone else holds or answered this turn, or it is no longer waiting."""


def _event(action: str, by: User | None, reason: str = "", **extra: Any) -> dict[str, Any]:
    return {
        "at": timezone.now().isoformat(timespec="seconds"),
        "action": action,
        "by": by.username if by else "",
        "reason": reason,
        **extra,
    }


def _live(run_id: int, keys: Iterable[Key]) -> Q:
    condition = Q(pk__in=[])
    for task_id, sample_index in keys:
        condition |= Q(task_id=task_id, sample_index=sample_index)
    return Q(run_id=run_id, status__in=PendingTurn.LIVE_STATUSES) & condition


def pending_settle(*, run_id: int, keys: Sequence[Key]) -> None:
    """The worker played these dialogues on from their answered turns (they ended, or wait
    again in a new row): their answered rows are done."""
    if keys:
        PendingTurn.objects.filter(_live(run_id, keys), status=PendingTurn.Status.ANSWERED).update(
            status=PendingTurn.Status.DONE
        )


@transaction.atomic
def pending_park(*, run_id: int, parked: Sequence[ParkedRow]) -> None:
    """Store dialogues the engine left waiting for a person (one open turn each)."""
    pending_settle(run_id=run_id, keys=[(p.task_id, p.sample_index) for p in parked])
    deadline = timezone.now() + timedelta(seconds=settings.DIALAB_PERSON_TURN_TIMEOUT_SECONDS)
    PendingTurn.objects.bulk_create(
        PendingTurn(
            run_id=run_id,
            task_id=p.task_id,
            sample_index=p.sample_index,
            seed=p.seed,
            role=p.role,
            round=p.round,
            rounds_played=p.rounds_played,
            turns=[asdict(turn) for turn in p.turns],
            request={
                "messages": [{"role": role, "content": text} for role, text in p.messages],
                "private_context": dict(p.private_context),
            },
            deadline=deadline,
        )
        for p in parked
    )


def _claim_age() -> timedelta:
    return timedelta(seconds=settings.DIALAB_PERSON_CLAIM_SECONDS)


def may_answer(q_user: User) -> Q:
    """The open turns ``q_user`` may answer: assigned to them, or to nobody in a run they are
    one of the people of; annotators answer only as teachers (the labelling role rule: they
    read what a teacher reads, never act as the student or the user)."""
    allowed = Q(assigned_to=q_user) | Q(assigned_to__isnull=True, run__people=q_user)
    if not q_user.is_researcher:
        allowed &= Q(role=PendingTurn.Role.TEACHER)
    return allowed


def pending_claim(*, pending: PendingTurn, user: User) -> bool:
    """Hold the turn for ``user`` (so no one else can answer it), unless someone else holds
    it and wrote in the last ``DIALAB_PERSON_CLAIM_SECONDS``; True when ``user`` holds it."""
    free = Q(claimed_by__isnull=True) | Q(claimed_by=user) | Q(claimed_at__lt=Now() - _claim_age())
    claimed = (
        PendingTurn.objects.filter(free, pk=pending.pk, status=PendingTurn.Status.OPEN)
        .filter(may_answer(user))
        .update(claimed_by=user, claimed_at=Now())
    )
    return bool(claimed)


def pending_draft_save(*, pending: PendingTurn, user: User, text: str) -> bool:
    """Keep what ``user`` typed so far (a closed tab loses nothing), renewing their hold;
    False when they no longer hold the turn."""
    saved = PendingTurn.objects.filter(
        pk=pending.pk, status=PendingTurn.Status.OPEN, claimed_by=user
    ).update(draft=text, claimed_at=Now())
    return bool(saved)


def pending_answer(*, pending: PendingTurn, user: User, text: str) -> None:
    """Store ``user``'s answer and wake the run; ``TurnTaken`` when they do not hold the turn
    (someone else answered or holds it, or it ended). Empty answers are the form's to refuse."""
    with transaction.atomic():
        answered = PendingTurn.objects.filter(
            pk=pending.pk, status=PendingTurn.Status.OPEN, claimed_by=user
        ).update(
            status=PendingTurn.Status.ANSWERED,
            answer=text,
            draft=text,
            answered_by=user,
            answered_at=Now(),
        )
        if not answered:
            raise TurnTaken(taken_message(pending=pending, user=user))
        run_wake(run_id=pending.run_id)


def taken_message(*, pending: PendingTurn, user: User) -> str:
    """Why ``user`` cannot answer this turn, as they should be told."""
    pending.refresh_from_db()
    if pending.status == PendingTurn.Status.OPEN:
        holder = pending.claimed_by.username if pending.claimed_by else "someone else"
        return f"{holder} is answering this turn: it is theirs until they stop typing for a while."
    if pending.answered_by is not None and pending.answered_by != user:
        return f"{pending.answered_by.username} answered this turn first; yours was not sent."
    return f"This turn is no longer waiting ({pending.get_status_display().lower()})."


def pending_reassign(*, pending: PendingTurn, to: User | None, reason: str, by: User) -> None:
    """Give an open turn to ``to`` (None: back to any of the run's people), recording why; a
    hold on it is dropped, its draft kept."""
    with transaction.atomic():
        locked = PendingTurn.objects.select_for_update().get(pk=pending.pk)
        if locked.status != PendingTurn.Status.OPEN:
            raise TurnTaken("This turn is no longer waiting: it cannot be reassigned.")
        locked.events = [
            *locked.events,
            _event("reassigned", by, reason, to=to.username if to else "anyone"),
        ]
        locked.assigned_to = to
        locked.claimed_by = None
        locked.claimed_at = None
        locked.save(update_fields=["events", "assigned_to", "claimed_by", "claimed_at"])


def pending_expire(*, run_id: int | None = None) -> int:
    """End the dialogues whose open turn passed its deadline ("no_answer", the reason
    recorded), closing runs left with nothing to wait for; returns how many ended."""
    due = PendingTurn.objects.filter(status=PendingTurn.Status.OPEN, deadline__lt=Now())
    if run_id is not None:
        due = due.filter(run_id=run_id)
    ended = 0
    for pending_id in due.values_list("pk", flat=True):
        ended += _end_unanswered(pending_id, reason="no answer before the deadline", by=None)
    return ended


def pending_end(*, pending: PendingTurn, reason: str, by: User) -> None:
    """End an open turn's dialogue now, by hand ("ended_by_person", not a time-out), recording
    who and why on the turn and on the stored dialogue. The dialogue is unsolved."""
    if not _end_unanswered(pending.pk, reason=reason, by=by):
        raise TurnTaken("This turn is no longer waiting: it cannot be ended.")


def _end_unanswered(pending_id: int, *, reason: str, by: User | None) -> int:
    """End an open turn's dialogue unsolved: a time-out when ``by`` is None, else ended by
    ``by``. 1 if it was open, 0 if not (answered, ended or cancelled meanwhile)."""
    by_hand = by is not None
    with transaction.atomic():
        pending = (
            PendingTurn.objects.select_for_update()
            .filter(pk=pending_id, status=PendingTurn.Status.OPEN)
            .first()
        )
        if pending is None:
            return 0
        pending.status = PendingTurn.Status.ENDED if by_hand else PendingTurn.Status.TIMED_OUT
        pending.events = [*pending.events, _event("ended" if by_hand else "timed_out", by, reason)]
        pending.save(update_fields=["status", "events"])
        turns = tuple(TurnRow(**turn) for turn in pending.turns)
        played = Run.objects.get(pk=pending.run_id).dialogue_config
        forks = played.forks if played is not None else None
        parent_id, fork_turns = forks.parents[pending.sample_index] if forks else (None, None)
        end_reason = Dialogue.EndReason.ENDED_BY_PERSON if by_hand else Dialogue.EndReason.NO_ANSWER
        dialogues_store(
            run_id=pending.run_id,
            dialogues=[
                DialogueRow(
                    task_id=pending.task_id,
                    sample_index=pending.sample_index,
                    seed=pending.seed,
                    outcome="unsolved",
                    first_correct_turn=None,
                    num_turns=pending.rounds_played,
                    end_reason=end_reason,
                    turns=turns,
                    parent_id=parent_id,
                    fork_turns=fork_turns,
                )
            ],
            ended_by=by.username if by is not None else "",
            end_note=reason if by_hand else "",
        )
        _finish_if_nothing_waits(pending.run_id)
    return 1


def has_live_turns(run_id: int) -> bool:
    return PendingTurn.objects.filter(run_id=run_id, status__in=PendingTurn.LIVE_STATUSES).exists()


def _finish_if_nothing_waits(run_id: int) -> None:
    """A run waiting for people with no live turn left is over."""
    if has_live_turns(run_id):
        return
    if Run.objects.filter(pk=run_id, status=Run.Status.WAITING).exists():
        run_finish(run_id=run_id, status=Run.Status.SUCCEEDED)


def run_rest(*, run_id: int, accounting: Accounting) -> None:
    """The worker played all it could: the run waits if any of its dialogues waits for a
    person, else it succeeded. Waiting is recorded before answers are looked for, and an answer
    is stored before its run is woken, so an answer given meanwhile always wakes the run."""
    if not has_live_turns(run_id):
        run_finish(run_id=run_id, status=Run.Status.SUCCEEDED, accounting=accounting)
        return
    run_wait(run_id=run_id, accounting=accounting)
    if PendingTurn.objects.filter(run_id=run_id, status=PendingTurn.Status.ANSWERED).exists():
        run_wake(run_id=run_id)
