"""An author writes a code task in the editor, previews it, and tries answers that a real worker
checks in the sandbox."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.factories import PASSWORD, TaskSetFactory, UserFactory
from webapp.tasks.models import Task

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = Path(os.environ.get("DIALAB_SCREENSHOTS", "test-artifacts/screenshots"))
TESTS = "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(-1, 1) == 0\n"
GOOD = "```python\ndef add(a, b):\n    return a + b\n```"
HOSTILE = "```python\nimport os\ndef add(a, b):\n    os.kill(os.getppid(), 9)\n```"


def test_author_writes_previews_and_tries_a_code_task(page, worker) -> None:  # type: ignore[no-untyped-def]
    author = UserFactory()
    task_set = TaskSetFactory(name="Code drills")
    page.goto("/login/")
    page.fill("#id_username", author.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.goto(f"/task-sets/{task_set.pk}/tasks/new/")

    page.fill("#id_prompt", "Write `add(a, b)` returning $a + b$.")
    page.wait_for_selector("#prompt-preview math")  # live preview draws the math
    page.select_option("#id_verifier_kind", "code")
    page.fill("#id_tests", TESTS)
    page.fill("#id_entry_point", "add")
    page.fill("#id_domain", "code")
    page.press("#id_entry_point", "Control+Enter")  # the keyboard shortcut saves
    page.wait_for_selector("text=Try it")
    task = Task.objects.get()
    assert task.reference == {"tests": TESTS.strip(), "entry_point": "add"}

    for answer, verdict in [(HOSTILE, "✘ wrong"), (GOOD, "✔ correct")]:
        page.fill("#id_response", answer)
        page.click("button:has-text('Check')")
        page.wait_for_selector(f"#probe-verdict:has-text('{verdict}')", timeout=30_000)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "task-editor-try-it.png"), full_page=True)
    assert worker.process.poll() is None, "hostile code did not take the worker down"

    # Deleting asks first (static/dialab/confirm.js): dismissed, the task stays; accepted, it goes.
    questions: list[str] = []

    def answer(dialog, accept: bool) -> None:  # type: ignore[no-untyped-def]
        questions.append(dialog.message)
        dialog.accept() if accept else dialog.dismiss()

    page.once("dialog", lambda dialog: answer(dialog, accept=False))
    page.click("button:has-text('Delete task')")
    assert questions == ["Delete this task?"] and Task.objects.exists()
    page.once("dialog", lambda dialog: answer(dialog, accept=True))
    page.click("button:has-text('Delete task')")
    page.wait_for_url(f"**/task-sets/{task_set.pk}/")
    assert not Task.objects.exists()
