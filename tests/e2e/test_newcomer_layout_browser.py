"""What a newcomer tripped over, checked in headless Chromium at 1400 and 1024 px wide: every
column of the models table inside its card, the protocol form showing the fields of the mode
chosen, the agreement filters inside their card, pass@k at K = 40 as a curve inside its card,
distinct labelling keys for "no" and "next item", and a styled 403 page with navigation."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.factories import (
    PASSWORD,
    ProtocolFactory,
    StudentFactory,
    TaskFactory,
    TaskSetFactory,
    UserFactory,
    frozen_run,
)
from tests.transcript_builders import attempt, feedback, store
from webapp.annotations import services as annotation_services
from webapp.annotations.defaults import ensure_default_schemas
from webapp.annotations.models import Annotation, LabelQuestion, LabelSchema, QueueAssignment
from webapp.dialogues.models import Dialogue
from webapp.models_registry.models import ModelSpec
from webapp.runs.models import Protocol, Run
from webapp.runs.services import evaluation_config

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = Path(os.environ.get("DIALAB_SCREENSHOTS", "test-artifacts/screenshots"))
WIDTHS = (1400, 1024)


def shot(page, name: str, full_page: bool = True) -> None:  # type: ignore[no-untyped-def]
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=full_page)


def login(page, username: str, path: str) -> None:  # type: ignore[no-untyped-def]
    page.context.clear_cookies()
    page.goto(path)
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"**{path}")


def at_width(page, width: int) -> None:  # type: ignore[no-untyped-def]
    page.set_viewport_size({"width": width, "height": 900})


def assert_inside(page, inner: str, outer: str) -> None:  # type: ignore[no-untyped-def]
    """Every element ``inner`` matches is visible and lies within the element ``outer``
    horizontally (a column pushed past a card's edge is hidden by its overflow)."""
    card = page.locator(outer).bounding_box()
    assert card is not None, f"{outer} is not displayed"
    elements = page.locator(inner)
    assert elements.count(), f"nothing matches {inner}"
    for index in range(elements.count()):
        box = elements.nth(index).bounding_box()
        assert box is not None and box["width"] > 0, f"{inner} #{index} is not displayed"
        assert card["x"] - 0.5 <= box["x"], f"{inner} #{index} starts left of {outer}"
        right, card_right = box["x"] + box["width"], card["x"] + card["width"]
        assert right <= card_right + 0.5, (
            f"{inner} #{index} ends at {right:.0f}px, past {outer}'s edge at {card_right:.0f}px"
        )


def assert_no_horizontal_scroll(page, selector: str) -> None:  # type: ignore[no-untyped-def]
    overflow = page.locator(selector).evaluate("el => el.scrollWidth - el.clientWidth")
    assert overflow <= 1, f"{selector} scrolls sideways by {overflow}px"


def test_the_models_table_shows_every_column_inside_its_card(page) -> None:  # type: ignore[no-untyped-def]
    researcher = UserFactory(username="grace")
    base = ModelSpec.objects.create(
        name="house-base-2026", backend="transformers",
        location="/mnt/checkpoints/house/base-2026-11-25/checkpoint-final",
        generation_params={"max_new_tokens": 256, "temperature": 0.7, "top_p": 0.95,
                           "device": "cuda:0", "dtype": "bfloat16"},
        description="The house model, pre-trained on arithmetic dialogues.",
    )  # fmt: skip
    training = frozen_run(name="offline SML on solved arithmetic dialogues", student=base)
    ModelSpec.objects.create(
        name="house-base-2026 · offline SML", backend="transformers",
        location="/mnt/checkpoints/house/sml-2026-11-25/checkpoint-1200",
        generation_params={"max_new_tokens": 256, "temperature": 0.7},
        base_model=base, trained_by_run=training,
    )  # fmt: skip
    ModelSpec.objects.create(
        name="hosted teacher", backend="openai", location="https://inference.example.org/v1",
        generation_params={"model": "teacher-70b", "api_key_env": "DIALAB_MODEL_KEY_TEACHER"},
    )  # fmt: skip
    login(page, researcher.username, "/models/")
    text = page.locator("#model-table").inner_text()
    assert "max_new_tokens 256" in text and "{'" not in text
    for width in WIDTHS:
        at_width(page, width)
        assert_inside(page, "#model-table th", "section.card:has(#model-table)")
        assert_inside(page, "#model-table td", "section.card:has(#model-table)")
        assert_inside(page, "#model-table .row-actions button", "section.card:has(#model-table)")
        assert_no_horizontal_scroll(page, "section.card:has(#model-table)")
        shot(page, f"newcomer-models-{width}")

    # Retire the hosted teacher: it leaves the list, and "show retired" brings it back.
    hosted = ModelSpec.objects.get(name="hosted teacher")
    page.click(f"#model-{hosted.pk} .row-actions button")
    page.wait_for_selector("#retired-toggle")
    assert page.locator(f"#model-{hosted.pk}").count() == 0
    page.click("#retired-toggle")
    page.wait_for_selector(f"#model-{hosted.pk}.retired")
    # Edit the base model: the form says what happens to the runs that used it.
    page.goto(f"/models/{base.pk}/edit/")
    assert "keep what they were launched with" in page.locator("#frozen-note").inner_text()
    for width in WIDTHS:
        at_width(page, width)
        assert_inside(page, "#model-form input:visible, #model-form textarea", "section.card")
        shot(page, f"newcomer-model-edit-{width}")


def visible_settings(page) -> set[str]:  # type: ignore[no-untyped-def]
    paragraphs = page.locator("#protocol-form [id^=setting-]")
    return {
        paragraphs.nth(i).get_attribute("id").removeprefix("setting-")  # type: ignore[union-attr]
        for i in range(paragraphs.count())
        if paragraphs.nth(i).is_visible()
    }


def test_the_protocol_form_shows_the_fields_of_the_mode_chosen(page) -> None:  # type: ignore[no-untyped-def]
    researcher = UserFactory(username="grace")
    ProtocolFactory(name="Didactic, 5 turns, the teacher sees the reference and the verifier")
    login(page, researcher.username, "/runs/protocols/")
    page.click("#prompt-templates summary")
    always = {"name", "mode", "template_student_system"}
    expected = {
        "didactic": always | {
            "max_turns", "teacher_sees_reference", "teacher_sees_verifier_details",
            "regenerate_leaks", "judge_turn_kinds", "judge_leaks", "template_teacher_system",
            "template_judge_turn_kind", "template_judge_leak",
        },
        "sharded": always | {
            "max_turns", "judge_turn_kinds", "template_user_simulator_system",
            "template_judge_turn_kind",
        },
        "self_correction": always | {
            "max_turns", "self_correction", "judge_turn_kinds", "template_nudge",
            "template_self_critique", "template_judge_turn_kind",
        },
        "single_turn": always,
    }  # fmt: skip
    for width in WIDTHS:
        at_width(page, width)
        for mode, fields in expected.items():
            page.select_option("#id_mode", mode)
            assert visible_settings(page) == fields, mode
            assert_inside(
                page, "#protocol-form textarea:visible", "section.card:has(#protocol-form)"
            )
            shot(page, f"newcomer-protocol-{mode}-{width}")
        assert_inside(page, "#protocol-table th", "section.card:has(#protocol-table)")
        assert_no_horizontal_scroll(page, "section.card:has(#protocol-table)")

    # A single-turn protocol saved from the form: the hidden turn count does not get in the way.
    page.fill("#id_name", "Single turn")
    page.click("#protocol-form button[type=submit]")
    page.wait_for_selector("text=Single turn")
    assert Protocol.objects.get(name="Single turn").max_turns == 1


def test_the_agreement_filters_fit_their_card(page) -> None:  # type: ignore[no-untyped-def]
    # Long run and queue names, as real ones are: they widen the selects the filters hold.
    ensure_default_schemas(schema_model=LabelSchema, question_model=LabelQuestion)
    researcher = UserFactory(username="grace")
    schema = LabelSchema.objects.get(name="Feedback quality")
    correct = schema.questions.get(key="correct")
    for name in (
        "Didactic evaluation of the house model on arithmetic, 10 turns, seed 0",
        "Self-correction baseline of the house model, critique style, 10 turns",
    ):
        task_set = TaskSetFactory()
        run = frozen_run(name=name, task_set=task_set)
        store(run, TaskFactory(task_set=task_set).pk, 0, "a_late", [
            attempt("It is 4.", "4", False), feedback("Check the carry."),
            attempt("It is 3.", "3", True),
        ])  # fmt: skip
        dialogue = run.dialogues.get()
        annotation_services.queue_create(
            name=f"Second pass over {name}", schema=schema, filter_query="",
            dialogue_ids=[dialogue.pk], annotators=[researcher], annotators_per_item=1,
            created_by=researcher,
        )  # fmt: skip
        Annotation.objects.create(
            question=correct, dialogue=dialogue, turn=dialogue.turns.get(role="teacher"),
            author=researcher, value=True, is_draft=False,
        )  # fmt: skip
    login(page, researcher.username, f"/annotations/agreement/{schema.pk}/")
    for width in WIDTHS:
        at_width(page, width)
        shot(page, f"newcomer-agreement-{width}")
        dialogue = page.locator("#agreement-filters input[name=dialogue]").bounding_box()
        assert dialogue is not None and dialogue["width"] >= 64, dialogue
        assert_inside(page, "#agreement-filters select, #agreement-filters input, "
                            "#agreement-filters button", "#agreement-filters")  # fmt: skip
        assert_inside(page, "#agreement-filters", "main")
    page.fill("#agreement-filters input[name=dialogue]", "12")
    page.click("#agreement-filters button[type=submit]")
    page.wait_for_url("**dialogue=12*")


def run_with_samples(samples_per_task: int) -> Run:
    """A run of two tasks with ``samples_per_task`` stored dialogues each, a few solved."""
    task_set = TaskSetFactory(name="Arithmetic")
    tasks = TaskFactory.create_batch(2, task_set=task_set)
    student, protocol = StudentFactory(), ProtocolFactory(max_turns=1)
    config = evaluation_config(
        task_set=task_set, protocol=protocol, student=student,
        samples_per_task=samples_per_task, check=False,
    )  # fmt: skip
    run = Run.objects.create(
        name=f"K={samples_per_task}", task_set=task_set, student=student, protocol=protocol,
        config=config.to_json(), config_hash=config.config_hash(), status=Run.Status.SUCCEEDED,
    )  # fmt: skip
    for task in tasks:
        for sample in range(samples_per_task):
            store(run, task.pk, sample, "a_first", [attempt("3", "3", sample % 9 == 0)])
    return run


def test_pass_at_k_for_forty_samples_is_a_curve_inside_its_card(page) -> None:  # type: ignore[no-untyped-def]
    researcher = UserFactory(username="grace")
    run = run_with_samples(40)
    login(page, researcher.username, f"/runs/{run.pk}/")
    page.wait_for_selector("#pass-at-k-chart[data-drawn=true]")
    assert page.locator("#pass-at-k-chart .scatterlayer .point").count() == 40
    page.click("#pass-at-k-numbers summary")
    for width in WIDTHS:
        at_width(page, width)
        page.wait_for_timeout(300)  # Plotly's responsive redraw after the resize
        assert_inside(page, "#pass-at-k-chart .main-svg", "#pass-at-k-card")
        assert_inside(page, "#pass-at-k td", "#run-live")
        assert_no_horizontal_scroll(page, "#run-live")
        shot(page, f"newcomer-pass-at-k-{width}")


def test_n_answers_no_and_only_the_brackets_change_item(page) -> None:  # type: ignore[no-untyped-def]
    ensure_default_schemas(schema_model=LabelSchema, question_model=LabelQuestion)
    researcher, ada = UserFactory(username="grace"), UserFactory(username="ada", role="annotator")
    task_set = TaskSetFactory()
    run = frozen_run(task_set=task_set)
    for _ in range(2):
        store(run, TaskFactory(task_set=task_set).pk, 0, "a_late", [
            attempt("It is 4.", "4", False), feedback("Check the carry."),
            attempt("It is 3.", "3", True),
        ])  # fmt: skip
    dialogue_ids = list(Dialogue.objects.order_by("pk").values_list("pk", flat=True))
    queue = annotation_services.queue_create(
        name="Feedback", schema=LabelSchema.objects.get(name="Feedback quality"),
        filter_query="", dialogue_ids=dialogue_ids, annotators=[ada], annotators_per_item=1,
        created_by=researcher,
    )  # fmt: skip
    first, second = QueueAssignment.objects.filter(queue=queue).order_by("position")
    login(page, ada.username, f"/annotations/items/{first.pk}/")
    page.keyboard.press("j")  # the teacher's turn: its first question (helpfulness) is focused
    assert page.locator(".question.focused").get_attribute("data-kind") == "rating"
    page.keyboard.press("n")  # was "next item" on a rating: now nothing
    page.wait_for_timeout(500)
    assert page.url.endswith(f"/annotations/items/{first.pk}/")
    page.keyboard.press("Tab")  # "correct": a yes/no question
    page.keyboard.press("n")
    page.wait_for_function("() => document.getElementById('save-status').dataset.state === 'saved'")
    assert Annotation.objects.get(author=ada, question__key="correct").value is False
    page.keyboard.press("?")
    keys = page.locator("#keys-items").inner_text()
    assert "]" in keys and "[" in keys and "n" not in keys.split("\t")[0]
    shot(page, "newcomer-labelling-keys")
    page.keyboard.press("?")
    page.keyboard.press("]")
    page.wait_for_url(f"**/annotations/items/{second.pk}/")
    page.keyboard.press("[")
    page.wait_for_url(f"**/annotations/items/{first.pk}/")

    # The researcher's label history says "no", as the labelling page did.
    login(
        page, researcher.username, f"/annotations/queues/{queue.pk}/dialogues/{first.dialogue_id}/"
    )
    history = page.locator("#item-labels").inner_text()
    assert "no" in history and "False" not in history
    shot(page, "newcomer-label-history")


def test_a_refused_page_keeps_the_navigation(page) -> None:  # type: ignore[no-untyped-def]
    annotator = UserFactory(username="ada", role="annotator")
    login(page, annotator.username, "/annotations/")
    response: Any = page.goto("/models/")
    assert response.status == 403
    assert page.locator(".topbar nav").get_by_text("My queues").is_visible()
    assert "Only researchers can do this." in page.locator("#error-reason").inner_text()
    for width in WIDTHS:
        at_width(page, width)
        assert_inside(page, "#error-page .button", "#error-page")
        shot(page, f"newcomer-403-{width}")
    page.click("#error-page >> text=My queues")
    page.wait_for_url("**/annotations/")
