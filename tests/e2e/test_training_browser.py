"""Close the loop in headless Chromium with a real worker, as a researcher does: filter the
transcripts of a base model's evaluation to the solved dialogues nobody marked as revealing the
answer, press "Train on these", preview what is trained, launch, watch the loss live, and read
the trained model's held-out evaluation beside the base model's; then find the trained model
under its base in the registry."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import wait_until
from tests.factories import (
    PASSWORD,
    ProtocolFactory,
    TaskFactory,
    TaskSetFactory,
    TeacherFactory,
    UserFactory,
    frozen_run,
)
from tests.transcript_builders import attempt, feedback, store
from webapp.annotations.models import LabelQuestion, LabelSchema
from webapp.annotations.services import annotation_save
from webapp.dialogues.models import Dialogue, Turn
from webapp.models_registry.models import ModelSpec
from webapp.runs.models import MetricPoint, Run
from webapp.training.models import DatasetSnapshot

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = Path(os.environ.get("DIALAB_SCREENSHOTS", "test-artifacts/screenshots"))
# Enough steps that the page (polled every 2 s) sees the step counter move while training runs:
# a step of the tiny model takes tens of milliseconds on a CPU.
MAX_STEPS = 200
SAVE_STEPS = 50
HELD_OUT = [("What is 2 + 5?", "7"), ("What is 4 + 4?", "8")]
TERMINAL = ("succeeded", "failed", "cancelled")


def shot(page, name: str) -> None:  # type: ignore[no-untyped-def]
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"training-{name}.png"), full_page=True)


def world(tiny_model_dir: Path) -> dict[str, Any]:
    """The tiny house model's evaluation on a training pool, with five stored dialogues, and an
    annotator's reveals_answer labels on the teacher turns of some of them:

    - solved, teacher "Too high." labelled no;  solved, teacher "Count again." labelled no;
    - solved, teacher "The answer is 3." labelled yes (it gave the answer away);
    - solved at once (no teacher turn: nothing to label, so not marked);
    - unsolved, teacher "No." labelled no.

    Solved and not marked as revealing the answer: the two labelled no and the one solved at
    once (three dialogues, seven turns of which five by the student)."""
    base = ModelSpec.objects.create(
        name="tiny house", backend="transformers", location=str(tiny_model_dir),
        generation_params={"max_new_tokens": 8},
    )  # fmt: skip
    protocol = ProtocolFactory(name="Didactic, 2 turns", max_turns=2)
    teacher = TeacherFactory(name="scripted teacher")
    pool = TaskSetFactory(name="Training pool")
    task = TaskFactory(task_set=pool, prompt="What is 1 + 2?", reference={"answer": "3"})
    # Finished, so that the starting worker's recovery sweep leaves it alone.
    source = frozen_run(
        name="tiny house on the pool", task_set=pool, protocol=protocol, student=base,
        teacher=teacher, status=Run.Status.SUCCEEDED,
    )  # fmt: skip
    dialogues = [
        ("a_late", [attempt("4", "4", False), feedback("Too high."), attempt("3", "3", True)]),
        ("a_late", [attempt("5", "5", False), feedback("Count again."), attempt("3", "3", True)]),
        ("a_late", [
            attempt("2", "2", False), feedback("The answer is 3.", leak=True),
            attempt("3", "3", True),
        ]),
        ("a_first", [attempt("3", "3", True)]),
        ("b_same", [attempt("5", "5", False), feedback("No.")]),
    ]  # fmt: skip
    for sample, (name, turns) in enumerate(dialogues):
        store(source, task.pk, sample, name, turns)
    stored = list(Dialogue.objects.filter(run=source).order_by("sample_index"))

    schema = LabelSchema.objects.create(name="Training review")
    reveals = LabelQuestion.objects.create(
        schema=schema, key="reveals_answer", text="Does the teacher reveal the answer?",
        kind=LabelQuestion.Kind.YES_NO, target=LabelQuestion.Target.TEACHER_TURN,
    )  # fmt: skip
    annotator = UserFactory(username="ada", role="annotator")
    for dialogue, value in zip(stored, [False, False, True, None, False], strict=True):
        if value is None:
            continue
        turn = Turn.objects.get(dialogue=dialogue, role=Turn.Role.TEACHER)
        annotation_save(
            question=reveals, dialogue=dialogue, turn=turn, author=annotator, value=value,
            draft=False,
        )  # fmt: skip

    held_out = TaskSetFactory(name="Held out")
    for position, (prompt, answer) in enumerate(HELD_OUT):
        TaskFactory(task_set=held_out, position=position, prompt=prompt,
                    reference={"answer": answer})  # fmt: skip
    return {
        "base": base, "protocol": protocol, "teacher": teacher, "source": source,
        "held_out": held_out, "selected": [stored[0].pk, stored[1].pk, stored[3].pk],
    }  # fmt: skip


def rows(page) -> int:  # type: ignore[no-untyped-def]
    return page.locator("#dialogue-table tbody tr").count()


def wait_for_rows(page, count: int) -> None:  # type: ignore[no-untyped-def]
    # A function, not an expression: Playwright evals an expression on each poll (refused by the
    # Content-Security-Policy).
    page.wait_for_function(
        "n => document.querySelectorAll('#dialogue-table tbody tr').length === n", arg=count
    )


def watch_training(page, worker) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """Read the live panel as it is swapped in (every 2 s) until training ends: the step values
    and the losses shown while the run was running."""
    steps: list[int] = []
    losses: list[str] = []
    eta = False
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        live = page.locator("#training-live")
        status = live.get_attribute("data-status")
        if status in TERMINAL:
            return {"status": status, "steps": steps, "losses": losses, "eta": eta}
        progress = page.text_content("#run-progress") or ""
        match = re.match(r"\s*step (\d+) / (\d+|\?)", progress)
        assert match, progress
        latest = page.locator("#training-latest")
        if status == "running" and latest.count():
            text = latest.text_content() or ""
            loss = re.search(r"loss (\d+\.\d{4})", text)
            step = int(match[1])
            if loss and step and (not steps or steps[-1] != step):
                steps.append(step)
                losses.append(loss[1])
                assert match[2] == str(MAX_STEPS), progress
                eta = eta or bool(re.search(r"about \d+ s left", progress))
        time.sleep(0.1)
    raise AssertionError(f"training did not end; steps seen {steps}\n{worker.output()}")


def test_researcher_trains_on_filtered_transcripts_and_compares_with_the_base(
    page, worker, tiny_model_dir: Path
) -> None:  # type: ignore[no-untyped-def]
    started = time.monotonic()
    researcher = UserFactory(username="grace")
    data = world(tiny_model_dir)
    source = data["source"]

    page.goto("/dialogues/")
    page.fill("#id_username", researcher.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/dialogues/")
    assert rows(page) == 5

    # 1. Filter: solved, and no label says the teacher revealed the answer (an unlabelled
    # dialogue is "not marked" too; reveals_answer=no would leave out the one solved at once).
    page.select_option("#id_outcome", "solved")
    page.wait_for_function("() => location.search.includes('outcome=solved')")
    wait_for_rows(page, 4)
    page.fill("#id_label", "reveals_answer!=yes")
    page.press("#id_label", "Enter")
    page.wait_for_function("() => location.search.includes('label=')")
    wait_for_rows(page, 3)
    assert page.locator("#filter-notes").count() == 0, page.text_content("#filter-notes")
    assert "3 transcripts match these filters" in page.text_content(".result-count")
    listed = {
        int(text.lstrip("#"))
        for text in page.locator("#dialogue-table tbody tr td:first-child a").all_text_contents()
    }
    assert listed == set(data["selected"])
    shot(page, "1-filtered")

    # 2. "Train on these": the form says what the filter selects, and from which run.
    page.click("#train-these")
    page.wait_for_url("**/training/new/?*")
    selection = page.text_content("#training-selection") or ""
    assert "3 dialogues (3 solved), 7 turns of which 5 by the student" in selection, selection
    assert f"#{source.pk} tiny house on the pool (3)" in selection, selection
    query = page.input_value("#id_selection")
    assert "outcome=solved" in query and "label=reveals_answer%21%3Dyes" in query, query
    assert "page=" not in query

    page.select_option("#id_base_model", label="tiny house")
    page.select_option("#id_eval_task_set", label="Held out")
    page.select_option("#id_eval_protocol", label="Didactic, 2 turns")
    page.select_option("#id_eval_teacher", label="scripted teacher")
    page.fill("#id_eval_samples", "1")
    page.select_option("#id_method", "sft")
    page.fill("#id_learning_rate", "0.001")
    page.fill("#id_max_steps", str(MAX_STEPS))
    page.fill("#id_batch_size", "2")
    page.fill("#id_save_steps", str(SAVE_STEPS))
    page.fill("#id_logging_steps", "1")
    page.fill("#id_device", "cpu")
    page.select_option("#id_precision", "float32")

    # The preview: a worker tokenizes the selection with the base model's tokenizer.
    page.click("#preview-button")
    page.wait_for_selector("#training-preview #preview-counts", timeout=90_000)
    counts = page.text_content("#preview-counts") or ""
    tokens = re.search(r"^3 dialogues: about (\d+) tokens, (\d+) of them trained, per", counts)
    assert tokens and 0 < int(tokens[2]) < int(tokens[1]), counts
    sft = page.locator("#preview-sft")
    assert sft.get_attribute("open") is not None and "(chosen)" in sft.text_content()
    sft_marks = [t.strip() for t in sft.locator("mark.trained").all_text_contents()]
    assert sft_marks and not any("Too high." in mark for mark in sft_marks), sft_marks
    page.click("#preview-critique summary")
    critique_marks = page.locator("#preview-critique mark.trained").all_text_contents()
    assert any("Too high." in mark for mark in critique_marks), critique_marks
    shot(page, "2-form-preview")
    previewed = time.monotonic()

    page.click("#launch-button")
    page.wait_for_url("**/training/runs/*/")
    run = Run.objects.get(kind=Run.Kind.TRAIN)
    assert page.url.rstrip("/").endswith(f"/training/runs/{run.pk}")
    snapshot = DatasetSnapshot.objects.get()
    assert snapshot.dialogue_count == 3 and snapshot.student_turn_count == 5
    lines = Path(snapshot.path).read_text(encoding="utf-8").splitlines()
    frozen = [json.loads(line)["dialogue_id"] for line in lines]
    assert frozen == sorted(data["selected"])
    assert f"{MAX_STEPS} steps · batch 2 × 1" in page.text_content("#training-config")
    assert "3 dialogues" in page.text_content("#training-dataset")

    # 3. The loss live: the step counter moves while the run is running.
    seen = watch_training(page, worker)
    run.refresh_from_db()
    assert seen["status"] == "succeeded", f"{run.error}\n{worker.output()}"
    assert len(seen["steps"]) >= 2 and seen["steps"] == sorted(seen["steps"]), seen
    assert all(0 < step <= MAX_STEPS for step in seen["steps"]), seen
    trained_at = time.monotonic()
    page.wait_for_selector("#run-status:text-is('Succeeded')")
    assert f"step {MAX_STEPS} / {MAX_STEPS}" in page.text_content("#run-progress")
    assert page.locator("#cancel-run").count() == 0
    page.wait_for_selector("#training-chart[data-drawn=true] .main-svg")
    assert seen["eta"], "the time left was shown while training"
    losses = dict(MetricPoint.objects.filter(run=run, name="loss").values_list("step", "value"))
    assert sorted(losses) == list(range(1, MAX_STEPS + 1)), "one loss point per step"
    assert set(seen["losses"]) <= {f"{value:.4f}" for value in losses.values()}, seen

    # The trained model, then the base and trained evaluations on the held-out tasks.
    trained = ModelSpec.objects.get(trained_by_run=run)
    page.wait_for_selector("#trained-model")
    assert trained.name in page.text_content("#trained-model")
    page.wait_for_selector("#base-run")
    page.wait_for_selector("#trained-run")
    page.wait_for_selector("#accuracy-difference", timeout=120_000)

    def evaluations_finished() -> bool:
        text = page.text_content("#training-live") or ""
        return "Provisional" not in text and text.count("(succeeded)") == 2

    wait_until(evaluations_finished, timeout=180, message=worker.output)
    evaluations = Run.objects.filter(kind=Run.Kind.EVAL).exclude(pk=source.pk)
    assert {(r.student_id, r.status) for r in evaluations} == {
        (data["base"].pk, Run.Status.SUCCEEDED), (trained.pk, Run.Status.SUCCEEDED),
    }  # fmt: skip
    base_run = evaluations.get(student=data["base"])
    trained_run = evaluations.get(student=trained)
    assert page.get_attribute("#base-run", "href") == f"/runs/{base_run.pk}/"
    assert page.get_attribute("#trained-run", "href") == f"/runs/{trained_run.pk}/"
    table = page.locator("#accuracy-difference tbody tr")
    assert table.count() == 2  # after turns 1 and 2
    for row in table.all_text_contents():
        assert re.search(r"\(\d/2\).*\(\d/2\).*(pts|no information)", row, re.S), row
    method = page.text_content("#difference-method") or ""
    assert "paired over the 2 tasks both evaluated" in method, method
    page.wait_for_selector("#evaluation-chart[data-drawn=true] .main-svg")
    assert page.locator("#evaluation-chart .scatterlayer .trace").count() == 2
    shot(page, "3-run")

    # 4. The registry: the trained model sits under its base and names its training run.
    page.click("#trained-model a")
    page.wait_for_url("**/models/#model-*")
    order = page.locator("#model-table tbody tr").evaluate_all("rows => rows.map(r => r.id)")
    assert order.index(f"model-{trained.pk}") == order.index(f"model-{data['base'].pk}") + 1
    row = page.locator(f"#model-{trained.pk}")
    assert row.locator("td.lineage-depth-1").count() == 1
    lineage = row.locator("td.model-lineage")
    assert f"from tiny house, trained by #{run.pk} {run.name}" in lineage.text_content()
    assert lineage.locator("a").get_attribute("href") == f"/runs/{run.pk}/"
    box, table = lineage.bounding_box(), page.locator("#model-table").bounding_box()
    assert box and table and box["x"] + box["width"] <= 1280, "the lineage shows unscrolled"
    shot(page, "4-models")
    print(
        f"training steps seen on the page: {seen['steps']} (losses {seen['losses']}); "
        f"set-up and preview {previewed - started:.1f} s, training {trained_at - previewed:.1f} s,"
        f" evaluations {time.monotonic() - trained_at:.1f} s"
    )
