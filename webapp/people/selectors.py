"""Reads for people in the dialogue: what a worker resumes, and what a person may answer."""

from __future__ import annotations

from django.db.models import QuerySet

from webapp.accounts.models import User
from webapp.dialogues.models import Dialogue, PendingTurn
from webapp.people.services import may_answer
from webapp.runs.models import Run

LIVE_RUN_STATUSES = (Run.Status.QUEUED, Run.Status.RUNNING, Run.Status.WAITING)


def waiting_keys(*, run_id: int) -> set[tuple[int, int]]:
    """(task id, sample index) of the run's dialogues parked for a person, answered or not:
    a worker plays none of them from the start again."""
    return set(
        PendingTurn.objects.filter(run_id=run_id, status__in=PendingTurn.LIVE_STATUSES).values_list(
            "task_id", "sample_index"
        )
    )


def answered_turns(*, run_id: int) -> list[PendingTurn]:
    """The run's parked dialogues whose person answered: the worker plays them on."""
    return list(
        PendingTurn.objects.filter(run_id=run_id, status=PendingTurn.Status.ANSWERED)
        .select_related("answered_by")
        .order_by("id")
    )


def inbox(*, user: User) -> QuerySet[PendingTurn]:
    """The open turns ``user`` may answer, in live runs, oldest first."""
    return (
        PendingTurn.objects.filter(
            may_answer(user),
            status=PendingTurn.Status.OPEN,
            run__status__in=LIVE_RUN_STATUSES,
        )
        .select_related("run", "task", "claimed_by", "assigned_to")
        .distinct()
        .order_by("created_at", "id")
    )


def runs_playing_my_answers(*, user: User) -> QuerySet[Run]:
    """The queued runs that hold ``user``'s answers for the model to reply to: what their
    inbox says they wait for."""
    return Run.objects.filter(
        status=Run.Status.QUEUED,
        pending_turns__answered_by=user,
        pending_turns__status=PendingTurn.Status.ANSWERED,
    ).distinct()


def pending_for(*, pk: int, user: User) -> PendingTurn:
    """A turn ``user`` may see: theirs to answer, or any turn for a researcher (who reassigns
    and ends them). ``PendingTurn.DoesNotExist`` otherwise."""
    turns = PendingTurn.objects.select_related(
        "run", "task", "claimed_by", "assigned_to", "answered_by"
    )
    if not user.is_researcher:
        turns = turns.filter(may_answer(user)).distinct()
    return turns.get(pk=pk)


def may_answer_turn(*, pending: PendingTurn, user: User) -> bool:
    """Whether ``user`` is one of the people who may answer this turn (a researcher sees every
    turn, but answers only those of runs they are one of the people of, or assigned to them)."""
    return PendingTurn.objects.filter(may_answer(user), pk=pending.pk).exists()


def next_turn_of_dialogue(*, pending: PendingTurn, user: User) -> PendingTurn | None:
    """The dialogue's newer open turn that ``user`` may answer, once the worker played on
    from ``pending`` and parked the dialogue again (a new row: same run, task and sample)."""
    return (
        PendingTurn.objects.filter(
            may_answer(user),
            run_id=pending.run_id,
            task_id=pending.task_id,
            sample_index=pending.sample_index,
            status=PendingTurn.Status.OPEN,
            pk__gt=pending.pk,
        )
        .order_by("-pk")
        .first()
    )


def waits_for_someone_else(*, pending: PendingTurn) -> bool:
    """Whether the dialogue was parked again after ``pending`` (for a person other than the one
    asking, when ``next_turn_of_dialogue`` found nothing for them)."""
    return PendingTurn.objects.filter(
        run_id=pending.run_id,
        task_id=pending.task_id,
        sample_index=pending.sample_index,
        status=PendingTurn.Status.OPEN,
        pk__gt=pending.pk,
    ).exists()


def stored_dialogue(*, pending: PendingTurn) -> Dialogue | None:
    """The dialogue ``pending`` belongs to, once it ended and was stored; None while it plays."""
    return (
        Dialogue.objects.filter(
            run_id=pending.run_id, task_id=pending.task_id, sample_index=pending.sample_index
        )
        .only(
            "pk", "outcome", "first_correct_turn", "num_turns", "end_reason", "ended_by", "end_note"
        )
        .first()
    )


def reassign_choices(*, pending: PendingTurn) -> QuerySet[User]:
    """The run's people who could answer this turn: annotators only answer as teachers."""
    people = pending.run.people.order_by("username")
    if pending.role != PendingTurn.Role.TEACHER:
        people = people.filter(role=User.Role.RESEARCHER)
    return people
