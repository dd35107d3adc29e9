"""The recovery sweep (worker start, ``manage.py resume_stale_runs``): which runs it sends again,
and that a resumed run plays only what is missing. The real-worker version, with a SIGKILL, is
tests/e2e/test_worker_resume.py."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import transaction
from django.utils import timezone

from models_gpu.results import dialogue_row
from models_gpu.spec.results import DialogueRow
from tests.factories import (
    ProtocolFactory,
    StudentFactory,
    TaskFactory,
    TeacherFactory,
    UserFactory,
)
from webapp.core.heartbeat import stale_after
from webapp.core.interactive_jobs import InteractiveJob
from webapp.dialogues.models import Dialogue
from webapp.models_registry.models import ModelSpec
from webapp.runs import services
from webapp.runs.models import Protocol, Run
from webapp.runs.services import dialogues_store
from webapp.tasks.models import Task
from workers.evaluation import execute_evaluation, pending_jobs

pytestmark = pytest.mark.django_db

STALE = stale_after()


@pytest.fixture
def task_set():  # type: ignore[no-untyped-def]
    first = TaskFactory()
    TaskFactory.create_batch(3, task_set=first.task_set)
    return first.task_set


def launch(task_set, django_capture_on_commit_callbacks, *, send: bool = True) -> Run:  # type: ignore[no-untyped-def]
    """A run as the web side creates it; ``send=False`` loses its message (the on-commit send
    never happens, as when the web process dies right after the commit)."""
    with django_capture_on_commit_callbacks(execute=send), transaction.atomic():
        run = services.evaluation_run_create(
            name="r", task_set=task_set, student=StudentFactory(), teacher=TeacherFactory(),
            protocol=ProtocolFactory(max_turns=3), samples_per_task=2, created_by=None,
        )  # fmt: skip
    run.refresh_from_db()
    return run


def age_heartbeat(run: Run, by: timedelta) -> None:
    Run.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - by)


def test_the_send_after_commit_is_recorded(task_set, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    sent = launch(task_set, django_capture_on_commit_callbacks, send=True)
    lost = launch(task_set, django_capture_on_commit_callbacks, send=False)
    assert sent.dispatched_at is not None
    assert lost.dispatched_at is None


def test_a_run_never_sent_is_sent_and_played(
    task_set, django_capture_on_commit_callbacks, eager_celery
) -> None:  # type: ignore[no-untyped-def]
    eager_celery.conf.task_always_eager = False
    run = launch(task_set, django_capture_on_commit_callbacks, send=False)
    eager_celery.conf.task_always_eager = True
    # Outside a test's transaction the send happens at once; here it waits for the "commit".
    with django_capture_on_commit_callbacks(execute=True):
        recovery = services.runs_recover(stale_after=STALE)
    assert recovery.dispatched == [run.pk]
    run.refresh_from_db()
    assert run.status == Run.Status.SUCCEEDED, run.error
    assert run.dispatched_at is not None and run.attempts == 1
    assert Dialogue.objects.filter(run=run).count() == 8


def test_only_stale_running_runs_are_resumed(task_set, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    alive = launch(task_set, django_capture_on_commit_callbacks)
    dead = launch(task_set, django_capture_on_commit_callbacks)
    for run in (alive, dead):
        assert services.run_claim(run_id=run.pk, worker="w", stale_after=STALE)
    age_heartbeat(dead, 3 * STALE)
    age_heartbeat(alive, STALE / 3)

    recovery = services.runs_recover(stale_after=STALE)
    assert recovery.dispatched == [dead.pk], "a sent queued run or a live run is left alone"
    # The live run would turn stale in about 2/3 of the window: the worker looks again then.
    assert recovery.next_check_in is not None
    assert STALE / 2 < recovery.next_check_in <= STALE


def test_a_resumed_run_plays_only_the_missing_dialogues(
    task_set, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    from models_gpu.backends import load_generator
    from models_gpu.engine import run_dialogues

    run = launch(task_set, django_capture_on_commit_callbacks)
    config = run.frozen_config
    assert services.run_claim(run_id=run.pk, worker="first", stale_after=STALE)
    # The first worker stored three dialogues, then died.
    first_jobs = pending_jobs(run.pk, config)[:3]
    stored: list[DialogueRow] = []
    run_dialogues(
        first_jobs,
        config.protocol,
        student=load_generator(config.student),
        teacher=load_generator(config.teacher),  # type: ignore[arg-type]
        on_finished=lambda results: stored.extend(dialogue_row(r) for r in results),
    )
    dialogues_store(run_id=run.pk, dialogues=stored)
    first_stored = set(Dialogue.objects.filter(run=run).values_list("pk", flat=True))
    assert len(first_stored) == 3
    age_heartbeat(run, 2 * STALE)

    execute_evaluation(run.pk, worker="second", background_heartbeat=False)
    run.refresh_from_db()
    assert run.status == Run.Status.SUCCEEDED, run.error
    assert (run.worker, run.attempts) == ("second", 2)
    keys = list(Dialogue.objects.filter(run=run).values_list("task_id", "sample_index"))
    every_pair = {(task.pk, sample) for task in task_set.tasks.all() for sample in range(2)}
    assert len(keys) == 8 and set(keys) == every_pair
    assert first_stored < set(Dialogue.objects.filter(run=run).values_list("pk", flat=True))
    assert run.accounting["dialogues"] == 5, "the second worker played only the missing five"


def test_a_run_that_wore_out_its_workers_is_failed(
    task_set, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    run = launch(task_set, django_capture_on_commit_callbacks)
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING, attempts=3)
    age_heartbeat(run, 2 * STALE)
    recovery = services.runs_recover(stale_after=STALE)
    assert recovery.failed == [run.pk] and recovery.dispatched == []
    run.refresh_from_db()
    assert run.status == Run.Status.FAILED
    assert "stopped 3 times without finishing it" in run.error


def test_a_cancelled_run_whose_worker_died_is_closed_as_cancelled(
    task_set, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    run = launch(task_set, django_capture_on_commit_callbacks)
    services.run_claim(run_id=run.pk, worker="w", stale_after=STALE)
    services.run_cancel(run=run)
    age_heartbeat(run, 2 * STALE)
    recovery = services.runs_recover(stale_after=STALE)
    assert recovery.cancelled == [run.pk]
    run.refresh_from_db()
    assert run.status == Run.Status.CANCELLED and run.finished_at is not None


def test_the_command_reports_what_it_sent(task_set, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    from webapp.celery import app

    run = launch(task_set, django_capture_on_commit_callbacks)  # sent, so left alone by default
    out = StringIO()
    call_command("resume_stale_runs", stdout=out)
    assert "dispatched 0 run(s)" in out.getvalue()
    try:
        call_command("resume_stale_runs", "--all-queued", stdout=out)
        assert f"dispatched 1 run(s) [{run.pk}]" in out.getvalue()
    finally:
        app.control.purge()


def test_model_output_with_nul_characters_is_stored(
    task_set, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    """An untrained model emitted NUL, which PostgreSQL refuses in text and JSON: the house-model
    browser run failed on it. Stored as U+FFFD instead."""
    from models_gpu.types import DialogueResult, TurnRecord, Verdict

    run = launch(task_set, django_capture_on_commit_callbacks)
    task = task_set.tasks.first()
    nul = "4\x002"
    result = DialogueResult(
        task_id=task.pk, sample_index=0, seed=1, solved=False, first_correct_turn=None,
        end_reason="max_turns",
        turns=(
            TurnRecord(index=0, round=1, role="student", kind="attempt", text=nul,
                       verdict=Verdict(False, 0.0, nul, {"reason": nul, "seen": [nul]})),
            TurnRecord(index=1, round=1, role="teacher", kind="feedback", text=nul,
                       private_context={"extracted": nul}),
        ),
    )  # fmt: skip
    assert dialogues_store(run_id=run.pk, dialogues=[dialogue_row(result)]) == 1
    attempt, feedback = Dialogue.objects.get(run=run).turns.order_by("index")
    assert attempt.text == attempt.extracted_answer == "4\ufffd2"
    assert attempt.verdict_details == {"reason": "4\ufffd2", "seen": ["4\ufffd2"]}
    assert feedback.private_context == {"extracted": "4\ufffd2"}


def test_the_worker_refuses_a_run_whose_tasks_changed_since_launch(
    task_set, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    run = launch(task_set, django_capture_on_commit_callbacks, send=False)
    task = task_set.tasks.first()
    Task.objects.filter(pk=task.pk).update(reference={"answer": "a different answer"})
    assert execute_evaluation(run.pk, worker="w", background_heartbeat=False)
    run.refresh_from_db()
    assert run.status == Run.Status.FAILED
    assert "changed since this run was launched" in run.error
    assert not Dialogue.objects.filter(run=run).exists()


def test_a_run_plays_what_its_frozen_config_says_not_the_rows_of_today(
    task_set, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    run = launch(task_set, django_capture_on_commit_callbacks, send=False)
    # Editing the protocol and the student after launch changes nothing of this run.
    Protocol.objects.filter(pk=run.protocol_id).update(max_turns=1)
    ModelSpec.objects.filter(pk=run.student_id).update(
        generation_params={"first_try_accuracy": 1.0}
    )
    execute_evaluation(run.pk, worker="w", background_heartbeat=False)
    dialogues = Dialogue.objects.filter(run=run)
    assert dialogues.count() == task_set.tasks.count() * 2  # samples_per_task from the config
    # Read live, either edit would end every dialogue at turn 1.
    assert max(dialogues.values_list("num_turns", flat=True)) > 1


def test_all_queued_sends_again_the_interactive_jobs_no_worker_took(
    django_capture_on_commit_callbacks,
) -> None:  # type: ignore[no-untyped-def]
    """After the broker lost its messages, the Workers page's "other jobs waiting" are sent
    again; taken and finished ones are not."""
    from webapp.celery import app
    from webapp.tasks.models import TaskImport, VerifierProbe
    from webapp.training.models import TrainingPreview

    task = TaskFactory()
    probe = VerifierProbe.objects.create(task=task, response="lost")
    VerifierProbe.objects.create(
        task=task, response="taken", started_at=timezone.now(), heartbeat_at=timezone.now()
    )
    VerifierProbe.objects.create(task=task, response="done", verdict={"correct": True})
    preview = TrainingPreview.objects.create(base_model=StudentFactory(), training_config={})
    pending = TaskImport.objects.create(
        source=TaskImport.Source.GENERATOR, task_set_name="lost",
        status=TaskImport.Status.PENDING,
    )  # fmt: skip
    TaskImport.objects.create(
        source=TaskImport.Source.GENERATOR, task_set_name="done",
        status=TaskImport.Status.SUCCEEDED,
    )  # fmt: skip
    out = StringIO()
    try:
        call_command("resume_stale_runs", stdout=out)
        assert "waiting interactive" not in out.getvalue(), "only with --all-queued"
        call_command("resume_stale_runs", "--all-queued", stdout=out)
    finally:
        app.control.purge()
    sent = f"['import {pending.pk}', 'Try it {probe.pk}', 'preview {preview.pk}']"
    assert f"sent again 3 waiting interactive job(s) {sent}" in out.getvalue()


def test_a_try_it_sent_again_is_checked_and_a_duplicate_message_does_nothing(
    eager_celery, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    from webapp.tasks import services as task_services
    from webapp.tasks.models import VerifierProbe
    from workers.tasks import verify_probe

    task = TaskFactory(position=3, reference={"answer": "7"})
    with django_capture_on_commit_callbacks(execute=False):  # its message is lost
        probe = task_services.probe_create(task=task, response="It is 7.", user=None)
    with django_capture_on_commit_callbacks(execute=True):  # the test's transaction
        call_command("resume_stale_runs", "--all-queued", stdout=StringIO())
    probe.refresh_from_db()
    assert probe.started_at is not None and probe.verdict is not None
    assert probe.verdict["correct"] is True

    VerifierProbe.objects.filter(pk=probe.pk).update(response="It is 8.")
    verify_probe(probe.pk)  # the lost message arrives after all
    probe.refresh_from_db()
    assert probe.verdict["correct"] is True, "checked once: the duplicate found it answered"


def test_a_training_preview_sent_again_once_answered_is_left_as_it_is() -> None:
    from webapp.training.models import TrainingPreview
    from webapp.training.services import preview_claim
    from workers.training import build_preview

    preview = TrainingPreview.objects.create(base_model=StudentFactory(), training_config={})
    assert preview_claim(preview_id=preview.pk), "taken (again, after a lost worker) until answered"
    TrainingPreview.objects.filter(pk=preview.pk).update(error="the first job's answer")
    build_preview(preview.pk, heartbeat=False)  # a duplicate message
    preview.refresh_from_db()
    assert (preview.result, preview.error) == (None, "the first job's answer")
    assert not preview_claim(preview_id=preview.pk)


def died(job: InteractiveJob, *, ago: timedelta = 2 * STALE) -> None:
    """The worker that took ``job`` stopped beating ``ago``."""
    type(job).objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - ago)


def test_a_try_it_whose_worker_died_is_checked_by_the_next_sweep(
    eager_celery, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    from webapp.tasks import services as task_services
    from workers.recovery import recover_interactive_jobs

    task = TaskFactory(position=3, reference={"answer": "7"})
    with django_capture_on_commit_callbacks(execute=False):  # no worker answers in this test
        dead = task_services.probe_create(task=task, response="It is 7.", user=None)
        alive = task_services.probe_create(task=task, response="It is 8.", user=None)
    for probe in (dead, alive):
        assert task_services.probe_claim(probe_id=probe.pk)
    died(dead)
    died(alive, ago=STALE / 3)

    with django_capture_on_commit_callbacks(execute=True):
        recovery = recover_interactive_jobs()
    assert (recovery.sent, recovery.failed) == ([f"Try it {dead.pk}"], [])
    dead.refresh_from_db()
    assert dead.verdict is not None and dead.verdict["correct"] is True
    assert dead.attempts == 2, "taken by the dead worker, then by the sweep's job"
    alive.refresh_from_db()
    assert alive.verdict is None, "a live worker's check is left to it"
    # Its heartbeat would turn stale in about 2/3 of the window: the worker looks again then.
    assert recovery.next_check_in is not None
    assert STALE / 2 < recovery.next_check_in <= STALE


def test_a_preview_that_wore_out_its_workers_is_failed_and_says_why() -> None:
    from webapp.training.models import TrainingPreview
    from webapp.training.selectors import previewed_template_problem
    from webapp.training.services import preview_claim
    from workers.recovery import recover_interactive_jobs

    researcher = UserFactory(role="researcher")
    preview = TrainingPreview.objects.create(
        base_model=StudentFactory(), training_config={"method": "sft"}, created_by=researcher
    )
    for _ in range(3):
        assert preview_claim(preview_id=preview.pk)
    assert not preview_claim(preview_id=preview.pk), "a fourth message is not taken"
    died(preview)
    recovery = recover_interactive_jobs()
    assert (recovery.sent, recovery.failed) == ([], [f"preview {preview.pk}"])
    preview.refresh_from_db()
    assert preview.is_done
    assert preview.error.startswith("The worker building this preview stopped 3 times")
    assert recovery.next_check_in is None
    # It found nothing about the model: the launch form is not refused for it.
    found = previewed_template_problem(
        reader=researcher, base_model=preview.base_model, method="sft"
    )
    assert found == ""


def test_a_check_taken_before_heartbeats_were_kept_is_judged_by_its_start() -> None:
    from webapp.tasks.models import VerifierProbe
    from workers.recovery import recover_interactive_jobs

    task = TaskFactory()
    recent = VerifierProbe.objects.create(task=task, response="x", started_at=timezone.now())
    old = VerifierProbe.objects.create(
        task=task, response="y", started_at=timezone.now() - 2 * STALE
    )
    assert recover_interactive_jobs().sent == [f"Try it {old.pk}"]
    assert recent.waiting_since() is None, "a worker has it"
    assert old.waiting_since() == old.started_at, "its worker is gone: it waits for another"


def test_a_starting_worker_looks_again_when_a_check_would_turn_stale() -> None:
    """A worker that starts right after a crash finds the dead worker's heartbeat still fresh:
    it sweeps again once that heartbeat would be stale."""
    from webapp.tasks.models import VerifierProbe
    from workers.recovery import FOLLOW_UP_MARGIN, recover_on_start

    VerifierProbe.objects.create(
        task=TaskFactory(), response="x", started_at=timezone.now(), heartbeat_at=timezone.now()
    )
    timer = recover_on_start()
    assert timer is not None
    timer.cancel()
    assert 0 < timer.interval <= (STALE + FOLLOW_UP_MARGIN).total_seconds()


def test_a_check_that_wore_out_its_workers_is_failed_when_celery_hands_it_back(
    eager_celery,
) -> None:  # type: ignore[no-untyped-def]
    """Celery hands back the job of a pool process that died, and the worker itself lives on,
    so no worker start sweeps: the fourth delivery, not taken, schedules the sweep that fails
    the check, saying why."""
    from webapp.tasks.models import VerifierProbe
    from webapp.tasks.services import probe_claim
    from workers.tasks import verify_probe

    probe = VerifierProbe.objects.create(task=TaskFactory(), response="It is 7.")
    for _ in range(3):
        assert probe_claim(probe_id=probe.pk)
    died(probe)  # the third pool process too
    verify_probe.delay(probe.pk)  # eager: the sweep it schedules runs at once
    probe.refresh_from_db()
    assert (probe.verdict, probe.attempts) == (None, 3)
    assert probe.error.startswith("The worker checking this answer stopped 3 times")


def test_a_worker_keeps_no_watch_when_the_sweep_interval_is_zero(settings) -> None:  # type: ignore[no-untyped-def]
    """The watch itself, a live worker taking up a dead one's run, is tested with real workers
    in tests/e2e/test_worker_resume.py."""
    from workers.recovery import watch

    settings.DIALAB_RECOVERY_SWEEP_SECONDS = 0
    assert watch() is None
    settings.DIALAB_RECOVERY_SWEEP_SECONDS = 3600
    running = watch()
    assert running is not None and running.thread.is_alive()
    running.stop()
    assert not running.thread.is_alive()
