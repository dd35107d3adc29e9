"""What a training preview, a "Try it" or an import waits for on the interactive queue, once it
has waited long enough to tell (``webapp.core.workers.interactive_wait``).

Inspection is real (a broadcast over the test broker, a short wait) and no worker runs here, so
none answers. A worker that answered is what inspection leaves in the cache, written there the
way ``workers_online`` keeps it.
"""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.urls import reverse
from django.utils import timezone

from tests.factories import StudentFactory, TaskFactory
from webapp.core import workers
from webapp.core.heartbeat import stale_after
from webapp.core.queues import INTERACTIVE, queue_named
from webapp.core.workers import INTERACTIVE_NOTICE_AFTER, WorkerSeen, interactive_wait
from webapp.tasks.models import TaskImport, VerifierProbe
from webapp.training.models import TrainingPreview
from webapp.training.services import preview_claim
from workers.tasks import verify_probe

pytestmark = pytest.mark.django_db

LONG_AGO = timezone.now() - 2 * INTERACTIVE_NOTICE_AFTER


@pytest.fixture(autouse=True)
def quick_inspection(settings):  # type: ignore[no-untyped-def]
    settings.DIALAB_WORKER_INSPECT_SECONDS = 0.1
    cache.clear()  # no inspection kept from another test


def _answered(*seen: WorkerSeen) -> None:
    cache.set(workers._CACHE_KEY, list(seen), 60)


def _interactive_worker(*jobs: str) -> WorkerSeen:
    return WorkerSeen("interactive@host", (INTERACTIVE,), jobs)


def test_a_young_job_asks_nobody_and_an_idle_worker_means_no_note() -> None:
    sent = timezone.now()
    assert interactive_wait(sent, now=sent + INTERACTIVE_NOTICE_AFTER / 2) is None
    assert cache.get(workers._CACHE_KEY) is None, "no inspection on the fast path"
    _answered(_interactive_worker())
    assert interactive_wait(LONG_AGO) is None, "an idle worker takes it within seconds"
    _answered(WorkerSeen("batch@host", ("gpu",), ()))  # serves another queue only
    assert interactive_wait(LONG_AGO) == workers.InteractiveWait(())


def test_a_waiting_try_it_says_no_worker_answered_and_how_to_start_one(
    researcher_client,
) -> None:  # type: ignore[no-untyped-def]
    probe = VerifierProbe.objects.create(task=TaskFactory(), response="The answer is 4.")
    page = researcher_client.get(reverse("probe_detail", args=[probe.pk])).content.decode()
    assert "Checking" in page and 'id="interactive-wait"' not in page, "young: no note yet"

    VerifierProbe.objects.filter(pk=probe.pk).update(created_at=LONG_AGO)
    page = researcher_client.get(reverse("probe_detail", args=[probe.pk])).content.decode()
    assert "No interactive worker has answered" in page
    assert queue_named(INTERACTIVE).start_command in page

    verify_probe(probe.pk)  # the worker's job, in this process: it says it started, then checks
    probe.refresh_from_db()
    assert probe.started_at is not None and probe.verdict is not None
    done = researcher_client.get(reverse("probe_detail", args=[probe.pk]))
    assert 'id="interactive-wait"' not in done.content.decode()


def test_a_waiting_preview_names_what_the_busy_worker_does(researcher_client, researcher) -> None:  # type: ignore[no-untyped-def]
    preview = TrainingPreview.objects.create(
        base_model=StudentFactory(), training_config={}, created_by=researcher
    )
    TrainingPreview.objects.filter(pk=preview.pk).update(created_at=LONG_AGO)
    _answered(_interactive_worker("workers.task_imports.generate_tasks"))
    page = researcher_client.get(reverse("training_preview_detail", args=[preview.pk]))
    text = page.content.decode()
    assert "Waiting for the interactive worker: it is busy with generate tasks." in text
    assert 'id="preview-waiting"' in text

    assert preview_claim(preview_id=preview.pk)  # a worker took it: it is the job running now
    page = researcher_client.get(reverse("training_preview_detail", args=[preview.pk]))
    assert 'id="interactive-wait"' not in page.content.decode()

    # That worker died: its heartbeat stopped. The preview waits for a sweep to send it again,
    # and the page says so even while another worker is free (it takes the preview only once
    # the preview is sent again).
    TrainingPreview.objects.filter(pk=preview.pk).update(heartbeat_at=LONG_AGO - stale_after())
    _answered(_interactive_worker())
    text = researcher_client.get(reverse("training_preview_detail", args=[preview.pk])).content
    assert "The worker that took this stopped answering" in text.decode()
    assert "A running worker sends it again within 30 s" in text.decode()
    assert "No interactive worker" not in text.decode() and "busy" not in text.decode()
    _answered()
    text = researcher_client.get(reverse("training_preview_detail", args=[preview.pk])).content
    assert "stopped answering" in text.decode()
    assert "No interactive worker has answered" in text.decode()


def test_a_pending_import_says_why_it_has_not_started(researcher_client) -> None:  # type: ignore[no-untyped-def]
    task_import = TaskImport.objects.create(
        source=TaskImport.Source.GENERATOR, task_set_name="mazes", status=TaskImport.Status.PENDING
    )
    TaskImport.objects.filter(pk=task_import.pk).update(created_at=LONG_AGO)
    live = researcher_client.get(reverse("task_import_live", args=[task_import.pk]))
    assert "No interactive worker has answered" in live.content.decode()
    TaskImport.objects.filter(pk=task_import.pk).update(status=TaskImport.Status.RUNNING)
    live = researcher_client.get(reverse("task_import_live", args=[task_import.pk]))
    assert 'id="interactive-wait"' not in live.content.decode(), "a worker has it"
