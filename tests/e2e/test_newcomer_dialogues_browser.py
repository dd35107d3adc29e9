"""What a newcomer tripped over, in headless Chromium with runs a real worker played: comparing
offers only dialogues that exist and starts from the transcript list's filter; the dialogue page
says who saw the reference, labels every message apart and has no teacher switch without a
teacher; the home page follows a house-model build step by step."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from django.db import transaction

from tests.e2e.conftest import wait_until
from tests.factories import (
    PASSWORD,
    ProtocolFactory,
    StudentFactory,
    TaskFactory,
    TaskSetFactory,
    TeacherFactory,
    UserFactory,
)
from webapp.dialogues.models import Dialogue
from webapp.runs.models import Protocol, Run
from webapp.runs.services import evaluation_run_create

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = Path(os.environ.get("DIALAB_SCREENSHOTS", "test-artifacts/screenshots"))


def shot(page, name: str) -> None:  # type: ignore[no-untyped-def]
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def log_in(page, user) -> None:  # type: ignore[no-untyped-def]
    page.goto("/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/")


def launch(name: str, **fields) -> Run:  # type: ignore[no-untyped-def]
    with transaction.atomic():  # dispatched when it commits, as from the launch form
        return evaluation_run_create(name=name, created_by=None, **fields)


def played(runs: list[Run], worker) -> None:  # type: ignore[no-untyped-def]
    wait_until(
        lambda: all(Run.objects.get(pk=run.pk).is_finished for run in runs),
        timeout=120,
        message=worker.output,
    )
    for run in runs:
        run.refresh_from_db()
        assert run.status == Run.Status.SUCCEEDED, run.error + worker.output()


def test_comparing_and_reading_dialogues_as_a_newcomer(page, worker) -> None:  # type: ignore[no-untyped-def]
    researcher = UserFactory(username="newcomer")
    arithmetic = TaskSetFactory(name="Arithmetic")
    task, _ = TaskFactory.create_batch(2, task_set=arithmetic)
    # The teacher is given the verifier's details but not the reference; the student is never
    # right at once, so the teacher speaks in every dialogue.
    hidden = ProtocolFactory(name="no reference", teacher_sees_reference=False)
    student = StudentFactory(
        name="slow student", generation_params={"first_try_accuracy": 0.0, "feedback_gain": 0.5}
    )
    roles = {"task_set": arithmetic, "protocol": hidden, "student": student,
             "teacher": TeacherFactory()}  # fmt: skip
    five = launch("five samples", samples_per_task=5, **roles)
    four = launch("four samples", samples_per_task=4, **roles)
    sharded_set = TaskSetFactory(name="Sharded")
    TaskFactory(
        task_set=sharded_set, prompt="What is 3 + 4?", reference={"answer": "7"},
        shards=["I need a sum.", "The first number is 3.", "The second number is 4."],
    )  # fmt: skip
    sharded = launch(
        "sharded", task_set=sharded_set,
        protocol=ProtocolFactory(name="sharded", mode=Protocol.Mode.SHARDED, max_turns=4),
        student=StudentFactory(
            location="sharded-student", generation_params={"ask_probability": 1.0}
        ),
        user_simulator=StudentFactory(location="shard-revealer"),
    )  # fmt: skip
    played([five, four, sharded], worker)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    log_in(page, researcher)

    # 1. Sample 4 of a run beside a run with samples 0-3: only samples that exist are offered.
    dialogue = Dialogue.objects.get(run=five, task=task, sample_index=4)
    page.goto(f"/dialogues/{dialogue.pk}/")
    offer = page.locator(f"#compare-run-{four.pk}")
    assert "It has no sample 4 of this task." in offer.text_content()
    assert offer.locator(".sample-link").count() == 4
    # What the teacher saw: the protocol hid the reference, so it is the verifier's alone.
    assert page.text_content("#task-private summary") == "What only the verifier sees"
    page.keyboard.press("p")
    assert (
        page.locator("details.private-context[open]").count()
        == page.locator("details.private-context").count()
    )
    assert page.is_visible("#reference-note")
    assert "hid the reference from the teacher" in page.text_content("#reference-note")
    assert page.locator(".verifier-details summary", has_text="the teacher saw them").count() >= 1
    shot(page, "newcomer-1-dialogue-offers-and-private-context")
    offer.locator(".sample-link", has_text="2").click()
    page.wait_for_url("**/dialogues/compare/?*")
    assert page.locator(".missing-dialogue").count() == 0, "both sides are real dialogues"
    assert page.locator("#compare-table .compare-round").count() >= 2
    shot(page, "newcomer-2-compare-sample-4-with-sample-2")

    # 2. "Compare a task across runs" from the list takes the filter the rows show now (changed
    # with htmx).
    page.goto("/dialogues/")
    page.select_option("#id_run", str(five.pk))
    page.wait_for_function("() => location.search.includes('run=')")
    page.fill("#id_task", str(task.pk))
    page.keyboard.press("Enter")
    page.wait_for_function("() => location.search.includes('task=')")
    page.wait_for_function(
        "() => document.querySelectorAll('#dialogue-table tbody tr').length === 5"
    )
    page.click("#compare-these")
    page.wait_for_url("**/dialogues/compare/?*")
    assert page.is_visible("#compare-prefilled")
    assert page.locator("#compare-table .missing-dialogue").count() == 0
    heads = page.locator(".compare-head").all_text_contents()
    assert f"#{five.pk} five samples" in heads[0] and f"#{four.pk} four samples" in heads[1]
    shot(page, "newcomer-3-compare-from-the-list")

    # 3. A sharded dialogue: each message labelled apart, turns named once, no teacher switch.
    page.goto(f"/dialogues/{Dialogue.objects.get(run=sharded).pk}/")
    speakers = page.locator(".conversation .turn .speaker").all_text_contents()
    labels = [" ".join(label.split()) for label in speakers[1:]]  # the first is the task
    assert len(set(labels)) == len(labels), labels
    # Each message named as on every page (webapp/dialogues/numbering.py).
    assert labels[0].startswith("User simulator · turn 1 · message #1 · shard 1 of 3")
    assert labels[2].startswith("User simulator · turn 1 · message #3 · shard 2 of 3")
    assert page.locator("#round-1").text_content() == "Turn 1"
    assert page.locator("#private-toggle").count() == 0
    page.keyboard.press("p")  # nothing to switch: the page stays as it was, without errors
    assert page.locator("details.private-context[open]").count() == 0
    shot(page, "newcomer-4-sharded-dialogue")
    assert not errors, errors


def test_the_home_page_follows_the_house_model_build(page, settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from models_gpu.house.progress import BuildProgressFile
    from webapp.views import house_build_progress_path

    settings.DATA_DIR = tmp_path
    researcher = UserFactory(username="watcher")
    report = BuildProgressFile(house_build_progress_path(), every_seconds=0)
    report.start(total=400)
    log_in(page, researcher)
    assert "Preparing the build" in page.text_content("#house-build-status")
    # The build trains: each poll (every 2 s) shows the step, the loss and the time left.
    for step in range(1, 101):
        report(step, 400, 2.5)
        time.sleep(0.005)
    page.wait_for_function(
        "() => (document.getElementById('house-build-step') || {}).textContent === '100'",
        timeout=10_000,
    )
    assert page.text_content("#house-build-loss") == "2.500"
    assert page.text_content("#house-build-eta").endswith(" s")
    shot(page, "newcomer-5-home-house-build")
    for step in range(101, 401):
        report(step, 400, 0.5)
    report.done()
    page.wait_for_function(
        "() => document.getElementById('house-build-status').textContent.includes('Built in')",
        timeout=10_000,
    )
    assert not page.locator("#house-build").get_attribute("hx-trigger")
    shot(page, "newcomer-6-home-house-built")
