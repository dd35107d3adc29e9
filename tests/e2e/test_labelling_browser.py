"""Labelling in headless Chromium: a researcher builds a queue of unsolved dialogues from the
transcript filter (k=2, two annotators); both label with the keyboard only, a reload keeps the
draft; Enter with questions unanswered is refused, naming them, and stores nothing; the
researcher sees both labels and their history, and the agreement page's link to a message
lands on it, in view and highlighted."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.factories import PASSWORD, TaskFactory, TaskSetFactory, UserFactory
from tests.transcript_builders import attempt, feedback, make_run, store
from webapp.annotations.defaults import ensure_default_schemas
from webapp.annotations.models import (
    Annotation,
    AnnotationRevision,
    LabelQuestion,
    LabelSchema,
    QueueAssignment,
)
from webapp.dialogues.models import Dialogue

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = Path(os.environ.get("DIALAB_SCREENSHOTS", "test-artifacts/screenshots"))


def shot(page, name: str, full_page: bool = True) -> None:  # type: ignore[no-untyped-def]
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=full_page)


def login(page, username: str, path: str) -> None:  # type: ignore[no-untyped-def]
    page.context.clear_cookies()
    page.goto(path)
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")


def wait_saved(page) -> None:  # type: ignore[no-untyped-def]
    # A function, not an expression: Playwright evals an expression on each poll, which the
    # page's Content-Security-Policy refuses.
    page.wait_for_function("() => document.getElementById('save-status').dataset.state === 'saved'")


# The message a link points at: its box, the header's, the viewport's height, the scroll, and
# whether it is the highlighted target (its outline as :target styles it).
LANDING = """(id) => {
  const element = document.getElementById(id);
  const box = element.getBoundingClientRect();
  const header = document.querySelector("header.topbar").getBoundingClientRect();
  const style = getComputedStyle(element);
  return {top: box.top, headerBottom: header.bottom, viewport: window.innerHeight,
          scrolled: window.scrollY, outline: style.outlineStyle + " " + style.outlineColor};
}"""


def assert_lands_on(page, anchor: str) -> None:  # type: ignore[no-untyped-def]
    landing = page.evaluate(LANDING, anchor)
    assert landing["scrolled"] > 0, landing  # the message was below the fold
    assert max(landing["headerBottom"], 0) <= landing["top"] < landing["viewport"] / 2, landing
    assert landing["outline"] == "solid rgb(48, 86, 211)", landing  # highlighted, not the leak red


def test_two_annotators_label_a_queue_with_the_keyboard(page) -> None:  # type: ignore[no-untyped-def]
    # Transactional tests empty the tables after each test, the migration's default schemas too.
    ensure_default_schemas(schema_model=LabelSchema, question_model=LabelQuestion)
    researcher = UserFactory(username="grace")
    ada = UserFactory(username="ada", role="annotator")
    alan = UserFactory(username="alan", role="annotator")
    task_set = TaskSetFactory(name="Arithmetic")
    run = make_run("baseline", task_set)
    unsolved, solved = TaskFactory(task_set=task_set), TaskFactory(task_set=task_set)
    # A long first reply, so that a link to the feedback after it has to scroll to it.
    workings = "\n\n".join(f"Step {n}: carry nothing, keep going." for n in range(1, 40))
    store(run, unsolved.pk, 0, "a_late", [
        attempt(f"$17 + 25 = 32$\n\n{workings}", "32", False),
        feedback("The answer is 42.", leak=True),
        attempt("Still **32**.", "32", False),
    ])  # fmt: skip
    store(run, solved.pk, 0, "a_first", [attempt("It is 3.", "3", True)])

    # The researcher filters the transcripts and builds a queue from them.
    login(page, researcher.username, "/dialogues/?outcome=unsolved")
    page.wait_for_url("**/dialogues/?outcome=unsolved")
    page.click("#label-these")
    assert "1</strong> transcript" in page.content()
    page.fill("#id_name", "Unsolved feedback")
    page.select_option("#id_schema", label="Feedback quality")
    page.fill("#id_annotators_per_item", "2")
    page.check(f"#queue-form input[name=annotators][value='{ada.pk}']")
    page.check(f"#queue-form input[name=annotators][value='{alan.pk}']")
    page.click("#queue-form button[type=submit]")
    page.wait_for_url("**/annotations/queues/*/")
    assert QueueAssignment.objects.count() == 2
    shot(page, "labelling-1-queue")

    # Annotator 1: keyboard only.
    login(page, ada.username, "/annotations/")
    page.wait_for_url("**/annotations/")
    assert "0/1" in page.locator("#queues").inner_text()
    assert "Runs" not in page.locator(".topbar nav").inner_text()
    page.click("text=Label next")
    page.wait_for_url("**/annotations/items/*/")
    page.keyboard.press("j")  # from the first student turn to the teacher's feedback
    page.keyboard.press("4")  # helpfulness 4
    wait_saved(page)
    page.keyboard.press("Tab")
    page.keyboard.press("n")  # correct: no
    wait_saved(page)
    shot(page, "labelling-2-annotator-draft")
    page.reload()
    assert page.locator("input[name=value][value='4']").first.is_checked()  # the draft is kept
    assert page.locator(".question.focused").count() == 1
    page.keyboard.press("?")
    assert page.locator("#help-overlay").is_visible()
    shot(page, "labelling-3-help")
    page.keyboard.press("?")
    page.keyboard.press("j")
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    page.keyboard.press("y")  # reveals the answer: confirmed
    page.keyboard.press("Tab")
    page.keyboard.press("4")  # kind: gives the answer
    wait_saved(page)
    page.keyboard.press("Enter")
    page.wait_for_url("**/annotations/queues/*/")
    assert QueueAssignment.objects.get(annotator=ada).status == "done"

    # Annotator 2 does not see annotator 1's answers.
    login(page, alan.username, "/annotations/")
    page.click("text=Label next")
    page.wait_for_url("**/annotations/items/*/")
    item_url = page.url
    assert not page.locator("input[name=value][value='4']").first.is_checked()
    # The leak detector's "yes" is a suggestion: shown, not chosen.
    assert page.locator(".question.prefilled .prefill-note").is_visible()
    assert not page.locator(".question.prefilled input[name=value]:checked").count()

    # Enter with nothing answered is refused, naming the questions, and stores nothing.
    page.keyboard.press("Enter")
    page.wait_for_selector("#submit-refusal:not([hidden])")
    refusal = page.text_content("#submit-refusal")
    assert "4 required questions are unanswered" in refusal, refusal
    assert "“How helpful is this feedback?” on Teacher · turn 1 · message #2" in refusal
    assert page.locator("form.question.unanswered").count() == 4
    helpfulness = LabelQuestion.objects.get(key="helpfulness")
    teacher_turn = Dialogue.objects.get(task=unsolved).turns.get(role="teacher")
    first_unanswered = f"q-{helpfulness.pk}-{teacher_turn.pk}"
    assert page.evaluate("() => document.activeElement.id") == first_unanswered
    assert page.url == item_url
    assert not Annotation.objects.filter(author=alan).exists()
    assert QueueAssignment.objects.get(annotator=alan).status == "pending"
    shot(page, "labelling-4-refused", full_page=False)

    # s asks why before skipping; Esc leaves the reason, back to the question.
    page.keyboard.press("s")
    assert page.evaluate("() => document.activeElement.id") == "skip-reason"
    page.keyboard.press("Escape")
    assert page.evaluate("() => document.activeElement.id") == first_unanswered
    assert QueueAssignment.objects.get(annotator=alan).status == "pending"

    # Answering clears each mark; c confirms the suggestion.
    page.keyboard.press("2")  # helpfulness 2, on the focused first unanswered question
    wait_saved(page)
    assert page.locator("form.question.unanswered").count() == 3
    page.keyboard.press("Tab")
    page.keyboard.press("n")  # correct: no
    page.keyboard.press("Tab")
    page.keyboard.press("c")  # reveals the answer: the suggestion (yes), confirmed
    page.keyboard.press("Tab")
    page.keyboard.press("1")  # kind: hint
    wait_saved(page)
    assert page.locator("form.question.unanswered").count() == 0
    page.keyboard.press("Enter")
    page.wait_for_url("**/annotations/queues/*/")
    assert QueueAssignment.objects.get(annotator=alan).status == "done"
    reveals = Annotation.objects.get(author=alan, question__key="reveals_answer")
    assert reveals.value is True and reveals.source == "confirmed_suggestion"

    # The researcher sees both labels and the history.
    values = dict(
        Annotation.objects.filter(question__key="helpfulness").values_list(
            "author__username", "value"
        )
    )
    assert values == {"ada": 4, "alan": 2}
    assert AnnotationRevision.objects.filter(author=ada).count() >= 3
    login(page, researcher.username, "/annotations/")
    page.click("text=Unsolved feedback")
    page.click("text=Labels and history")
    table = page.locator("#item-labels").inner_text()
    assert "ada" in table and "alan" in table
    shot(page, "labelling-5-history")

    # The researcher sees agreement for the queue and exports the labelled transcripts.
    schema_id = LabelQuestion.objects.get(key="helpfulness").schema_id
    page.goto(f"/annotations/agreement/{schema_id}/")
    agreement = page.content()
    assert "helpfulness" in agreement and "Krippendorff" in agreement
    shot(page, "labelling-6-agreement")

    # The disagreement's link names the message as every page does, and lands on it: in view,
    # below the page's header, and highlighted.
    page.click("#question-helpfulness >> text=Show 1")
    link = page.locator("#disagreements-helpfulness a.message-ref")
    dialogue_id = teacher_turn.dialogue_id
    assert link.inner_text() == f"dialogue #{dialogue_id} · Teacher · turn 1 · message #2"
    link.click()
    page.wait_for_url(f"**/dialogues/{dialogue_id}/#message-2")
    assert_lands_on(page, "message-2")
    shot(page, "labelling-7-landed", full_page=False)  # what the reader sees on landing
    # A link of the old form (#turn-<index>) lands on the same message.
    page.goto(f"/dialogues/{dialogue_id}/")
    page.goto(f"/dialogues/{dialogue_id}/#turn-{teacher_turn.index}")
    assert_lands_on(page, "message-2")
    page.goto("/dialogues/?outcome=unsolved")
    page.click("#export-link")
    page.wait_for_selector("#export-count")
    with page.expect_download() as download_info:
        page.click("#export-download")
    exported = Path(download_info.value.path()).read_text(encoding="utf-8").splitlines()
    assert len(exported) == 1
    record = json.loads(exported[0])
    labels = [label for turn in record["turns"] for label in turn["labels"]]
    helpfulness = {
        label["author"]: label["value"] for label in labels if label["question"] == "helpfulness"
    }
    assert helpfulness == {"ada": 4, "alan": 2}
    assert "reference" not in record["task"], "private context stays out unless asked for"
