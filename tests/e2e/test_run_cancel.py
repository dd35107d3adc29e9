"""Cancel from the run page with a real worker: the run stops within seconds and keeps the
dialogues that finished."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from django.db import transaction

from tests.e2e.conftest import wait_until
from tests.factories import PASSWORD, ProtocolFactory, TaskFactory, TaskSetFactory, UserFactory
from webapp.dialogues.models import Dialogue
from webapp.models_registry.models import ModelSpec
from webapp.runs import selectors
from webapp.runs.models import Run
from webapp.runs.services import evaluation_run_create

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = Path(os.environ.get("DIALAB_SCREENSHOTS", "test-artifacts/screenshots"))
STOP_WITHIN_SECONDS = 5
TASKS = 60
SAMPLES = 2


def slow_run() -> Run:
    """A didactic run whose scripted student takes 250 ms per batched call of 4 dialogues:
    about 20 s in all (30 chunks of about 2.6 such calls, slept: a busy machine does not
    shorten them), long enough to cancel in the middle however slowly the browser gets there."""
    task_set = TaskSetFactory()
    for position in range(TASKS):
        TaskFactory(task_set=task_set, position=position)
    student = ModelSpec.objects.create(
        name="slow student", backend="scripted", location="arithmetic-student",
        generation_params={"delay_ms": 250},
    )  # fmt: skip
    teacher = ModelSpec.objects.create(
        name="teacher", backend="scripted", location="feedback-teacher"
    )
    with transaction.atomic():
        return evaluation_run_create(
            name="slow", task_set=task_set, student=student, teacher=teacher,
            protocol=ProtocolFactory(max_turns=3), samples_per_task=SAMPLES, batch_size=4,
            created_by=None,
        )  # fmt: skip


def test_cancel_from_the_page_stops_a_running_run_within_seconds(page, start_worker) -> None:  # type: ignore[no-untyped-def]
    researcher = UserFactory()
    run = slow_run()
    page.goto(f"/runs/{run.pk}/")
    page.fill("#id_username", researcher.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"**/runs/{run.pk}/")
    worker = start_worker()
    wait_until(lambda: Dialogue.objects.filter(run=run).count() >= 6, timeout=60)
    page.wait_for_selector("#run-status:has-text('Running')")

    # Cancelling asks first (static/dialab/confirm.js): dismissed, the run goes on.
    questions: list[str] = []
    page.once("dialog", lambda dialog: (questions.append(dialog.message), dialog.dismiss()))
    page.click("#cancel-run")
    assert questions and questions[0].startswith("Cancel this run?")
    assert not Run.objects.get(pk=run.pk).cancel_requested
    page.once("dialog", lambda dialog: dialog.accept())
    clicked = time.monotonic()
    page.click("#cancel-run")
    wait_until(lambda: Run.objects.get(pk=run.pk).is_finished, timeout=30, interval=0.05)
    stopped_after = time.monotonic() - clicked

    run.refresh_from_db()
    stored = Dialogue.objects.filter(run=run).count()
    assert run.status == Run.Status.CANCELLED, run.error + worker.output()
    assert stopped_after < STOP_WITHIN_SECONDS, f"took {stopped_after:.1f} s to stop"
    assert 6 <= stored < TASKS * SAMPLES, "what finished is kept, the rest is not played"
    assert run.progress_done == stored
    assert run.accounting["dialogues"] == stored
    time.sleep(1.5)
    assert Dialogue.objects.filter(run=run).count() == stored, "nothing is stored after the stop"
    # The page notices without a reload and stops polling.
    page.wait_for_selector("#run-status:has-text('Cancelled')", timeout=10_000)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "run-cancelled.png"), full_page=True)
    print(f"cancel took {stopped_after:.2f} s; {stored} dialogues kept")
    check_the_cancelled_runs_curve(page, run)


def check_the_cancelled_runs_curve(page, run: Run) -> None:  # type: ignore[no-untyped-def]
    """A cancelled run's curve is over the dialogues of the batches that finished: one
    denominator for every turn, never dropping, marked partial, and the same in the runs table.
    (Before, it counted the stored dialogues per turn, the cut batch's early solves included,
    and read 8.3% after turn 4 then 0.0% after turn 5.)"""
    metrics = selectors.run_metrics(run=run)
    counted = metrics.counted
    assert counted.partial and counted.complete, "a batch of 4 finished before the cancel"
    cells = page.locator("#accuracy-table tbody tr").first.locator("td").all_text_contents()
    shown = [float(cell.rstrip("%")) for cell in cells]
    assert len(shown) == 3 and shown == sorted(shown), f"accuracy after turn k drops: {shown}"
    counts = page.locator("#accuracy-counts td").all_text_contents()
    assert {count.split("/")[1] for count in counts} == {str(counted.dialogues)}
    assert counted.description in page.locator("#metrics-partial").inner_text()
    trace = page.evaluate(
        "() => JSON.parse(document.getElementById('accuracy-figure').textContent).data[0]"
    )
    assert trace["name"].endswith(f"(n={counted.dialogues}, partial)")
    assert [round(100 * y, 1) for y in trace["y"]] == shown, "the chart draws the table's curve"
    page.goto("/runs/")
    final = page.locator(f"tr[data-run='{run.pk}'] td.num").nth(1).inner_text()
    assert final.startswith(f"{shown[-1]:.1f}%"), (final, shown)
