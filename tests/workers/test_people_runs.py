"""A run where a person plays the teacher, played by the real worker code in-process: the
dialogues that wait for the person are parked in the database and the job ends; an answer
queues the run again and the next job plays that dialogue on; the live accuracy never counts
the quick dialogues without the waiting ones; an unanswered turn times out into an ended
dialogue."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from models_gpu.spec.reports import Accounting
from tests.factories import (
    ProtocolFactory,
    StudentFactory,
    TaskFactory,
    TaskSetFactory,
    UserFactory,
    frozen_run,
)
from webapp.dialogues.models import Dialogue, PendingTurn, Turn
from webapp.models_registry.models import ModelSpec
from webapp.people import services as people
from webapp.runs import selectors
from webapp.runs.models import Run
from workers.evaluation import (
    AnswersGivenMeanwhile,
    execute_evaluation,
    pending_jobs,
    run_tasks,
)

pytestmark = pytest.mark.django_db


def person_taught_run(tasks: int = 10, max_turns: int = 3) -> Run:
    task_set = TaskSetFactory()
    for i in range(tasks):
        TaskFactory(task_set=task_set, position=i, prompt=f"What is {10 + i} + {20 + i}?",
                    reference={"answer": str(30 + 2 * i)})  # fmt: skip
    person = ModelSpec.objects.create(name="a person", backend="human")
    # No first answer is right, whatever the seeds (they follow the task ids, which differ
    # between databases): every dialogue has a turn for the person.
    student = StudentFactory(generation_params={"first_try_accuracy": 0.0, "feedback_gain": 0.5})
    return frozen_run(
        task_set=task_set, student=student, teacher=person,
        protocol=ProtocolFactory(max_turns=max_turns), progress_total=tasks,
    )  # fmt: skip


def answer(pending: PendingTurn, text: str, user) -> None:  # type: ignore[no-untyped-def]
    assert people.pending_claim(pending=pending, user=user)
    people.pending_answer(pending=pending, user=user, text=text)


def test_a_person_teacher_run_waits_resumes_on_answers_and_ends() -> None:
    run = person_taught_run()
    alice = UserFactory(username="alice")
    run.people.add(alice)

    assert execute_evaluation(run.pk, worker="w", background_heartbeat=False)
    run.refresh_from_db()
    waiting = list(PendingTurn.objects.filter(run=run, status="open"))
    stored = Dialogue.objects.filter(run=run).count()
    assert run.status == Run.Status.WAITING and waiting and stored + len(waiting) == 10
    assert {(p.role, p.round, p.rounds_played) for p in waiting} == {("teacher", 1, 1)}
    reference = waiting[0].request["private_context"]["reference"]
    assert reference == waiting[0].task.reference

    # Live accuracy: turn 1 is known for every dialogue, later turns for none yet.
    curve = selectors.runs_accuracy_by_turn(runs=[Run.objects.get(pk=run.pk)])[run.pk].points
    assert curve[0].accuracy.total == 10 and curve[0].accuracy.successes == stored  # type: ignore[union-attr]
    assert [point.accuracy for point in curve[1:]] == [None, None], "not known yet"

    # The person answers one turn: the run is queued again, and the next job plays it on.
    first = waiting[0]
    answer(first, f"Add the tens first. The answer is {first.task.reference['answer']}!", alice)
    assert Run.objects.get(pk=run.pk).status == Run.Status.QUEUED
    assert execute_evaluation(run.pk, worker="w", background_heartbeat=False)
    first.refresh_from_db()
    assert first.status == PendingTurn.Status.DONE
    dialogue = Dialogue.objects.filter(run=run, task=first.task).first()
    again = PendingTurn.objects.filter(run=run, task=first.task, status="open").first()
    assert (dialogue is None) != (again is None), "ended or waiting again, never both"
    if dialogue is not None:
        turns = list(dialogue.turns.values("role", "text", "private_context", "leak_flag"))
    else:
        turns = again.turns  # type: ignore[union-attr]
    feedback = turns[1]  # the student's first reply, then the person's feedback
    assert feedback["role"] == "teacher" and feedback["text"].startswith("Add the tens first")
    assert feedback["private_context"]["person"] == "alice"
    assert feedback["leak_flag"], "a person's turn is checked for leaks like a model's"
    assert Run.objects.get(pk=run.pk).accounting["person_turns"] == 1

    # The others are never answered: past their deadline they end, and the run with them.
    PendingTurn.objects.filter(run=run, status="open").update(
        deadline=timezone.now() - timedelta(seconds=1)
    )
    assert people.pending_expire() >= len(waiting) - 1
    run.refresh_from_db()
    assert run.status == Run.Status.SUCCEEDED
    assert Dialogue.objects.filter(run=run).count() == 10
    assert Dialogue.objects.filter(run=run, end_reason="no_answer").count() >= len(waiting) - 1
    assert not PendingTurn.objects.filter(run=run, status__in=PendingTurn.LIVE_STATUSES).exists()


def test_of_two_people_racing_for_a_turn_one_answer_is_stored_and_the_other_told() -> None:
    run = person_taught_run(tasks=2)
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    run.people.add(alice, bob)
    execute_evaluation(run.pk, worker="w", background_heartbeat=False)
    pending = PendingTurn.objects.filter(run=run, status="open").first()
    assert pending is not None
    assert people.pending_claim(pending=pending, user=alice)
    assert not people.pending_claim(pending=pending, user=bob)
    with pytest.raises(people.TurnTaken, match="alice is answering this turn"):
        people.pending_answer(pending=pending, user=bob, text="mine")
    people.pending_answer(pending=pending, user=alice, text="hers")
    with pytest.raises(people.TurnTaken, match="no longer waiting"):
        people.pending_answer(pending=pending, user=alice, text="again")
    pending.refresh_from_db()
    assert (pending.answer, pending.answered_by) == ("hers", alice)


def test_an_answer_given_while_the_worker_plays_wakes_the_run_when_it_rests() -> None:
    run = person_taught_run(tasks=3)
    alice = UserFactory(username="alice")
    run.people.add(alice)
    execute_evaluation(run.pk, worker="w", background_heartbeat=False)
    pending = PendingTurn.objects.filter(run=run, status="open").first()
    assert pending is not None
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)  # a worker is playing it
    answer(pending, "Try again.", alice)
    assert Run.objects.get(pk=run.pk).status == Run.Status.RUNNING  # not woken under a worker
    people.run_rest(run_id=run.pk, accounting=Accounting())
    assert Run.objects.get(pk=run.pk).status == Run.Status.QUEUED  # woken when it rested


def test_the_recovery_sweep_ends_turns_past_their_deadline() -> None:
    from io import StringIO

    from django.core.management import call_command

    run = person_taught_run(tasks=2)
    execute_evaluation(run.pk, worker="w", background_heartbeat=False)
    waiting = PendingTurn.objects.filter(run=run, status="open").count()
    assert waiting
    out = StringIO()
    call_command("resume_stale_runs", stdout=out)
    assert "ended 0 dialogue(s)" in out.getvalue()  # not due yet
    PendingTurn.objects.filter(run=run).update(deadline=timezone.now() - timedelta(seconds=1))
    call_command("resume_stale_runs", stdout=out)
    assert f"ended {waiting} dialogue(s)" in out.getvalue()
    pending = PendingTurn.objects.filter(run=run).first()
    assert pending is not None and pending.events[-1]["reason"] == "no answer before the deadline"
    assert Run.objects.get(pk=run.pk).status == Run.Status.SUCCEEDED


def test_dialogues_taught_by_a_person_are_selected_by_the_teacher_filter() -> None:
    from django.http import QueryDict

    from tests.factories import TeacherFactory
    from webapp.transcripts.forms import DialogueFilterForm
    from webapp.transcripts.selectors import dialogue_list

    taught = person_taught_run(tasks=2)
    execute_evaluation(taught.pk, worker="w", background_heartbeat=False)
    PendingTurn.objects.filter(run=taught).update(deadline=timezone.now() - timedelta(seconds=1))
    people.pending_expire()
    by_model = frozen_run(task_set=taught.task_set, teacher=TeacherFactory(), progress_total=2)
    execute_evaluation(by_model.pk, worker="w", background_heartbeat=False)
    researcher = UserFactory()

    def selected(query: str) -> set[int]:
        filters = DialogueFilterForm.from_query(QueryDict(query), reader=researcher).filters()
        return set(
            dialogue_list(filters=filters, reader=researcher).values_list("run_id", flat=True)
        )

    assert selected("teacher=person") == {taught.pk}
    assert selected("teacher=model") == {by_model.pk}


def test_an_answer_survives_a_worker_that_died_before_playing_it() -> None:
    """The answered turn stays "answered" until its dialogue is stored or parked again, so the
    worker that resumes a dead one's claim plays it (once)."""
    from webapp.core.heartbeat import stale_after
    from webapp.runs import services as run_services

    run = person_taught_run(tasks=2)
    alice = UserFactory(username="alice")
    run.people.add(alice)
    execute_evaluation(run.pk, worker="w", background_heartbeat=False)
    pending = PendingTurn.objects.filter(run=run, status="open").first()
    assert pending is not None
    answer(pending, "Think again.", alice)
    # A worker claims the woken run and dies at once: its heartbeat goes stale.
    assert run_services.run_claim(run_id=run.pk, worker="dead", stale_after=stale_after())
    Run.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - 2 * stale_after())
    assert PendingTurn.objects.get(pk=pending.pk).status == PendingTurn.Status.ANSWERED

    assert execute_evaluation(run.pk, worker="second", background_heartbeat=False)
    assert PendingTurn.objects.get(pk=pending.pk).status == PendingTurn.Status.DONE
    taught = Turn.objects.filter(dialogue__run=run, private_context__person="alice").count()
    # Ended (its turns stored) or waiting again (a new row): one or the other, once.
    waiting = PendingTurn.objects.filter(run=run, task=pending.task, status="open").count()
    assert taught + waiting == 1, "the answer was played exactly once"


def test_an_answer_given_while_the_runs_job_plays_joins_that_job_once() -> None:
    """The job plays answered dialogues first; one answered after it started is taken up
    between its chunks (``AnswersGivenMeanwhile``), once, instead of waiting for the next job."""
    run = person_taught_run(tasks=4)
    alice = UserFactory(username="alice")
    run.people.add(alice)
    assert execute_evaluation(run.pk, worker="w", background_heartbeat=False)
    waiting = list(PendingTurn.objects.filter(run=run, status="open").order_by("pk"))
    assert len(waiting) >= 2
    answer(waiting[0], "Look at the units.", alice)

    config = Run.objects.get(pk=run.pk).frozen_config
    tasks = run_tasks(config)
    jobs = pending_jobs(run.pk, config, tasks)
    assert jobs[0].person_reply is not None and jobs[0].task.task_id == waiting[0].task_id
    take_up = AnswersGivenMeanwhile(run.pk, tasks, jobs)
    assert take_up() == [], "the answer given before the job is among its own jobs"
    answer(waiting[1], "Look at the tens.", alice)
    taken = take_up()
    assert [(job.task.task_id, job.person_reply.text) for job in taken] == [  # type: ignore[union-attr]
        (waiting[1].task_id, "Look at the tens.")
    ]
    assert take_up() == [], "taken once"
