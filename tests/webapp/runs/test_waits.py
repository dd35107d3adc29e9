"""Queues by kind of work, and what a queued run waits for (``webapp.runs.waits``): the note on
a queued run's page and the Workers page.

Inspection is real (a broadcast over the test broker) with a short wait; no worker runs in these
tests, so the workers known are those the runs' heartbeats show, as for a solo-pool worker busy
with a job.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.cache import cache
from django.urls import reverse
from django.utils import timezone

from tests.broker import queue_holding
from tests.factories import (
    ProtocolFactory,
    StudentFactory,
    TaskFactory,
    TeacherFactory,
    frozen_run,
)
from webapp.core.heartbeat import stale_after
from webapp.core.queues import BATCH, INTERACTIVE, queue_named
from webapp.core.templatetags.dialab import about_duration
from webapp.people.playground import playground_start
from webapp.runs import waits
from webapp.runs.models import Run
from webapp.tasks.models import TaskImport, VerifierProbe
from webapp.training.models import TrainingPreview

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def quick_inspection(settings):  # type: ignore[no-untyped-def]
    settings.DIALAB_WORKER_INSPECT_SECONDS = 0.1
    cache.clear()  # no inspection kept from another test


def _busy(**fields: object) -> Run:
    """A run a worker plays now: 10 of 40 dialogues in the minute since it started."""
    now = timezone.now()
    defaults: dict[str, object] = {
        "name": "long evaluation",
        "status": Run.Status.RUNNING,
        "worker": "batch@host",
        "heartbeat_at": now,
        "started_at": now - timedelta(seconds=60),
        "progress_done": 10,
        "progress_total": 40,
        "queue": BATCH,
    }
    return frozen_run(**{**defaults, **fields})


def _queued(name: str, *, queue: str = BATCH, sent_ago: int = 0) -> Run:
    sent = timezone.now() - timedelta(seconds=sent_ago)
    return frozen_run(name=name, status=Run.Status.QUEUED, queue=queue, dispatched_at=sent)


def test_a_run_with_a_person_is_interactive_work_and_an_evaluation_is_batch_work(
    researcher, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    task = TaskFactory()
    with django_capture_on_commit_callbacks(execute=True):
        playground = playground_start(
            task=task, role="teacher", partner=StudentFactory(), protocol=ProtocolFactory(),
            user=researcher,
        )  # fmt: skip
    playground.refresh_from_db()
    assert playground.queue == INTERACTIVE
    assert queue_holding(playground.job_id) == INTERACTIVE, "its job is on its queue"


def test_a_launched_evaluation_goes_to_the_batch_queue(
    researcher_client, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    task = TaskFactory()
    form = {
        "task_set": task.task_set_id,
        "protocol": ProtocolFactory().pk,
        "student": StudentFactory().pk,
        "teacher": TeacherFactory().pk,
        "samples_per_task": 1,
        "seed": 0,
    }
    with django_capture_on_commit_callbacks(execute=True):
        researcher_client.post(reverse("run_create"), form)
    run = Run.objects.get()
    assert run.queue == BATCH and run.dispatched_at is not None
    assert queue_holding(run.job_id) == BATCH


def test_with_no_worker_the_note_says_so_and_how_to_start_one(researcher_client) -> None:  # type: ignore[no-untyped-def]
    run = _queued("waiting")
    page = researcher_client.get(reverse("run_wait", args=[run.pk])).content.decode()
    assert "No worker serves the gpu queue" in page
    assert queue_named(BATCH).start_command in page


def test_the_note_names_what_the_batch_worker_plays_and_the_runs_before_this_one(
    researcher_client,
) -> None:  # type: ignore[no-untyped-def]
    busy = _busy()
    first = _queued("first", sent_ago=30)
    mine = _queued("mine", sent_ago=10)
    _queued("after mine", sent_ago=5)
    page = researcher_client.get(reverse("run_wait", args=[mine.pk])).content.decode()
    assert "Waiting for the batch worker: it plays" in page
    assert f"run #{busy.pk}</a> long evaluation (10 / 40 dialogues, about 3 min left)" in page
    assert (
        f'then 1 run queued before this one (<a href="/runs/{first.pk}/">#{first.pk}</a>)' in page
    )


def test_a_dead_workers_run_does_not_count_as_a_worker(researcher_client) -> None:  # type: ignore[no-untyped-def]
    _busy(heartbeat_at=timezone.now() - timedelta(hours=1))
    run = _queued("waiting")
    page = researcher_client.get(reverse("run_wait", args=[run.pk])).content.decode()
    assert "No worker serves the gpu queue" in page


def test_a_run_with_a_person_does_not_wait_for_the_batch_worker(researcher) -> None:  # type: ignore[no-untyped-def]
    _busy()
    wait = waits.run_wait(_queued("playground", queue=INTERACTIVE))
    assert wait is not None
    assert wait.queue.name == INTERACTIVE
    assert not wait.state.served and wait.ahead == ()
    assert [run.name for run in waits.queue_states()[1].playing] == ["long evaluation"]


def test_once_a_worker_took_the_run_the_note_goes_and_polling_stops(researcher_client) -> None:  # type: ignore[no-untyped-def]
    run = _busy()
    response = researcher_client.get(reverse("run_wait", args=[run.pk]))
    assert response.status_code == 286
    assert b"run-wait-note" not in response.content


def test_the_runs_people_are_told_what_it_waits_for_without_others_runs(client, annotator) -> None:  # type: ignore[no-untyped-def]
    busy = _busy()
    run = _queued("theirs")
    client.force_login(annotator)
    assert client.get(reverse("run_wait", args=[run.pk])).status_code == 403
    run.people.add(annotator)
    page = client.get(reverse("run_wait", args=[run.pk])).content.decode()
    assert "Waiting for the batch worker: it plays a run (10 / 40 dialogues" in page
    assert "long evaluation" not in page and f"/runs/{busy.pk}/" not in page


def test_the_workers_page_shows_each_worker_and_each_queues_waiting_jobs_in_order(
    researcher_client, annotator
) -> None:  # type: ignore[no-untyped-def]
    busy = _busy()
    second, first = _queued("second", sent_ago=5), _queued("first", sent_ago=50)
    TaskImport.objects.create(
        source=TaskImport.Source.GENERATOR, task_set_name="twenty mazes",
        status=TaskImport.Status.PENDING,
    )  # fmt: skip
    assert researcher_client.get(reverse("workers")).status_code == 200
    page = researcher_client.get(reverse("workers_state")).content.decode()
    assert 'data-worker="batch@host"' in page
    assert "(busy, not answering)" in page, "it shows by its run's heartbeat"
    assert f"run #{busy.pk}</a> long evaluation" in page
    batch = page[page.index('id="queue-gpu"') :]
    assert batch.index(f"run #{first.pk}<") < batch.index(f"run #{second.pk}<")
    interactive = page[page.index('id="queue-interactive"') : page.index('id="queue-gpu"')]
    assert "No worker serves this queue" in interactive
    assert "twenty mazes" in interactive
    researcher_client.force_login(annotator)
    assert researcher_client.get(reverse("workers")).status_code == 403


def test_the_interactive_queue_lists_every_job_not_taken_yet_oldest_first(
    researcher_client,
) -> None:  # type: ignore[no-untyped-def]
    """Imports, Try it checks and training previews, in the order they were sent; not those a
    worker took or finished."""
    task = TaskFactory(external_id="sum-7")
    probe = VerifierProbe.objects.create(task=task, response="It is 12.")
    VerifierProbe.objects.create(task=task, response="taken", started_at=timezone.now())
    VerifierProbe.objects.create(task=task, response="done", verdict={"correct": True})
    preview = TrainingPreview.objects.create(
        base_model=StudentFactory(name="tiny base"), training_config={}
    )
    TaskImport.objects.create(
        source=TaskImport.Source.GENERATOR, task_set_name="twenty mazes",
        status=TaskImport.Status.PENDING,
    )  # fmt: skip
    TaskImport.objects.create(
        source=TaskImport.Source.GENERATOR, task_set_name="imported already",
        status=TaskImport.Status.SUCCEEDED,
    )  # fmt: skip
    # Sent in this order: the preview first, then the probe, then the import.
    TrainingPreview.objects.filter(pk=preview.pk).update(
        created_at=timezone.now() - timedelta(minutes=3)
    )
    VerifierProbe.objects.filter(pk=probe.pk).update(
        created_at=timezone.now() - timedelta(minutes=2)
    )

    page = researcher_client.get(reverse("workers_state")).content.decode()
    waiting = page[page.index('id="jobs-waiting"') : page.index('id="queue-gpu"')]
    entries = [
        'tiny base <span class="muted">— training preview',
        f'sum-7 of {task.task_set} <span class="muted">— Try it',
        'twenty mazes <span class="muted">— Procedural generator',
    ]
    assert [waiting.index(entry) for entry in entries] == sorted(
        waiting.index(entry) for entry in entries
    )
    assert waiting.count("<li>") == 3, "taken, finished and imported jobs are not listed"
    assert "resume_stale_runs --all-queued</code> sends them again" in waiting


def test_the_interactive_queue_lists_the_jobs_whose_worker_died(researcher_client) -> None:  # type: ignore[no-untyped-def]
    """No broker holds them any more: they are listed apart, with how to send them again."""
    task = TaskFactory(external_id="sum-7")
    long_ago = timezone.now() - 2 * stale_after()
    VerifierProbe.objects.create(
        task=task, response="x", started_at=long_ago, heartbeat_at=long_ago + timedelta(seconds=1)
    )
    VerifierProbe.objects.create(  # its worker lives
        task=task, response="y", started_at=long_ago, heartbeat_at=timezone.now()
    )
    TrainingPreview.objects.create(
        base_model=StudentFactory(name="tiny base"), training_config={}, started_at=long_ago
    )

    page = researcher_client.get(reverse("workers_state")).content.decode()
    assert 'id="jobs-waiting"' not in page, "none waits in the broker"
    stalled = page[page.index('id="jobs-stalled"') : page.index('id="queue-gpu"')]
    assert stalled.count("<li>") == 2
    assert stalled.index("tiny base") < stalled.index("sum-7"), "the longest dead first"
    assert "its worker last seen" in stalled
    assert "<code>manage.py resume_stale_runs</code>" in stalled


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "time not known yet"),
        (3.4, "about 3 s"),
        (180, "about 3 min"),
        (7800, "about 2 h 10 min"),
    ],
)
def test_durations_read_as_a_person_says_them(seconds: float | None, text: str) -> None:
    assert about_duration(seconds) == text
