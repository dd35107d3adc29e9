"""The first path a researcher walks, driven in headless Chromium against a live server and a
real Celery worker: log in, author tasks, set up models and a protocol, launch an evaluation,
watch it fill in live, read the transcripts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.factories import PASSWORD, UserFactory
from webapp.dialogues.models import Dialogue, Turn
from webapp.runs.models import Run

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = Path(os.environ.get("DIALAB_SCREENSHOTS", "test-artifacts/screenshots"))
TASKS = [("What is 12 + 30?", "42"), ("What is 7 * 8?", "56"), ("What is 100 - 37?", "63")]
SAMPLES_PER_TASK = 8


def shot(page, name: str) -> None:  # type: ignore[no-untyped-def]
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def test_researcher_walks_from_tasks_to_live_chart_and_transcripts(page, start_worker) -> None:  # type: ignore[no-untyped-def]
    researcher = UserFactory(username="ada")

    # 1. Log in (every page requires it), create a task set and add tasks through the form.
    page.goto("/task-sets/")
    assert "/login/" in page.url
    page.fill("#id_username", researcher.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/task-sets/")
    page.click("text=New task set")
    page.fill("#id_name", "Browser arithmetic")
    page.click("button:has-text('Create task set')")
    page.wait_for_selector("text=No tasks yet")
    for prompt, answer in TASKS:
        page.fill("#id_prompt", prompt)
        page.fill("#id_answer", answer)
        page.click("button:has-text('Add task')")
        page.wait_for_selector(f"#task-table >> text={prompt}")
    # A bad answer for the numeric verifier is refused with a clear message and adds nothing.
    page.fill("#id_prompt", "What is half of ten?")
    page.fill("#id_answer", "five")
    page.click("button:has-text('Add task')")
    page.wait_for_selector("text=The numeric verifier needs a number")
    assert page.locator("#task-table tbody tr").count() == len(TASKS)
    shot(page, "1-task-set")

    # 2. Create the models and a didactic protocol with 5 turns, then launch from the form.
    page.click("nav >> text=Models")
    for name, policy in [("student", "arithmetic-student"), ("teacher", "feedback-teacher")]:
        page.fill("#id_name", f"scripted {name}")
        page.fill("#id_location", policy)
        page.click("button:has-text('Add model')")
        page.wait_for_selector(f"td:has-text('scripted {name}')")
    page.click("nav >> text=Protocols")
    page.fill("#id_name", "Didactic, 5 turns")
    page.select_option("#id_mode", "didactic")
    page.fill("#id_max_turns", "5")
    page.click("button:has-text('Add protocol')")
    page.wait_for_selector("td:has-text('Didactic, 5 turns')")

    page.click("nav >> text=Task sets")
    page.click("text=Browser arithmetic")
    page.click("text=Launch an evaluation")
    page.select_option("#id_protocol", label="Didactic, 5 turns")
    page.select_option("#id_student", label="scripted student")
    page.select_option("#id_teacher", label="scripted teacher")
    page.fill("#id_samples_per_task", str(SAMPLES_PER_TASK))
    page.click("button:has-text('Launch')")
    page.wait_for_url("**/runs/*/")

    # The run waits in the queue until a worker exists; the page polls meanwhile.
    assert page.text_content("#run-status") == "Queued"
    run = Run.objects.get()
    assert run.config["protocol"]["max_turns"] == 5 and len(run.config_hash) == 64
    shot(page, "2-run-queued")

    # 3. A real worker claims the run and plays the dialogues.
    start_worker()

    # 4. Without a reload, the page shows the run finish and the chart drawn; polling stops.
    page.wait_for_selector("#run-status:has-text('Succeeded')", timeout=60_000)
    total = len(TASKS) * SAMPLES_PER_TASK
    assert f"{total} / {total} dialogues" in page.text_content("#run-progress")
    page.wait_for_selector("#accuracy-chart[data-drawn=true] .main-svg")
    assert page.get_attribute("#run-live", "hx-trigger") is None
    points = page.evaluate("() => document.getElementById('accuracy-chart').data[0].y")
    assert len(points) == 5
    assert points == sorted(points), "cumulative accuracy never decreases with k"
    shot(page, "3-run-finished")

    # 5. The transcript list shows every dialogue with its outcome; a dialogue shows its turns.
    page.click(".actions >> text=Transcripts")
    page.wait_for_selector("#dialogue-table")
    assert page.locator("#dialogue-table tbody tr").count() == total
    unsolved = Dialogue.objects.filter(run=run, outcome="unsolved").first()
    solved_late = Dialogue.objects.filter(run=run, first_correct_turn__gte=2).first()
    assert solved_late is not None, "with 24 dialogues some are solved after feedback"
    shot(page, "4-transcripts")

    page.goto(f"/dialogues/{solved_late.pk}/")
    student_turns = Turn.objects.filter(dialogue=solved_late, role="student").count()
    assert page.locator(".turn-student").count() == student_turns
    assert page.locator(".verdict.wrong").count() == student_turns - 1
    assert page.locator(".verdict.correct").count() == 1
    assert page.locator(".turn-teacher").count() == student_turns - 1
    page.click(".turn-teacher >> nth=0 >> summary")
    assert "verdict_details" in page.text_content(".turn-teacher >> nth=0 >> .private-context")
    shot(page, "5-dialogue")
    if unsolved is not None:
        assert unsolved.num_turns == 5
