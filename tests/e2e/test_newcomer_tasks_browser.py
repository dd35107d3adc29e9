"""What a newcomer tripped over in the tasks pages, in headless Chromium with a real worker: a
quick add on a frozen set lands on the new version and says so; an older version points to the
newest; tasks carry the number transcripts give them; "Try it" shows the number the verifier
judged; a generated set says what made it; a plain CSV imports as guessed; and a failed import
is mapped again without uploading the file again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.factories import PASSWORD, TaskFactory, TaskSetFactory, UserFactory, frozen_run
from webapp.tasks.models import TaskImport, TaskSet

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = Path(os.environ.get("DIALAB_SCREENSHOTS", "test-artifacts/screenshots"))
DATA = Path(__file__).resolve().parents[1] / "data"


def shot(page, name: str) -> None:  # type: ignore[no-untyped-def]
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    # caret="initial": to hide carets Playwright sets and clears an inline style on every input,
    # leaving style=""; htmx then copies that onto swapped-in inputs, which the CSP refuses.
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True, caret="initial")


def log_in(page, to: str) -> None:  # type: ignore[no-untyped-def]
    researcher = UserFactory()
    page.goto(to)
    page.fill("#id_username", researcher.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"**{to}")


def quick_add(page, prompt: str, answer: str) -> None:  # type: ignore[no-untyped-def]
    page.fill("#task-editor #id_prompt", prompt)
    page.fill("#task-editor #id_answer", answer)
    page.press("#task-editor #id_answer", "Control+Enter")


def test_a_quick_add_on_a_frozen_set_lands_on_the_new_version(page) -> None:  # type: ignore[no-untyped-def]
    v1 = TaskSetFactory(name="Sums")
    TaskFactory(task_set=v1, prompt="What is 1 + 1?", reference={"answer": "2"})
    frozen_run(task_set=v1)
    log_in(page, f"/task-sets/{v1.pk}/")
    assert "makes a new version (v2)" in page.text_content("#locked-notice")

    quick_add(page, "What is 6 * 7?", "42")
    page.wait_for_selector("h1:has-text('Sums (v2)')")
    v2 = TaskSet.objects.get(parent=v1)
    assert page.url.endswith(f"/task-sets/{v2.pk}/"), "the address is the new version's"
    assert "Saved as v2: v1 is frozen because runs used it." in page.text_content(".messages")
    assert page.locator("#locked-notice").count() == 0
    assert page.locator("#task-table tbody tr").count() == 2
    shot(page, "newcomer-quick-add-saved-as-v2")

    # The next add stays in v2: no new version, the table grows in place.
    quick_add(page, "What is 5 * 5?", "25")
    page.wait_for_selector("#task-table tbody tr:nth-child(3)")
    assert page.url.endswith(f"/task-sets/{v2.pk}/")
    assert TaskSet.objects.count() == 2 and v2.tasks.count() == 3
    # Tasks carry the number transcripts show: their id, not their row.
    newest_task = v2.tasks.get(prompt="What is 5 * 5?")
    assert page.text_content("#task-table tbody tr:nth-child(3) td.task-number") == (
        f"#{newest_task.pk}"
    )

    # The old version says a newer one exists, links it, and offers no way to change it.
    page.goto(f"/task-sets/{v1.pk}/")
    assert "A newer version of this set exists: v2." in page.text_content("#newer-version")
    assert page.locator("#task-editor form[method=post]").count() == 0
    versions = " ".join(page.text_content("#versions").split())
    assert versions == "Versions: v1 (1 run) · v2 (0 runs, newest)"
    shot(page, "newcomer-older-version-points-to-newest")
    page.click("#newer-version a")
    page.wait_for_url(f"**/task-sets/{v2.pk}/")


def test_a_generated_set_says_what_made_it_and_try_it_shows_the_judged_number(page, worker) -> None:  # type: ignore[no-untyped-def]
    log_in(page, "/task-sets/generate/")
    assert page.input_value("#id_family") == "arithmetic"
    page.fill("#id_count", "5")
    page.fill("#id_seed", "7")
    page.click("button:has-text('Generate')")
    page.wait_for_selector("h1:has-text('Generation: arithmetic (5, seed 7)')")
    page.wait_for_selector("#import-status:has-text('Generated')", timeout=30_000)
    assert page.title().startswith("Generation · ")
    shot(page, "newcomer-generation-result")

    page.click("#import-task-set")
    page.wait_for_selector("#provenance")
    provenance = page.text_content("#provenance")
    assert "family arithmetic · 5 tasks · seed 7 · digits 2 · operations +-*" in provenance
    shot(page, "newcomer-generated-set-provenance")

    task = TaskSet.objects.get().tasks.order_by("position").first()
    page.click("#task-table tbody tr:first-child td.task-number a")
    page.wait_for_selector(f"h1:has-text('Task #{task.pk}')")
    answer = task.reference["answer"]
    page.fill("#id_response", f"I think it is {answer}")
    page.click("button:has-text('Check')")
    page.wait_for_selector("#probe-verdict:has-text('✔ correct')", timeout=30_000)
    assert page.text_content("#probe-verdict code") == answer
    shot(page, "newcomer-try-it-judged-number")


BAD_LEVEL = "question,solution,level\nWhat is 2 + 2?,4,1\nWhat is 3 * 3?,9,hard\n"


def test_a_csv_imports_as_guessed_and_a_failed_import_is_mapped_again(
    page, worker, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    log_in(page, "/task-sets/imports/new/")
    page.fill("#id_task_set_name", "Sums as guessed")
    page.set_input_files("#id_file", str(DATA / "tasks.csv"))
    page.click("button:has-text('Continue')")
    page.wait_for_selector("#mapping-form")
    # The "solution" column holds numbers: it is the answer, and the verifier numeric.
    assert page.input_value("#id_map_answer") == "solution"
    assert page.input_value("#id_map_solution") == ""
    assert page.input_value("#id_default_verifier_kind") == "numeric"
    shot(page, "newcomer-import-guessed-mapping")
    page.click("#mapping-form button:has-text('Import')")
    page.wait_for_selector("#import-status:has-text('Imported')", timeout=30_000)
    page.click("#import-task-set")
    page.wait_for_selector("#provenance")
    assert "answer ← solution" in page.text_content("#provenance")
    shot(page, "newcomer-imported-set-provenance")

    bad = tmp_path / "levels.csv"
    bad.write_text(BAD_LEVEL)
    page.goto("/task-sets/imports/new/")
    page.fill("#id_task_set_name", "Levels")
    page.set_input_files("#id_file", str(bad))
    page.click("button:has-text('Continue')")
    page.wait_for_selector("#mapping-form")
    assert page.input_value("#id_map_difficulty") == "level"
    page.click("#mapping-form button:has-text('Import')")
    page.wait_for_selector("#import-status:has-text('Failed')", timeout=30_000)
    assert page.text_content("#import-error").startswith("line 3: field 'difficulty'")
    shot(page, "newcomer-failed-import-change-mapping")

    page.click("#change-mapping")
    page.wait_for_selector("#previous-failure")
    assert page.input_value("#id_map_difficulty") == "level", "the mapping that was tried"
    shot(page, "newcomer-mapping-again")
    page.select_option("#id_map_difficulty", "")
    page.click("#mapping-form button:has-text('Import')")
    page.wait_for_selector("#import-status:has-text('Imported')", timeout=30_000)
    levels = TaskImport.objects.get(task_set_name="Levels")
    assert levels.task_set.tasks.count() == 2 and not levels.upload
    shot(page, "newcomer-mapped-again-imported")
