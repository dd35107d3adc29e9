"""Imports through a real Celery worker process, and the upload flow in headless Chromium."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction

from tests.e2e.conftest import wait_until
from tests.factories import PASSWORD, UserFactory
from webapp.tasks.imports.services import task_import_confirm, task_import_create
from webapp.tasks.models import TaskImport, TaskSet

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

DATA = Path(__file__).resolve().parents[1] / "data"


def finished(task_import: TaskImport) -> bool:
    task_import.refresh_from_db()
    return task_import.is_finished


def test_worker_imports_humaneval_and_fails_a_bad_upload_cleanly(worker) -> None:  # type: ignore[no-untyped-def]
    with transaction.atomic():
        good = task_import_create(source="humaneval", task_set_name="HumanEval", created_by=None)
    with transaction.atomic():
        bad = task_import_create(
            source="upload", task_set_name="Bad", created_by=None, file_format="jsonl",
            upload=SimpleUploadedFile("bad.jsonl", b'{"q": "1+1?", "a": "2"}\n{"q": "x", "a": \n'),
        )  # fmt: skip
        task_import_confirm(task_import=bad, columns={"prompt": "q", "answer": "a"}, defaults={})
    wait_until(lambda: finished(good) and finished(bad), timeout=60)
    assert good.status == "succeeded", good.error + worker.output()
    assert good.task_set.tasks.count() == 164 and good.progress_done == 164
    assert bad.status == "failed"
    assert bad.error.startswith("line 2: malformed JSON: Expecting value")
    assert list(TaskSet.objects.values_list("name", flat=True)) == ["HumanEval"]


def test_researcher_uploads_a_csv_maps_columns_and_watches_it_import(page, worker) -> None:  # type: ignore[no-untyped-def]
    researcher = UserFactory(username="grace")
    page.goto("/task-sets/")
    page.fill("#id_username", researcher.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/task-sets/")

    page.click("text=Import tasks")
    page.fill("#id_task_set_name", "Uploaded sums")
    page.set_input_files("#id_file", str(DATA / "tasks.csv"))
    page.click("button:has-text('Continue')")
    page.wait_for_selector("#preview-table")
    # The preview shows the detected columns and the first rows.
    headers = page.locator("#preview-table thead th").all_text_contents()
    assert headers == ["question", "solution", "level", "topic"]
    assert page.locator("#preview-table tbody tr").count() == 3
    assert "What is 10 - 7?" in page.text_content("#preview-table")

    page.select_option("#id_map_prompt", "question")
    page.select_option("#id_map_answer", "solution")
    page.select_option("#id_map_difficulty", "level")
    page.select_option("#id_map_domain", "topic")
    page.select_option("#id_default_verifier_kind", "numeric")
    page.click("button:has-text('Import')")
    page.wait_for_url("**/task-sets/imports/*/")

    # The status fragment polls until the worker finishes, then stops and links the new set.
    page.wait_for_selector("#import-status:has-text('Imported')", timeout=30_000)
    assert "3 / 3 tasks" in page.text_content("#import-progress")
    assert page.get_attribute("#import-live", "hx-trigger") is None
    page.click("#import-task-set")
    page.wait_for_selector("#task-table")
    assert page.locator("#task-table tbody tr").count() == 3
    task_set = TaskSet.objects.get(name="Uploaded sums")
    assert list(task_set.tasks.order_by("position").values_list("difficulty", flat=True)) == [
        1.0, 2.0, 1.5,
    ]  # fmt: skip
