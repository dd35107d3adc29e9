"""A worker killed with SIGKILL in the middle of a run: a new worker resumes the run and plays
only what is missing, so the run ends with every (task, sample) exactly once; so does a worker
already running, when one dies beside it. Killed in the
middle of an import, the next worker imports it again: one task set, every task once. Killed
while checking an author's Try it, the next worker checks it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection, transaction

from tests.e2e import conftest as e2e
from tests.e2e.conftest import wait_until
from tests.factories import ProtocolFactory, TaskFactory, TaskSetFactory
from webapp.dialogues.models import Dialogue
from webapp.models_registry.models import ModelSpec
from webapp.runs.models import Run
from webapp.runs.services import evaluation_run_create
from webapp.tasks.generation import generation_create
from webapp.tasks.models import Task, TaskImport, TaskSet, VerifierProbe
from webapp.tasks.services import probe_create

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

TASKS = 30
SAMPLES = 2
HEARTBEAT_SECONDS = 2  # stale after 6 s: the test need not wait 15 s for the default


def slow_run(*, batch_size: int = 4, delay_ms: int = 40) -> Run:
    """A didactic run whose scripted student waits ``delay_ms`` per reply."""
    task_set = TaskSetFactory()
    for position in range(TASKS):
        TaskFactory(task_set=task_set, position=position)
    student = ModelSpec.objects.create(
        name="slow student", backend="scripted", location="arithmetic-student",
        generation_params={"delay_ms": delay_ms},
    )  # fmt: skip
    teacher = ModelSpec.objects.create(
        name="teacher", backend="scripted", location="feedback-teacher"
    )
    with transaction.atomic():
        return evaluation_run_create(
            name="slow", task_set=task_set, student=student, teacher=teacher,
            protocol=ProtocolFactory(max_turns=3), samples_per_task=SAMPLES,
            batch_size=batch_size, created_by=None,
        )  # fmt: skip


def kill_worker(worker) -> None:  # type: ignore[no-untyped-def]
    """SIGKILL the worker's whole process group when it has its own (no chance to clean up or
    acknowledge anything); a worker sharing pytest's group is one process (solo pool)."""
    pid = worker.process.pid
    if os.getpgid(pid) != os.getpgid(0):
        os.killpg(os.getpgid(pid), signal.SIGKILL)
    else:
        os.kill(pid, signal.SIGKILL)
    worker.process.wait(timeout=10)


def test_a_killed_worker_s_run_is_resumed_without_duplicates_or_gaps(
    start_worker, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("DIALAB_HEARTBEAT_SECONDS", str(HEARTBEAT_SECONDS))
    first = start_worker()
    run = slow_run()
    total = TASKS * SAMPLES

    wait_until(lambda: Dialogue.objects.filter(run=run).count() >= 10, timeout=60)
    kill_worker(first)
    kept = set(Dialogue.objects.filter(run=run).values_list("pk", flat=True))
    run.refresh_from_db()
    assert run.status == Run.Status.RUNNING, "a killed worker leaves its run running"
    assert 10 <= len(kept) < total, f"killed too late to test anything: {len(kept)} stored"
    killed_at = time.monotonic()

    second = start_worker()
    wait_until(lambda: Run.objects.get(pk=run.pk).is_finished, timeout=120)
    run.refresh_from_db()
    assert run.status == Run.Status.SUCCEEDED, run.error + second.output()
    assert run.attempts == 2, "claimed once by each worker"
    assert "resumed (attempt 2" in second.output()

    assert_every_pair_once(run)
    assert kept <= set(Dialogue.objects.filter(run=run).values_list("pk", flat=True)), (
        "what the first worker stored is kept, not played again"
    )
    assert run.progress_done == total
    # The second worker played only what was missing.
    assert run.accounting["dialogues"] == total - len(kept)
    print(f"resumed and finished {time.monotonic() - killed_at:.1f} s after the kill")


def assert_every_pair_once(run: Run) -> None:
    total = TASKS * SAMPLES
    pairs = list(Dialogue.objects.filter(run=run).values_list("task_id", "sample_index"))
    every_pair = {(task_id, sample) for task_id in run.task_set.tasks.values_list("pk", flat=True)
                  for sample in range(SAMPLES)}  # fmt: skip
    assert len(pairs) == total, "exactly tasks x samples dialogues"
    assert len(set(pairs)) == total, "no (task, sample) twice"
    assert set(pairs) == every_pair, "no gaps"


def test_a_worker_that_dies_while_another_runs_is_taken_up_by_that_one(
    start_worker, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """No worker starts after the kill: the idle worker, already running, finds the run's
    heartbeat stopped in one of the sweeps it makes every DIALAB_RECOVERY_SWEEP_SECONDS, and
    plays what is missing. Its start sweep's one follow-up is over before the kill, so only the
    watch can be what resumed the run."""
    monkeypatch.setenv("DIALAB_HEARTBEAT_SECONDS", str(HEARTBEAT_SECONDS))
    monkeypatch.setenv("DIALAB_RECOVERY_SWEEP_SECONDS", "2")
    playing = start_worker()
    run = slow_run(batch_size=2, delay_ms=400)  # about 40 s: time for the idle one to settle
    wait_until(lambda: Dialogue.objects.filter(run=run).exists(), timeout=60)
    idle = start_worker()
    follow_up_over = time.monotonic() + 3 * HEARTBEAT_SECONDS + 3
    time.sleep(max(0.0, follow_up_over - time.monotonic()))
    kill_worker(playing)
    run.refresh_from_db()
    assert run.status == Run.Status.RUNNING and run.attempts == 1, "killed too late"
    killed_at = time.monotonic()

    wait_until(lambda: Run.objects.get(pk=run.pk).is_finished, timeout=120, message=idle.output)
    run.refresh_from_db()
    assert run.status == Run.Status.SUCCEEDED, run.error + idle.output()
    assert run.attempts == 2, "claimed once by each worker"
    assert_every_pair_once(run)
    print(f"taken up and finished {time.monotonic() - killed_at:.1f} s after the kill")


def test_a_killed_worker_s_import_is_done_again_by_the_next_worker(
    start_worker, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """The import writes its tasks in one transaction, killed midway it commits nothing; the
    next worker to start finds the import's worker gone and imports it again from the start."""
    monkeypatch.setenv("DIALAB_HEARTBEAT_SECONDS", str(HEARTBEAT_SECONDS))
    count = 100_000  # a few seconds of writing
    first = start_worker()
    task_import = generation_create(
        family="arithmetic", count=count, seed=3, knobs={}, task_set_name="big", created_by=None
    )
    this_import = TaskImport.objects.filter(pk=task_import.pk)
    wait_until(lambda: this_import.filter(status="running").exists(), timeout=60)
    if connection.vendor == "sqlite":  # no progress is visible until the end: give it time
        time.sleep(2)
    else:
        wait_until(lambda: this_import.filter(progress_done__gt=0).exists(), timeout=60)
    kill_worker(first)
    task_import.refresh_from_db()
    assert task_import.status == "running", "killed too late to test anything"
    assert not TaskSet.objects.filter(name="big").exists(), "nothing committed"

    second = start_worker()
    wait_until(lambda: TaskImport.objects.get(pk=task_import.pk).is_finished, timeout=120)
    task_import.refresh_from_db()
    assert task_import.status == "succeeded", task_import.error + second.output()
    assert task_import.attempts == 2, "claimed once by each worker"
    (task_set,) = TaskSet.objects.filter(name="big")
    positions = list(task_set.tasks.values_list("position", flat=True))
    assert len(positions) == len(set(positions)) == count == task_import.progress_done


def test_a_try_it_whose_worker_was_killed_is_checked_by_the_next_worker(
    start_worker, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """The author's page would wait forever: the next worker to start finds the check's
    heartbeat stopped (at once, or in a follow-up sweep while it was still fresh) and checks it
    again; the killed worker's sandbox is killed too."""
    from tests.models_gpu.sandbox.test_attacks import sandboxed_processes

    monkeypatch.setenv("DIALAB_HEARTBEAT_SECONDS", str(HEARTBEAT_SECONDS))
    first = start_worker()
    task = TaskFactory(
        reference={"tests": "assert add(1, 2) == 3\n", "entry_point": "add"},
        verifier_kind=Task.VerifierKind.CODE,
    )
    slow_add = "import time\ndef add(a, b):\n    time.sleep(4)\n    return a + b\n"
    with transaction.atomic():
        probe = probe_create(task=task, response=slow_add, user=None)
    this_probe = VerifierProbe.objects.filter(pk=probe.pk)
    wait_until(lambda: this_probe.filter(started_at__isnull=False).exists(), timeout=60)
    time.sleep(1)  # inside the sandbox's sleep
    kill_worker(first)
    probe.refresh_from_db()
    assert (probe.verdict, probe.error) == (None, ""), "killed too late to test anything"

    second = start_worker()
    wait_until(lambda: this_probe.get().is_done, timeout=90, message=second.output)
    probe.refresh_from_db()
    assert probe.verdict is not None, probe.error + second.output()
    assert probe.verdict["correct"] is True
    assert probe.attempts == 2, "taken once by each worker"
    assert sandboxed_processes() == []


class PreforkWorker:
    """A `celery worker` with the prefork pool, as a GPU host runs it (one child process plays
    the jobs), in its own session so that the test can kill its child alone."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.ready = threading.Event()
        env = {**os.environ, "DATABASE_URL": e2e.test_database_url(), "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen(
            [
                sys.executable, "-m", "celery", "-A", "webapp", "worker",
                f"--queues={','.join(e2e.ALL_QUEUES)}", "--pool=prefork", "--concurrency=1",
                "--prefetch-multiplier=1", "--without-gossip", "--without-mingle",
                "--loglevel=INFO", f"--hostname=prefork-{os.getpid()}@%h",
            ],
            cwd=e2e.REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True,
        )  # fmt: skip
        threading.Thread(target=self._read_output, daemon=True).start()
        if not self.ready.wait(90):
            self.stop()
            raise RuntimeError("the prefork worker did not start:\n" + self.output())

    def _read_output(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip())
            if " ready." in line:
                self.ready.set()

    def output(self) -> str:
        return "\n".join(self.lines[-200:])

    def child_pids(self) -> list[int]:
        path = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        return [int(pid) for pid in path.read_text().split()]

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


@pytest.fixture
def prefork_worker(transactional_db, monkeypatch) -> Iterator[PreforkWorker]:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("DIALAB_HEARTBEAT_SECONDS", str(HEARTBEAT_SECONDS))
    e2e.purge_broker()
    worker = PreforkWorker()
    yield worker
    worker.stop()


def test_a_job_whose_prefork_child_was_killed_is_resumed_by_the_same_worker(
    prefork_worker,
) -> None:  # type: ignore[no-untyped-def]
    """The OOM killer's case: the pool's child dies, the worker lives on. The job comes back
    (task_reject_on_worker_lost), finds the run still fresh, and looks again once it is stale."""
    run = slow_run()
    total = TASKS * SAMPLES
    wait_until(lambda: Dialogue.objects.filter(run=run).count() >= 10, timeout=60)
    (child,) = prefork_worker.child_pids()
    os.kill(child, signal.SIGKILL)
    killed_at = time.monotonic()
    kept = Dialogue.objects.filter(run=run).count()
    assert kept < total

    wait_until(lambda: Run.objects.get(pk=run.pk).is_finished, timeout=120)
    run.refresh_from_db()
    output = prefork_worker.output()
    assert run.status == Run.Status.SUCCEEDED, run.error + output
    assert run.attempts == 2
    assert "WorkerLostError" in output or "exited prematurely" in output
    pairs = list(Dialogue.objects.filter(run=run).values_list("task_id", "sample_index"))
    assert len(pairs) == len(set(pairs)) == total
    print(f"resumed in the same worker, finished {time.monotonic() - killed_at:.1f} s after")
