"""Drills with real processes: the services a run depends on go away mid-run, and come back.

Each drill ends with exactly tasks x samples dialogues (or exactly the imported rows): none
lost, none twice. They restart the machine's own PostgreSQL and Redis (as scripts/test.sh starts
them), so they need root and run only in the services pass.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable

import pytest
from django.conf import settings
from django.db import DatabaseError, connection, connections, transaction

from tests.e2e.conftest import wait_until
from tests.e2e.test_worker_resume import SAMPLES, TASKS, PreforkWorker, slow_run
from tests.factories import ProtocolFactory, TaskSetFactory
from tests.models_gpu.sandbox.test_attacks import sandboxed_processes
from webapp.dialogues.models import Dialogue, Turn
from webapp.models_registry.models import ModelSpec
from webapp.runs.models import Run
from webapp.runs.services import evaluation_run_create
from webapp.tasks.generation import generation_create
from webapp.tasks.models import Task, TaskImport, TaskSet

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

HEARTBEAT_SECONDS = 2


@pytest.fixture(autouse=True)
def _fast_heartbeat(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIALAB_HEARTBEAT_SECONDS", str(HEARTBEAT_SECONDS))


def restart_postgresql() -> None:
    """Stop and start the cluster (fast mode: every connection is cut), as an outage would."""
    (version,) = os.listdir("/etc/postgresql")
    command = ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart"]
    subprocess.run(command, check=True, capture_output=True, timeout=120)
    connections.close_all()  # this process's connections died with the server
    wait_until(_database_answers, timeout=60)


def _database_answers() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return True
    except DatabaseError:
        connections.close_all()
        return False


def restart_redis() -> None:
    """Shut Redis down (it keeps nothing on disk here: every queued message is lost) and start
    it again as scripts/test.sh does."""
    subprocess.run(
        ["redis-cli", "-h", "127.0.0.1", "shutdown", "nosave"], capture_output=True, timeout=30
    )
    subprocess.run(
        ["redis-server", "--daemonize", "yes", "--bind", "127.0.0.1", "-::1", "--port", "6379",
         "--save", "", "--appendonly", "no"],
        check=True, capture_output=True, timeout=30,
    )  # fmt: skip
    wait_until(
        lambda: (
            subprocess.run(["redis-cli", "-h", "127.0.0.1", "ping"], capture_output=True).returncode
            == 0
        ),
        timeout=30,
    )


def when_answering(query: Callable[[], bool]) -> Callable[[], bool]:
    """A wait_until condition that reads False while the database is still coming back."""

    def condition() -> bool:
        try:
            return query()
        except DatabaseError:
            connections.close_all()
            return False

    return condition


def assert_every_pair_once(run: Run) -> None:
    pairs = list(Dialogue.objects.filter(run=run).values_list("task_id", "sample_index"))
    every_pair = {(task_id, sample) for task_id in run.task_set.tasks.values_list("pk", flat=True)
                  for sample in range(run.frozen_config.samples_per_task)}  # fmt: skip
    assert len(pairs) == len(every_pair), "exactly tasks x samples dialogues"
    assert set(pairs) == every_pair, "none lost, none twice"


def wait_for_the_end(run: Run, worker, timeout: float = 180) -> None:  # type: ignore[no-untyped-def]
    finished = when_answering(lambda: Run.objects.get(pk=run.pk).is_finished)
    wait_until(finished, timeout=timeout, message=lambda: worker.output())
    run.refresh_from_db()
    assert run.status == Run.Status.SUCCEEDED, run.error + worker.output()


def require_services() -> None:
    if connection.vendor != "postgresql" or not settings.CELERY_BROKER_URL.startswith("redis"):
        pytest.fail("the drills need PostgreSQL and Redis (the services pass of scripts/test.sh)")


def test_redis_restarted_in_the_middle_of_a_run(start_worker) -> None:  # type: ignore[no-untyped-def]
    require_services()
    worker = start_worker()
    run = slow_run()
    wait_until(lambda: Dialogue.objects.filter(run=run).count() >= 10, timeout=60)
    restart_redis()
    assert Dialogue.objects.filter(run=run).count() < TASKS * SAMPLES, "restarted too late"
    wait_for_the_end(run, worker)
    assert_every_pair_once(run)
    # The worker reconnected to the new broker: a run launched now is played too.
    with transaction.atomic():
        follower = evaluation_run_create(
            name="after the restart", task_set=run.task_set, student=run.student,
            teacher=run.teacher, protocol=run.protocol, samples_per_task=1, created_by=None,
        )  # fmt: skip
    wait_for_the_end(follower, worker, timeout=120)
    assert_every_pair_once(follower)


def test_postgresql_restarted_in_the_middle_of_a_run(start_worker) -> None:  # type: ignore[no-untyped-def]
    require_services()
    worker = start_worker()
    run = slow_run()
    wait_until(lambda: Dialogue.objects.filter(run=run).count() >= 10, timeout=60)
    restart_postgresql()
    stored = Dialogue.objects.filter(run=run).count()
    assert stored < TASKS * SAMPLES, "restarted too late"
    wait_for_the_end(run, worker)
    assert_every_pair_once(run)
    assert run.attempts == 2, "resumed once, by a new claim"
    assert "lost the database" in worker.output()


def test_postgresql_restarted_in_the_middle_of_an_import(start_worker) -> None:  # type: ignore[no-untyped-def]
    require_services()
    worker = start_worker()
    count = 100_000
    task_import = generation_create(
        family="arithmetic", count=count, seed=5, knobs={}, task_set_name="drill", created_by=None
    )
    this_import = TaskImport.objects.filter(pk=task_import.pk)
    wait_until(
        lambda: this_import.filter(status="running", progress_done__gt=0).exists(), timeout=60
    )
    restart_postgresql()
    assert this_import.get().status == "running", "restarted too late"
    finished = when_answering(lambda: this_import.get().is_finished)
    wait_until(finished, timeout=180, message=lambda: worker.output())
    task_import.refresh_from_db()
    assert task_import.status == "succeeded", task_import.error + worker.output()
    (task_set,) = TaskSet.objects.filter(name="drill")
    positions = list(task_set.tasks.values_list("position", flat=True))
    assert len(positions) == len(set(positions)) == count


def test_a_worker_killed_while_verifying_code_resumes_its_run(transactional_db) -> None:  # type: ignore[no-untyped-def]
    """The OOM killer takes the worker's pool child while a candidate runs in the sandbox: the
    sandboxes go with it, the run resumes, and every attempt is recorded (as failed: the scripted
    student answers in prose, which is not code)."""
    from tests.e2e.conftest import purge_broker

    purge_broker()
    worker = PreforkWorker()
    try:
        task_set = TaskSetFactory()
        for position in range(20):
            Task.objects.create(
                task_set=task_set, position=position, prompt=f"What is {position} + 1?",
                reference={"tests": "assert add(1, 2) == 3\n", "entry_point": "add"},
                verifier_kind=Task.VerifierKind.CODE,
            )  # fmt: skip
        student = ModelSpec.objects.create(
            name="prose", backend="scripted", location="arithmetic-student"
        )
        teacher = ModelSpec.objects.create(
            name="t", backend="scripted", location="feedback-teacher"
        )
        with transaction.atomic():
            run = evaluation_run_create(
            name="code drill", task_set=task_set, student=student, teacher=teacher,
            protocol=ProtocolFactory(max_turns=2), samples_per_task=2, batch_size=2,
            created_by=None,
        )  # fmt: skip
        wait_until(
            lambda: bool(sandboxed_processes()),
            timeout=60,
            interval=0.01,
            message=lambda: f"{Run.objects.get(pk=run.pk).status}: {worker.output()}",
        )
        (child,) = worker.child_pids()
        os.kill(child, signal.SIGKILL)
        # They die with the worker's process; one killed while it started is left waiting, and
        # the pool process started in its place kills it (workers.recovery).
        wait_until(
            lambda: not sandboxed_processes(),
            timeout=30,
            message=lambda: f"sandboxes left: {sandboxed_processes()}: {worker.output()}",
        )
        wait_for_the_end(run, worker, timeout=180)
        assert_every_pair_once(run)
        # Prose run as code fails to load: judged "other", not an attempt, but judged.
        replies = Turn.objects.filter(dialogue__run=run, role="student")
        assert replies.exists() and not replies.filter(is_correct=True).exists()
        assert not replies.filter(is_correct__isnull=True).exists(), "every reply was judged"
        reasons = set(replies.values_list("verdict_details__reason", flat=True))
        assert reasons == {"load_error"}, reasons
    finally:
        worker.stop()
    assert sandboxed_processes() == []
