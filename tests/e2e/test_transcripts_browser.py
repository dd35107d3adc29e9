"""Reading transcripts in headless Chromium: filter and search the list (the address bar follows),
open a dialogue, show the teacher's private context with the keyboard, compare two runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.factories import PASSWORD, TaskFactory, TaskSetFactory, UserFactory
from tests.transcript_builders import attempt, feedback, make_run, store
from webapp.dialogues.models import Dialogue

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = Path(os.environ.get("DIALAB_SCREENSHOTS", "test-artifacts/screenshots"))


def shot(page, name: str) -> None:  # type: ignore[no-untyped-def]
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def wait_for_address(page, text: str) -> None:  # type: ignore[no-untyped-def]
    """htmx pushes the new URL with the History API (no navigation to wait for)."""
    page.wait_for_function("text => location.search.includes(text)", arg=text)


def test_researcher_filters_reads_and_compares_transcripts(page) -> None:  # type: ignore[no-untyped-def]
    researcher = UserFactory(username="grace")
    task_set = TaskSetFactory(name="Arithmetic")
    carry, other = (
        TaskFactory(task_set=task_set, prompt="What is $17 + 25$?"),
        TaskFactory(task_set=task_set),
    )
    baseline, trained = make_run("baseline", task_set), make_run("after SFT", task_set)
    store(baseline, carry.pk, 0, "a_late", [
        attempt("$17 + 25 = 32$, so **32**.", "32", False),
        feedback("Check the `carry` from the units column.", leak=False),
        attempt("Units: $7 + 5 = 12$, carry 1, so 42.", "42", True),
    ])  # fmt: skip
    store(baseline, other.pk, 0, "a_first", [attempt("The answer is 3.", "3", True)])
    store(trained, carry.pk, 0, "b_solved", [attempt("It is 42.", "42", True)])
    store(trained, other.pk, 0, "b_same", [
        attempt("Maybe 4?", "4", False),
        feedback("The answer is 3.", leak=True),
        attempt("Still 4.", "4", False),
    ])  # fmt: skip
    target = Dialogue.objects.get(run=baseline, task=carry)

    page.goto("/dialogues/")
    page.fill("#id_username", researcher.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/dialogues/")
    assert page.locator("#dialogue-table tbody tr").count() == 4

    # Filtering swaps the rows in place and the address bar holds a shareable link.
    page.select_option("#id_outcome", "solved")
    wait_for_address(page, "outcome=solved")
    # Functions, not expressions: Playwright evals an expression on each poll (refused by the CSP).
    page.wait_for_function(
        "() => document.querySelectorAll('#dialogue-table tbody tr').length === 3"
    )
    page.fill("#id_q", "carry")
    wait_for_address(page, "q=carry")
    page.wait_for_function(
        "() => document.querySelectorAll('#dialogue-table tbody tr').length === 1"
    )
    assert "q=carry" in page.url and "outcome=solved" in page.url and "run=" not in page.url
    shot(page, "transcripts-1-filtered")
    filtered = page.url

    # Export takes the filters shown now, not those the page was loaded with (transcripts.js).
    page.click("#export-link")
    page.wait_for_url("**/dialogues/export/?*")
    assert "q=carry" in page.url and "outcome=solved" in page.url

    # The same link opened afresh shows the same rows (filters live in the URL).
    page.goto(filtered)
    assert page.locator("#dialogue-table tbody tr").count() == 1
    page.click(f"#dialogue-table >> text=#{target.pk}")
    page.wait_for_url(f"**/dialogues/{target.pk}/?*")
    assert page.locator(".verdict.wrong").count() == 1
    assert page.locator(".verdict.correct").count() == 1
    assert page.locator(".turn-student math").count() >= 1  # math drawn as MathML

    # "p" opens every private panel at once, and closes them again.
    panels = page.locator("details.private-context")
    assert panels.count() >= 2
    assert page.locator("details.private-context[open]").count() == 0
    page.keyboard.press("p")
    assert page.locator("details.private-context[open]").count() == panels.count()
    assert page.is_checked("#show-private")
    shot(page, "transcripts-2-dialogue-private")
    page.keyboard.press("p")
    assert page.locator("details.private-context[open]").count() == 0

    # Compare with the other run of this task: aligned round by round with the verdicts.
    page.click("#compare-with >> text=after SFT")
    page.wait_for_url("**/dialogues/compare/?*")
    assert page.locator("#compare-table .compare-round").count() == 2
    assert page.locator("#round-1 .verdict.wrong").count() == 1
    assert page.locator("#round-1 .verdict.correct").count() == 1
    assert "ended before this turn" in page.text_content("#round-2")
    shot(page, "transcripts-3-compare")


def test_back_after_filtering_shows_the_list_again_within_the_policy(page) -> None:  # type: ignore[no-untyped-def]
    """Applying filters already applied adds no step to Back (static/dialab/history.js), and Back
    reloads the list the address names, its search box and rows agreeing, within the
    Content-Security-Policy (the page fixture fails on any violation)."""
    researcher = UserFactory(username="grace")
    task_set = TaskSetFactory(name="Arithmetic")
    run = make_run("baseline", task_set)
    tasks = TaskFactory.create_batch(2, task_set=task_set)
    for task, name in zip(tasks, ("a_first", "b_same"), strict=True):
        store(run, task.pk, 0, name, [
            attempt("Maybe 4? Too low.", "4", False), feedback("Too low."),
            attempt("It is 5.", "5", name == "a_first"),
        ])  # fmt: skip
    page.goto("/dialogues/")
    page.fill("#id_username", researcher.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/dialogues/")
    page.fill("#id_q", "too low")
    wait_for_address(page, "q=too")
    page.select_option("#id_outcome", "unsolved")
    wait_for_address(page, "outcome=unsolved")
    page.wait_for_function(
        "() => document.querySelectorAll('#dialogue-table tbody tr').length === 1"
    )
    steps = page.evaluate("() => history.length")
    page.click("#transcript-filters button[type=submit]")
    page.click("#transcript-filters button[type=submit]")
    page.wait_for_load_state("networkidle")
    assert page.evaluate("() => history.length") == steps, "the same filters: no new step"

    page.go_back()
    page.wait_for_function("() => !location.search.includes('outcome=unsolved')")
    page.wait_for_function(
        "() => document.querySelectorAll('#dialogue-table tbody tr').length === 2"
    )
    assert "q=too+low" in page.url
    assert page.input_value("#id_q") == "too low", "the search box says what filtered the rows"
