"""Queues by kind of work, in headless Chromium with the demo's worker layout (one interactive
worker; here two batch workers, so that a training run and an evaluation both play at once):

- a playground reply arrives, and the next one after the researcher's answer, while a training
  run and an evaluation play;
- a run queued behind them says on its page what it waits for, naming both runs; the Workers
  page shows each worker and what it does;
- cancelling the queued run revokes its job: the batch worker that takes the message later
  discards it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.db import transaction

from models_gpu.spec.online import OnlineConfig
from models_gpu.spec.training import TrainingConfig
from tests.e2e.conftest import wait_until
from tests.e2e.test_people_browser import arithmetic_set, didactic, log_in, scripted
from tests.e2e.test_transcripts_browser import shot
from tests.factories import UserFactory
from webapp.core.queues import BATCH, INTERACTIVE
from webapp.models_registry.models import ModelSpec
from webapp.runs import services
from webapp.runs.models import Run
from webapp.training.selectors import training_output_dir
from webapp.training.services import online_training_run_config, training_run_create

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

# Far more steps than the test lasts: it is cancelled once the test has seen what it needs.
TRAINING = TrainingConfig(
    max_steps=5000, learning_rate=1e-3, seed=1, logging_steps=1, save_steps=5000,
    device="cpu", precision="float32", gradient_checkpointing=False, max_length=256,
)  # fmt: skip
ONLINE = OnlineConfig(group_size=2, tasks_per_step=2, horizon=2, max_new_tokens=6, store_share=0.5)


def long_training(tiny_model_dir: Path, user) -> Run:  # type: ignore[no-untyped-def]
    base = ModelSpec.objects.create(
        name="tiny", backend="transformers", location=str(tiny_model_dir)
    )
    protocol, teacher = didactic("Two turns", 2), scripted("teacher", "feedback-teacher")

    def run_config(task_set):  # type: ignore[no-untyped-def]
        return services.evaluation_config(
            task_set=task_set, protocol=protocol, student=base, teacher=teacher
        )

    config = online_training_run_config(
        base=base, rollouts=run_config(arithmetic_set("train", 4)), training=TRAINING,
        online=ONLINE, evaluation=run_config(arithmetic_set("held out", 1)),
    )  # fmt: skip
    with transaction.atomic():
        run = training_run_create(name="long training", config=config, created_by=user)
        shutil.rmtree(training_output_dir(run), ignore_errors=True)  # ids restart per test db
    return run


def slow_evaluation(name: str, user, tasks: int = 400) -> Run:  # type: ignore[no-untyped-def]
    """Model-only, with a pause per batched call: 400 tasks play for more than five minutes
    (100 chunks of at least two 0.4 s calls), longer than the test waits for anything, however
    slow the machine, so it is still playing when the test checks; the test cancels it."""
    return services.evaluation_run_create(
        name=name, task_set=arithmetic_set(f"{name} sums", tasks),
        protocol=didactic(f"{name}, five turns", 5),
        student=scripted(f"{name} student", "arithmetic-student", first_try_accuracy=0.1,
                         feedback_gain=0.1, delay_ms=400),
        teacher=scripted(f"{name} teacher", "feedback-teacher", delay_ms=400),
        batch_size=4, created_by=user,
    )  # fmt: skip


def test_people_do_not_wait_behind_batch_runs_and_a_queued_run_says_what_it_waits_for(
    page, start_worker, tiny_model_dir: Path
) -> None:  # type: ignore[no-untyped-def]
    ada = UserFactory(username="ada")
    training = long_training(tiny_model_dir, ada)
    evaluation = slow_evaluation("long evaluation", ada)
    workers = [start_worker((BATCH,)), start_worker((BATCH,)), start_worker((INTERACTIVE,))]

    def output() -> str:
        return "\n\n".join(worker.output() for worker in workers)

    def playing(run: Run) -> bool:
        """Running, and (a training run) past its first step, so it is really training."""
        run.refresh_from_db()
        return run.status == Run.Status.RUNNING and (
            run.kind == Run.Kind.EVAL or run.progress_done >= 1
        )

    wait_until(lambda: playing(training) and playing(evaluation), timeout=180, message=output)
    queued = slow_evaluation("queued evaluation", ada, tasks=2)

    # The queued run's page says what it waits for: both batch workers and their runs.
    log_in(page, ada, f"/runs/{queued.pk}/")
    note = page.locator(f"#run-wait-{queued.pk} .run-wait-note")
    note.wait_for()
    text = note.text_content() or ""
    assert "Waiting for the batch worker: it plays" in text
    assert f"run #{training.pk} long training (step" in text
    assert f"run #{evaluation.pk} long evaluation (" in text
    shot(page, "queues-1-queued-run-waits")

    page.goto("/workers/")
    page.wait_for_selector("#worker-list")
    workers_page = page.text_content("main") or ""
    assert "long training" in workers_page and "long evaluation" in workers_page
    assert f"run #{queued.pk}" in (page.text_content("#queue-gpu") or "")
    shot(page, "queues-2-workers-page")

    # A playground conversation: the scripted student's reply arrives while both runs play.
    scripted("quick student", "arithmetic-student", first_try_accuracy=0.0, feedback_gain=1.0)
    task_set = arithmetic_set("Playground sums", 1)
    page.goto(f"/task-sets/{task_set.pk}/")
    page.locator("#task-table a:has-text('Playground')").first.click()
    page.check("input[name=role][value=teacher]")
    page.select_option("#id_partner", label="quick student")
    page.select_option("#id_protocol", label="Two turns")
    page.click("button:has-text('Start')")
    page.wait_for_selector("#composer textarea", timeout=30_000)  # the student's first reply
    page.fill("#composer textarea", "Add the tens, then the units.")
    page.click("#send")
    page.wait_for_selector("#final-verdict", timeout=30_000)  # its reply to the feedback
    assert playing(training) and playing(evaluation), "both batch runs still play"
    assert Run.objects.get(pk=queued.pk).status == Run.Status.QUEUED
    shot(page, "queues-3-playground-reply")

    # Cancelling the queued run revokes its job: a batch worker freed later discards it.
    page.goto(f"/runs/{queued.pk}/")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#cancel-run")
    page.wait_for_selector("#run-status:has-text('Cancelled')")
    queued.refresh_from_db()
    services.run_cancel(run=training)
    services.run_cancel(run=evaluation)
    wait_until(
        lambda: any(
            "revoked" in line and queued.job_id in line
            for worker in workers[:2]
            for line in worker.lines
        ),
        timeout=120,
        message=output,
    )
    queued.refresh_from_db()
    assert queued.status == Run.Status.CANCELLED and queued.attempts == 0
