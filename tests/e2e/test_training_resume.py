"""A training run whose worker is killed (SIGKILL) between two checkpoints resumes, in a new
worker process, from its newest checkpoint (not from step 0), finishes and registers its model.

The evidence that it resumed rather than started over, all observed from outside the workers:

- the trainer records the checkpoint it started from (``TrainResult.resumed_from``) in
  ``final/dialab_training.json``: it must name the newest complete ``checkpoint-N`` that was on
  disk when the first worker died;
- the run's progress is the step of the trainer's latest log entry. Once the second worker has
  claimed the run, its progress never goes below N + 1 (polled every 50 ms: a restart from step 0
  would show steps 1..N again for several hundred milliseconds);
- the run was claimed twice (``attempts``), and the second worker logged the checkpoint it
  resumed from.

The loss curve then has exactly one point per step 1..max_steps: the steps of the first worker
are kept and the second one logs the rest.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from django.db import transaction

from models_gpu.spec.training import TrainingConfig
from models_gpu.training.launch import PROGRESS_FILE
from tests.e2e.conftest import wait_until
from tests.e2e.test_worker_resume import kill_worker
from tests.factories import ProtocolFactory, TaskFactory, TaskSetFactory, TeacherFactory, frozen_run
from tests.transcript_builders import attempt, feedback, store
from webapp.models_registry.models import ModelSpec
from webapp.runs.models import MetricPoint, Run
from webapp.runs.services import evaluation_config
from webapp.training.selectors import training_output_dir
from webapp.training.services import (
    snapshot_create,
    training_run_config,
    training_run_create,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

HEARTBEAT_SECONDS = 2  # a dead worker's run is stale after 6 s, not 15
MAX_STEPS = 100  # a few tens of milliseconds each on a CPU: seconds of training
SAVE_STEPS = 10
TRAINING = TrainingConfig(
    max_steps=MAX_STEPS, batch_size=2, save_steps=SAVE_STEPS, logging_steps=1, seed=1
)
TASKS, SAMPLES = 4, 5


def launch(tiny_model_dir: Path, researcher: Any) -> Run:
    """The tiny house model trained on 20 stored dialogues (as tests/workers/test_training.py),
    dispatched to the gpu queue when this function's transaction commits."""
    task_set = TaskSetFactory()
    base = ModelSpec.objects.create(
        name="tiny", backend="transformers", location=str(tiny_model_dir)
    )
    protocol, teacher = ProtocolFactory(max_turns=2), TeacherFactory()
    # Finished, so that a starting worker's recovery sweep does not play it.
    source = frozen_run(
        name="collected", task_set=task_set, protocol=protocol, status=Run.Status.SUCCEEDED
    )
    for position in range(TASKS):
        task = TaskFactory(
            task_set=task_set, position=position, prompt=f"What is {position} + 2?",
            reference={"answer": str(position + 2)},
        )  # fmt: skip
        right, wrong = str(position + 2), str(position + 3)
        for sample in range(SAMPLES):
            store(source, task.pk, sample, "a_late", [
                attempt(wrong, wrong, False), feedback("Too high."), attempt(right, right, True),
            ])  # fmt: skip
    snapshot = snapshot_create(name="solved", filter_query="outcome=solved", reader=researcher)
    assert snapshot.dialogue_count == TASKS * SAMPLES
    evaluation = evaluation_config(
        task_set=task_set, protocol=protocol, student=base, teacher=teacher
    )
    config = training_run_config(
        base=base, snapshot=snapshot, training=TRAINING, evaluation=evaluation
    )
    with transaction.atomic():
        run = training_run_create(name="resumed sft", config=config, created_by=researcher)
        # Run ids start again with each test database, the data directory does not: clear what
        # an earlier session left for this id and configuration before the worker sees the run.
        shutil.rmtree(training_output_dir(run), ignore_errors=True)
    return run


def checkpoint_steps(out: Path) -> list[int]:
    return sorted(
        int(path.name.removeprefix("checkpoint-"))
        for path in out.glob("checkpoint-*")
        if path.name.removeprefix("checkpoint-").isdigit()
    )


def test_a_training_run_killed_mid_training_resumes_from_its_checkpoint(
    start_worker, monkeypatch, tiny_model_dir, researcher
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("DIALAB_HEARTBEAT_SECONDS", str(HEARTBEAT_SECONDS))
    first = start_worker()
    run = launch(tiny_model_dir, researcher)
    out = training_output_dir(run)
    killed_at, newest = kill_between_checkpoints(first, run, SAVE_STEPS, MAX_STEPS)
    run.refresh_from_db()
    left_behind = run.progress_done  # the first worker's last reading of the trainer's log
    second = start_worker()
    seen_after_claim = resume_in(second, run, newest, killed_at, left_behind, MAX_STEPS)

    loss_steps = MetricPoint.objects.filter(run=run, name="loss").values_list("step", flat=True)
    assert sorted(loss_steps) == list(range(1, MAX_STEPS + 1)), "one loss point per step"
    assert_registered_and_evaluated(run)

    # The evaluations it launched are not this test's subject: do not wait for them.
    kill_worker(second)
    shutil.rmtree(out, ignore_errors=True)
    print(
        f"killed at step {killed_at} (newest checkpoint-{newest}); progress seen after the "
        f"second claim: {list(dict.fromkeys(seen_after_claim))[:6]}..."
    )


def kill_between_checkpoints(
    worker: Any, run: Run, save_steps: int, max_steps: int
) -> tuple[int, int]:
    """Kill ``worker`` while it trains ``run``, just after a checkpoint was completed and well
    before the next one is begun; the step it was killed at and its newest checkpoint's.

    The trainer logs step s, then saves checkpoint-s when s is a multiple of ``save_steps``, so
    once step s + 1 is logged checkpoint-s is whole, and the next is save_steps - 1 steps off.
    The step is read from the trainer's own log (``progress.jsonl``), as it is written: the run's
    progress in the database moves only when the worker reads that log (every 0.5 s), by several
    steps at once, and could skip every window on a machine where a step takes tens of ms."""
    this_run = Run.objects.filter(pk=run.pk)
    out = training_output_dir(run)

    def between_checkpoints() -> bool:
        if this_run.values_list("finished_at", flat=True).get() is not None:
            return True
        done = trainer_step(out)
        if not (done > save_steps and 0 < done % save_steps < save_steps // 2):
            return False
        saved = checkpoint_steps(out)
        return bool(saved) and saved[-1] < done

    wait_until(between_checkpoints, timeout=180, interval=0.02, message=worker.output)
    kill_worker(worker)

    run.refresh_from_db()
    assert run.status == Run.Status.RUNNING, f"killed too late: {run.status}\n{worker.output()}"
    killed_at = trainer_step(out)
    steps = checkpoint_steps(out)
    assert steps, f"no checkpoint in {out}"
    newest = steps[-1]
    assert save_steps <= newest < killed_at < max_steps
    assert (out / f"checkpoint-{newest}" / "trainer_state.json").is_file(), "killed mid-save"
    assert not (out / "final").exists()
    return killed_at, newest


def trainer_step(out: Path) -> int:
    """The step of the newest whole entry of the training process's log (0 before the first)."""
    path = out / PROGRESS_FILE
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True) if path.exists() else []
    whole = [line for line in lines if line.endswith("\n")]
    return max((json.loads(line).get("step", 0) for line in whole), default=0)


def resume_in(
    worker: Any, run: Run, newest: int, killed_at: int, left_behind: int, max_steps: int
) -> list[int]:
    """Wait for ``worker`` to claim ``run`` again and finish it; check that it resumed from
    checkpoint-``newest`` (progress never went back to it or below) and return the progress
    seen after its claim. Until the second trainer logs its first step, the run's progress is
    the first worker's last reading, ``left_behind``, which may lag the step it was killed at."""
    this_run = Run.objects.filter(pk=run.pk)
    out = training_output_dir(run)
    seen_after_claim: list[int] = []

    def finished() -> bool:
        current = this_run.values("status", "attempts", "progress_done").get()
        second_trainer_seen = seen_after_claim or current["progress_done"] != left_behind
        if (
            current["attempts"] >= 2
            and current["status"] == Run.Status.RUNNING
            and (second_trainer_seen)
        ):
            seen_after_claim.append(current["progress_done"])
        return current["status"] in Run.TERMINAL_STATUSES

    wait_until(finished, timeout=180, interval=0.05, message=worker.output)
    run.refresh_from_db()
    assert run.status == Run.Status.SUCCEEDED, run.error + worker.output()
    assert run.attempts == 2, "claimed once by each worker"
    assert f"run {run.pk}: claimed again (attempt 2)" in worker.output()
    assert f"run {run.pk}: resumed from {out / f'checkpoint-{newest}'}" in worker.output()

    # The trainer started from the checkpoint the first worker left, not from step 0.
    assert seen_after_claim, "the second attempt was never seen running"
    assert max(seen_after_claim) > killed_at, "no step of the second attempt was seen"
    assert min(seen_after_claim) > newest, (
        f"progress went back to step {min(seen_after_claim)} after the first worker left "
        f"checkpoint-{newest}: {list(dict.fromkeys(seen_after_claim))[:15]}..."
    )
    summary = json.loads((out / "final" / "dialab_training.json").read_text())
    assert summary["result"]["resumed_from"] == str(out / f"checkpoint-{newest}"), summary
    assert summary["result"]["global_step"] == max_steps
    assert run.progress_done == run.progress_total == max_steps
    assert run.accounting["optimizer_steps"] == max_steps
    return seen_after_claim


def assert_registered_and_evaluated(run: Run) -> None:
    out = training_output_dir(run)
    trained = ModelSpec.objects.get(trained_by_run=run)
    assert Path(trained.location) == out / "final"
    assert (out / "final" / "config.json").is_file()
    assert Run.objects.filter(kind=Run.Kind.EVAL, student=trained).exists(), "evaluated next"
