"""The house model end to end in headless Chromium with a real worker: a researcher registers a
transformers checkpoint (the tiny untrained house model), creates a didactic protocol, launches a
run from the form where the house model is both student and teacher, watches the accuracy chart
drawn, and reads a transcript with its verdicts and the teacher's private context. Then a sharded
run (scripted sharded student and shard revealer) whose dialogues hold questions and shards."""

from __future__ import annotations

import json
import operator
import os
from pathlib import Path

import pytest

from models_gpu.backends.sharded_student import arithmetic_shards
from tests.factories import PASSWORD, TaskFactory, TaskSetFactory, UserFactory
from webapp.dialogues.models import Dialogue, Turn
from webapp.runs.models import Run

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = Path(os.environ.get("DIALAB_SCREENSHOTS", "test-artifacts/screenshots"))
ARITHMETIC = [("What is 12 + 30?", "42"), ("What is 7 * 8?", "56"), ("What is 100 - 37?", "63")]
SHARDED = [(47, "+", 38), (9, "*", 6), (50, "-", 18)]
OPERATIONS = {"+": operator.add, "-": operator.sub, "*": operator.mul}
SAMPLES = 2
MAX_TURNS = 3


def shot(page, name: str) -> None:  # type: ignore[no-untyped-def]
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"house-{name}.png"), full_page=True)


def task_sets() -> None:
    arithmetic = TaskSetFactory(name="Small arithmetic")
    for position, (prompt, answer) in enumerate(ARITHMETIC):
        TaskFactory(task_set=arithmetic, position=position, prompt=prompt,
                    reference={"answer": answer})  # fmt: skip
    sharded = TaskSetFactory(name="Sharded arithmetic")
    for position, (left, symbol, right) in enumerate(SHARDED):
        TaskFactory(
            task_set=sharded, position=position, prompt=f"What is {left} {symbol} {right}?",
            reference={"answer": str(OPERATIONS[symbol](left, right))},
            shards=list(arithmetic_shards(left, symbol, right)),
        )  # fmt: skip


def add_model(page, name: str, backend: str, location: str, params: dict) -> None:  # type: ignore[no-untyped-def]
    page.fill("#id_name", name)
    page.select_option("#id_backend", backend)
    page.fill("#id_location", location)
    page.fill("#id_generation_params", json.dumps(params))
    page.click("button:has-text('Add model')")
    page.wait_for_selector(f"#model-table td:has-text('{name}')")


def add_protocol(page, name: str, mode: str, max_turns: int) -> None:  # type: ignore[no-untyped-def]
    page.fill("#id_name", name)
    page.select_option("#id_mode", mode)
    page.fill("#id_max_turns", str(max_turns))
    page.click("button:has-text('Add protocol')")
    page.wait_for_selector(f"#protocol-table td:has-text('{name}')")


def launch(page, task_set: str, protocol: str, roles: dict[str, str]) -> Run:  # type: ignore[no-untyped-def]
    page.goto("/runs/new/")
    page.select_option("#id_task_set", label=task_set)
    page.select_option("#id_protocol", label=protocol)
    for role, model in roles.items():
        page.select_option(f"#id_{role}", label=model)
    page.fill("#id_samples_per_task", str(SAMPLES))
    page.fill("#id_batch_size", "8")
    page.click("button:has-text('Launch')")
    page.wait_for_url("**/runs/*/")
    return Run.objects.get(pk=int(page.url.rstrip("/").rsplit("/", 1)[1]))


def wait_finished(page, run: Run, worker) -> None:  # type: ignore[no-untyped-def]
    page.wait_for_selector(
        "#run-status:text-matches('Succeeded|Failed|Cancelled')", timeout=180_000
    )
    run.refresh_from_db()
    assert run.status == Run.Status.SUCCEEDED, run.error + "\n" + worker.output()


def test_house_model_didactic_and_sharded_runs_from_the_browser(
    page, worker, tiny_model_dir: Path
) -> None:  # type: ignore[no-untyped-def]
    researcher = UserFactory(username="grace")
    task_sets()
    page.goto("/models/")
    page.fill("#id_username", researcher.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/models/")

    # 1. Register the house checkpoint (transformers) and the scripted sharded pair.
    add_model(page, "house", "transformers", str(tiny_model_dir), {"max_new_tokens": 8})
    assert page.locator(".messages .warning").count() == 0, "the checkpoint exists here"
    add_model(page, "sharded student", "scripted", "sharded-student", {"ask_probability": 0.7})
    add_model(page, "shard revealer", "scripted", "shard-revealer", {})
    page.click("#backend-reference summary")
    shot(page, "1-models")

    # 2. Protocols: didactic with the default templates, shown pre-filled; and sharded.
    page.goto("/runs/protocols/")
    page.click("#prompt-templates summary")
    assert "Never state or hint" in page.input_value("#id_template_teacher_system")
    shot(page, "2-protocol-form")
    add_protocol(page, "House didactic", "didactic", MAX_TURNS)
    add_protocol(page, "Sharded, 4 turns", "sharded", 4)

    # 3. Launch the house model as student and teacher; the chart is drawn when it ends.
    run = launch(
        page, "Small arithmetic", "House didactic", {"student": "house", "teacher": "house"}
    )
    assert run.config["student"] == run.config["teacher"]
    assert run.frozen_config.protocol.templates["teacher_system"].startswith("You are a")
    wait_finished(page, run, worker)
    total = len(ARITHMETIC) * SAMPLES
    assert f"{total} / {total}" in page.text_content("#run-progress")
    page.wait_for_selector("#accuracy-chart[data-drawn=true] .main-svg")
    assert "teacher shares the student's model (loaded once)" in worker.output()
    shot(page, "3-house-run")

    # 4. A transcript: verdicts on the student's attempts, the teacher's private context.
    dialogue = Dialogue.objects.filter(run=run, turns__role=Turn.Role.TEACHER).distinct().first()
    assert dialogue is not None, "an untrained model rarely solves at once: the teacher spoke"
    page.goto(f"/dialogues/{dialogue.pk}/")
    verified = Turn.objects.filter(dialogue=dialogue, role="student", is_correct__isnull=False)
    assert page.locator(".turn-student .verdict").count() == verified.count() >= 1
    teacher_turn = page.locator(".turn-teacher").first
    teacher_turn.locator("details.private-context summary").first.click()
    private = teacher_turn.locator("details.private-context pre").first.text_content()
    assert "reference" in private and "verdict_details" in private
    shot(page, "4-house-transcript")

    # 5. A sharded run: the student asks, the simulator reveals one shard per turn. Without a
    # user simulator the form says what is missing.
    page.goto("/runs/new/")
    page.select_option("#id_task_set", label="Sharded arithmetic")
    page.select_option("#id_protocol", label="Sharded, 4 turns")
    page.select_option("#id_student", label="sharded student")
    page.select_option("#id_teacher", label="house")
    page.click("button:has-text('Launch')")
    page.wait_for_selector("text=The sharded mode needs a user simulator to reveal the shards.")
    assert page.is_visible("text=A sharded protocol has no teacher: leave this empty.")
    shot(page, "5-run-form-errors")
    sharded = launch(
        page, "Sharded arithmetic", "Sharded, 4 turns",
        {"student": "sharded student", "user_simulator": "shard revealer"},
    )  # fmt: skip
    wait_finished(page, sharded, worker)
    kinds = set(Turn.objects.filter(dialogue__run=sharded).values_list("kind", flat=True))
    assert {"question", "shard"} <= kinds, kinds
    with_question = Dialogue.objects.filter(run=sharded, turns__kind="question").first()
    page.goto(f"/dialogues/{with_question.pk}/")
    page.wait_for_selector(".turn-user")
    assert page.locator(".turn-student .speaker", has_text="question").count() >= 1
    shard_texts = [t for t in page.locator(".turn-user .text").all_text_contents() if t.strip()]
    assert any("number is" in text for text in shard_texts), shard_texts
    shot(page, "6-sharded-transcript")
