"""What a newcomer tripped over on the second walk (issue 33), checked in headless Chromium at
1400 and 1024 px wide: the online training page's charts (rates from 0 to 100%, axes and a note
in every panel before the first step); labelling free-text questions by keyboard, with the
item's toolbar in view; the transcript filters as one types, and a queue's filter in words; the
navigation on one row and the home page's runs inside their card; a task set's tasks table and
the runs table at full width; the run page opening on its status; a refused model opening at
its errors; the comparison's baseline named in full."""

from __future__ import annotations

import re
from typing import Any

import pytest

from models_gpu.generators.registry import generate
from models_gpu.spec.reports import Curve
from tests.config_builders import StoredKind, stored_training_run
from tests.e2e.test_newcomer_layout_browser import (
    WIDTHS,
    assert_inside,
    assert_no_horizontal_scroll,
    at_width,
    login,
    shot,
)
from tests.factories import (
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
from webapp.models_registry.house import HOUSE_MODEL_NAME
from webapp.models_registry.models import ModelSpec
from webapp.runs.models import MetricPoint, Run
from webapp.training.charts import ONLINE_PANELS, SHARES

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def y_ticks(page, panel: int) -> list[str]:  # type: ignore[no-untyped-def]
    """The tick labels Plotly drew on panel ``panel``'s y axis (0-based)."""
    axis = "y" if panel == 0 else f"y{panel + 1}"
    return page.locator(f"#training-chart g.{axis}tick text").all_text_contents()


def open_chart(page, path: str, width: int) -> None:  # type: ignore[no-untyped-def]
    at_width(page, width)
    page.goto(path)
    page.wait_for_selector("#training-chart[data-drawn=true] .main-svg")


def test_the_online_training_charts_have_axes_from_the_start_and_rates_in_percent(page) -> None:  # type: ignore[no-untyped-def]
    researcher = UserFactory(username="grace")
    run = stored_training_run(StoredKind(4, online=True)).run
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING, progress_total=12)
    path = f"/training/runs/{run.pk}/"
    login(page, researcher.username, path)
    shares = [i for i, (_, names) in enumerate(ONLINE_PANELS) if SHARES & set(names)]
    for width in WIDTHS:
        open_chart(page, path, width)
        notes = page.locator("#training-chart .annotation-text").all_text_contents()
        assert notes.count("no training steps logged yet") == len(ONLINE_PANELS)
        for panel in range(len(ONLINE_PANELS)):
            assert y_ticks(page, panel), f"panel {panel} has no axis before the first step"
        for panel in shares:
            assert y_ticks(page, panel)[0] == "0%" and y_ticks(page, panel)[-1] == "100%"
        shot(page, f"second-walk-online-empty-{width}")

    # Three steps in, one held-out evaluation (2 of 5 solved by turn 1): no rate is negative
    # or past 100% (a question rate of 0 throughout once drew an axis from -100% to 100%).
    for step in (1, 2, 3):
        for name, value in (
            (Curve.REWARD, 0.2 * step),
            (Curve.QUESTION_RATE, 0.0),
            (Curve.ROLLOUT_ACCURACY_AFTER_TURN_.at(1), 0.25),
            (Curve.ZERO_VARIANCE_GROUPS, 1.0),
            (Curve.LOSS, 0.01),
            (Curve.SOLVED, 0.25),
        ):
            MetricPoint.objects.create(run=run, name=name, step=step, value=value)
    MetricPoint.objects.create(run=run, name=Curve.HELDOUT_DIALOGUES, step=2, value=5)
    MetricPoint.objects.create(run=run, name=Curve.HELDOUT_SOLVED_BY_TURN_.at(1), step=2, value=2)
    for width in WIDTHS:
        open_chart(page, path, width)
        for panel in shares:
            ticks = y_ticks(page, panel)
            assert ticks[0] == "0%" and ticks[-1] == "100%", ticks
            assert all(re.fullmatch(r"\d+%", tick) for tick in ticks), ticks
        assert "no held-out evaluation yet" not in page.locator("#training-chart").text_content()
        assert page.locator("#training-chart g.errorbar path").count(), "the held-out interval"
        assert page.text_content("#latest-solved") == "solved 25%"
        shot(page, f"second-walk-online-steps-{width}")


def visible_in_viewport(page, selector: str) -> bool:  # type: ignore[no-untyped-def]
    box = page.locator(selector).bounding_box()
    height = page.viewport_size["height"]
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= height


def test_free_text_labelling_by_keyboard_and_the_toolbar_in_view(page) -> None:  # type: ignore[no-untyped-def]
    """On arrival the keys are shortcuts (the question is focused, not its box), Tab enters
    every text box in turn, the first included; the Submit/progress toolbar stays on screen."""
    researcher, ada = UserFactory(username="grace"), UserFactory(username="ada", role="annotator")
    schema = LabelSchema.objects.create(name="Notes")
    for position, (key, kind) in enumerate(
        [("what_went_wrong", "free_text"), ("note", "free_text"), ("used_feedback", "yes_no")]
    ):
        LabelQuestion.objects.create(
            schema=schema, key=key, text=key.replace("_", " "), kind=kind,
            target=LabelQuestion.Target.STUDENT_TURN, position=position,
        )  # fmt: skip
    task_set = TaskSetFactory()
    run = frozen_run(task_set=task_set)
    workings = "\n\n".join(f"Step {n}: carry nothing, keep going." for n in range(1, 40))
    task = TaskFactory(task_set=task_set, prompt=f"What is 17 + 25?\n\n{workings}")
    store(run, task.pk, 0, "a_late", [
        attempt(f"It is 32.\n\n{workings}", "32", False), feedback("Check the carry."),
        attempt("It is 42.", "42", True),
    ])  # fmt: skip
    queue = annotation_services.queue_create(
        name="Notes", schema=schema, filter_query="",
        dialogue_ids=list(Dialogue.objects.values_list("pk", flat=True)), annotators=[ada],
        annotators_per_item=1, created_by=researcher,
    )  # fmt: skip
    item = QueueAssignment.objects.get(queue=queue)
    saves: list[str] = []

    def count_save(request) -> None:  # type: ignore[no-untyped-def]
        if "/answer/" in request.url:
            saves.append(request.url)

    for width in WIDTHS:
        at_width(page, width)
        login(page, ada.username, f"/annotations/items/{item.pk}/")
        page.wait_for_selector(".question.focused")
        assert page.evaluate("window.scrollY") > 0, "the page scrolled to the first turn"
        for toolbar in ("#submit-form button", "#item-progress", "#skip-form button"):
            assert visible_in_viewport(page, toolbar), f"{toolbar} scrolled off-screen"
        # The first question is in view below the toolbar, not hidden by it nor above it.
        head = page.locator(".labelling-head").bounding_box()
        question = page.locator(".question.focused").bounding_box()
        assert head and question and question["y"] >= head["y"] + head["height"]
        assert visible_in_viewport(page, ".question.focused")
        shot(page, f"second-walk-labelling-arrival-{width}", full_page=False)
        page.keyboard.press("?")  # a shortcut works on arrival
        assert page.locator("#help-overlay").is_visible()
        page.keyboard.press("?")
        active = "() => document.activeElement.closest('form.question')?.dataset.question"
        boxes = page.locator("form.question textarea")
        page.keyboard.press("Tab")  # into the first text box, not past it
        assert page.evaluate("() => document.activeElement.tagName") == "TEXTAREA"
        assert page.evaluate(active) == boxes.nth(0).evaluate("e => e.form.dataset.question")
        page.keyboard.press("Control+A")  # the draft the first width left
        # A pause in typing saves; leaving the box then sends nothing more (it sent it again).
        with page.expect_response(lambda response: "/answer/" in response.url):
            page.keyboard.type(f"too vague {width}")
        saves.clear()
        page.on("request", count_save)
        page.keyboard.press("Tab")  # the second box
        page.wait_for_timeout(300)
        page.remove_listener("request", count_save)
        assert not saves, saves
        assert page.evaluate(active) == boxes.nth(1).evaluate("e => e.form.dataset.question")
        page.keyboard.press("Control+A")
        page.keyboard.type(f"a note {width}")
        page.keyboard.press("Tab")  # the yes/no question
        page.keyboard.press("y")
        page.wait_for_function(
            "() => document.getElementById('save-status').dataset.state === 'saved'"
        )
        for selector in ("#submit-form button", "#item-progress"):
            assert visible_in_viewport(page, selector), f"{selector} scrolled off-screen"
        shot(page, f"second-walk-labelling-typed-{width}", full_page=False)
        answers = {a.question.key: a.value for a in Annotation.objects.filter(author=ada)}
        typed = {"what_went_wrong": f"too vague {width}", "note": f"a note {width}"}
        assert answers == {**typed, "used_feedback": True}, answers


def test_the_transcript_filters_update_as_one_types_and_a_queue_shows_its_filter(page) -> None:  # type: ignore[no-untyped-def]
    """The label, agreement and turns boxes update the list while the cursor is still in them
    (they waited for the box to be left); an unknown question key gets its note."""
    ensure_default_schemas(schema_model=LabelSchema, question_model=LabelQuestion)
    researcher, ada = UserFactory(username="grace"), UserFactory(username="ada", role="annotator")
    task_set = TaskSetFactory()
    run = frozen_run(task_set=task_set, name="baseline")
    task = TaskFactory(task_set=task_set)
    store(run, task.pk, 0, "a_first", [attempt("It is 3.", "3", True)])
    store(run, task.pk, 1, "a_late", [
        attempt("It is 4.", "4", False), feedback("Check the carry."),
        attempt("It is 3.", "3", True),
    ])  # fmt: skip
    login(page, researcher.username, "/dialogues/")
    count = "#dialogue-rows .result-count"
    for width in WIDTHS:
        at_width(page, width)
        page.goto("/dialogues/")
        assert page.text_content(count).startswith("2 transcripts")
        page.click("#id_turns")
        page.keyboard.type("2")  # the cursor stays in the box
        page.wait_for_function(
            f"() => document.querySelector('{count}').textContent.includes('1 transcript matches')"
        )
        assert page.evaluate("() => document.activeElement.id") == "id_turns"
        page.keyboard.press("Backspace")
        page.click("#id_agree")
        page.keyboard.type("helpfulnes")
        page.wait_for_selector("#filter-notes")
        assert "Ignored agree='helpfulnes'" in page.text_content("#filter-notes")
        assert page.text_content(count).startswith("2 transcripts")
        assert page.evaluate("() => document.activeElement.id") == "id_agree"
        shot(page, f"second-walk-transcript-filters-{width}")

    queue = annotation_services.queue_create(
        name="Late solves", schema=LabelSchema.objects.get(name="Feedback quality"),
        filter_query=f"run={run.pk}&turns=2%2B", annotators=[ada], annotators_per_item=1,
        dialogue_ids=list(Dialogue.objects.values_list("pk", flat=True)), created_by=researcher,
    )  # fmt: skip
    page.goto(f"/annotations/queues/{queue.pk}/")
    chips = page.locator("#queue-filter .chip").all_inner_texts()
    assert chips == [f"Run: #{run.pk} baseline", "Turns: 2+"]
    for width in WIDTHS:
        at_width(page, width)
        assert_inside(page, "#queue-filter .chip", "main")
        shot(page, f"second-walk-queue-filter-{width}")


def layout_world() -> dict[str, Any]:
    """What the walk had: a generated maze set of 20 tasks, a scripted student with a long
    name, and finished runs with figures."""
    student = StudentFactory(name="scripted arithmetic student")
    mazes = TaskSetFactory(name="Mazes 6x6")
    for index, generated in enumerate(generate("maze", 20, seed=0)):
        TaskFactory(
            task_set=mazes, position=index, prompt=generated["prompt"],
            reference=generated["reference"], verifier_kind=generated["verifier_kind"],
            domain=generated["domain"], external_id=f"maze-seed0-{index:04d}",
        )  # fmt: skip
    arithmetic = TaskSetFactory(name="Arithmetic, two digits")
    tasks = [TaskFactory(task_set=arithmetic) for _ in range(3)]
    protocol = ProtocolFactory(name="Didactic, 5 turns", max_turns=5)
    runs = []
    for seed in range(3):
        run = frozen_run(
            name=f"Demo: feedback vs one turn, didactic seed {seed}", task_set=arithmetic,
            student=student, protocol=protocol, seed=seed, status=Run.Status.SUCCEEDED,
            progress_done=3, progress_total=3,
        )  # fmt: skip
        for task in tasks:
            store(run, task.pk, 0, "a_late", [
                attempt("It is 4.", "4", False), feedback("Check the carry."),
                attempt("It is 3.", "3", True),
            ])  # fmt: skip
        runs.append(run)
    return {"student": student, "mazes": mazes, "runs": runs}


def bounding_box(locator) -> dict[str, float]:  # type: ignore[no-untyped-def]
    box = locator.bounding_box()
    assert box is not None, f"{locator} is not displayed"
    return box  # type: ignore[no-any-return]


def assert_one_line(page, selector: str) -> None:  # type: ignore[no-untyped-def]
    """Every element ``selector`` matches sits on one line (a wrapped inline element has a
    box per line)."""
    elements = page.locator(selector)
    assert elements.count(), f"nothing matches {selector}"
    for index in range(elements.count()):
        lines = elements.nth(index).evaluate("e => e.getClientRects().length")
        text = elements.nth(index).inner_text()
        assert lines == 1, f"{selector} #{index} ({text!r}) wraps onto {lines} lines"


def test_the_home_page_and_the_navigation_fit_at_both_widths(page) -> None:  # type: ignore[no-untyped-def]
    researcher = UserFactory(username="grace")
    world = layout_world()
    house = ModelSpec.objects.create(name=HOUSE_MODEL_NAME, backend="transformers", location="/h")
    evaluation = frozen_run(
        name="Demo: house model, didactic 5 turns", student=house, status=Run.Status.SUCCEEDED,
        task_set=world["runs"][0].task_set,
    )  # fmt: skip
    for index, task in enumerate(world["runs"][0].task_set.tasks.all()):
        store(evaluation, task.pk, 0, "a_first", [attempt("3", "3", index == 0)])
    login(page, researcher.username, "/")
    assert "solved" in page.text_content("#house-model")
    for width in WIDTHS:
        at_width(page, width)
        assert_one_line(page, ".topbar nav a")
        assert_one_line(page, ".whoami > span, .whoami button")
        tops = {round(box["y"]) for box in map(bounding_box, page.locator(".topbar nav a").all())}
        assert len(tops) == 1, f"the navigation wraps onto {len(tops)} rows"
        recent = "section.card:has(h2:text('Recent runs'))"
        assert_inside(page, f"{recent} th, {recent} td", recent)
        assert_no_horizontal_scroll(page, recent)
        assert_inside(page, "#house-model p", "#house-model")
        shot(page, f"second-walk-home-{width}")


def test_the_task_set_page_and_the_runs_table_fit_at_both_widths(page) -> None:  # type: ignore[no-untyped-def]
    researcher = UserFactory(username="grace")
    world = layout_world()
    login(page, researcher.username, f"/task-sets/{world['mazes'].pk}/")
    for width in WIDTHS:
        at_width(page, width)
        card = "section.card:has(#task-table)"
        assert_inside(page, "#task-table th, #task-table td", card)
        assert_no_horizontal_scroll(page, card)
        prompt = bounding_box(page.locator("#task-table tbody tr td:nth-child(2)").first)
        assert prompt["width"] >= 250, f"the prompt column is {prompt['width']:.0f} px wide"
        assert page.locator("#task-table").bounding_box()["height"] < 20 * 200  # type: ignore[index]
        shot(page, f"second-walk-task-set-{width}")
    page.goto("/runs/")
    for width in WIDTHS:
        at_width(page, width)
        shot(page, f"second-walk-runs-{width}")
        assert_inside(page, "#run-table th, #run-table td", "main")
        assert_no_horizontal_scroll(page, ".wide-table")


def test_the_run_page_opens_on_its_status_progress_and_cancel(page) -> None:  # type: ignore[no-untyped-def]
    researcher = UserFactory(username="grace")
    run = layout_world()["runs"][0]
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING, progress_done=1)
    login(page, researcher.username, f"/runs/{run.pk}/")
    for width in WIDTHS:
        at_width(page, width)
        page.evaluate("window.scrollTo(0, 0)")
        for selector in ("#run-status", "#run-status-bar progress", "#cancel-run"):
            assert visible_in_viewport(page, selector), f"{selector} is not on the first screen"
            assert bounding_box(page.locator(selector))["y"] < 300
        chart = bounding_box(page.locator("#accuracy-chart"))
        assert bounding_box(page.locator("#cancel-run"))["y"] < chart["y"]
        shot(page, f"second-walk-run-{width}")
    # Each poll updates the bar at the top (out of band).
    Run.objects.filter(pk=run.pk).update(progress_done=2)
    page.wait_for_selector("#run-progress:has-text('2 / 3')")
    Run.objects.filter(pk=run.pk).update(status=Run.Status.SUCCEEDED, progress_done=3)
    page.wait_for_selector("#run-status:has-text('Succeeded')")
    assert page.locator("#cancel-run").count() == 0


def test_a_refused_model_opens_at_its_errors_and_parameters_wrap_between_words(page) -> None:  # type: ignore[no-untyped-def]
    researcher = UserFactory(username="grace")
    layout_world()
    for index in range(8):  # a long registry above the form, as the walk's
        ModelSpec.objects.create(
            name=f"house-base-{index} · offline SML", backend="transformers",
            location=f"/mnt/checkpoints/house/sml-{index}/checkpoint-1200",
            generation_params={"max_new_tokens": 256, "temperature": 0.7, "top_p": 0.95,
                               "repetition_penalty": 1.05, "device": "cuda:0",
                               "dtype": "bfloat16"},
            description="The house model, trained on solved arithmetic dialogues by offline SML.",
        )  # fmt: skip
    login(page, researcher.username, "/models/")
    for width in WIDTHS:
        at_width(page, width)
        page.goto("/models/")
        assert_one_line(page, "#model-table .param code")
        words = page.locator("#model-table .param").all()
        for param in words:  # "max_new_tokens 256" wraps, if at all, at its space
            lines = param.evaluate(
                "e => { const r = document.createRange(); r.selectNodeContents(e);"
                " return new Set(Array.from(r.getClientRects()).map(b => Math.round(b.top))).size }"
            )
            assert lines <= 2, param.inner_text()
        shot(page, f"second-walk-models-{width}")
        page.fill("#id_name", f"no such policy {width}")
        page.select_option("#id_backend", "scripted")
        page.fill("#id_location", "no-such-policy")
        page.click("#model-form button[type=submit]")
        page.wait_for_selector("#add-model-refused")
        assert page.url.endswith("/models/#add-model")
        errors = page.locator("#model-form .errorlist").first
        assert visible_in_viewport(page, "#model-form .errorlist"), "the error is off-screen"
        assert "no-such-policy" in errors.inner_text() or errors.inner_text()
        shot(page, f"second-walk-models-refused-{width}", full_page=False)
    assert not ModelSpec.objects.filter(name__startswith="no such policy").exists()


TEXT_WIDTH = """e => {
  const context = document.createElement("canvas").getContext("2d");
  context.font = getComputedStyle(e).font;
  return context.measureText(e.options[e.selectedIndex].text).width;
}"""


def test_the_comparison_names_its_baseline_in_full(page) -> None:  # type: ignore[no-untyped-def]
    researcher = UserFactory(username="grace")
    runs = layout_world()["runs"]
    baseline = frozen_run(
        name="Demo: single turn", task_set=runs[0].task_set, student=runs[0].student,
        protocol=ProtocolFactory(name="Single turn", mode="single_turn", max_turns=1),
        status=Run.Status.SUCCEEDED,
    )  # fmt: skip
    query = "&".join(f"runs={run.pk}" for run in [*runs, baseline])
    login(page, researcher.username, f"/experiments/compare/?{query}&seeds=1")
    options = page.locator("#baseline option").all_inner_texts()
    assert "scripted arithmetic student · Didactic, 5 turns (3 seeds)" in options
    page.select_option("#baseline", label=options[0])
    for width in WIDTHS:
        at_width(page, width)
        select = page.locator("#baseline")
        text = select.evaluate(TEXT_WIDTH)
        assert bounding_box(select)["width"] >= text + 20, "the chosen line's name is cut"
        assert_inside(page, "#baseline", "#compare-controls")
        shot(page, f"second-walk-compare-{width}")
