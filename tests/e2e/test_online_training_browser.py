"""Online SML in headless Chromium with a real worker, as a researcher does: launch it on the
house model's architecture (the tiny model) from the form, watch the reward and the held-out
accuracy-by-turn curves live, open a step's stored rollouts, and find the trained model in the
registry with its lineage and its evaluation beside the base model's; the single-turn RL
baseline runs as a sibling."""

from __future__ import annotations

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
)
from webapp.dialogues.models import Dialogue
from webapp.models_registry.models import ModelSpec
from webapp.runs.models import MetricPoint, Run

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = Path(os.environ.get("DIALAB_SCREENSHOTS", "test-artifacts/screenshots"))
STEPS = 12
TERMINAL = ("succeeded", "failed", "cancelled")


def shot(page, name: str) -> None:  # type: ignore[no-untyped-def]
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"online-{name}.png"), full_page=True)


def world(tiny_model_dir: Path) -> dict[str, Any]:
    base = ModelSpec.objects.create(
        name="tiny house", backend="transformers", location=str(tiny_model_dir),
        generation_params={"max_new_tokens": 6},
    )  # fmt: skip
    protocol = ProtocolFactory(name="Didactic, 3 turns", max_turns=3)
    teacher = TeacherFactory(name="scripted teacher")
    training = TaskSetFactory(name="Sums to train on")
    for i in range(6):
        TaskFactory(task_set=training, position=i, prompt=f"What is {i} + 2?",
                    reference={"answer": str(i + 2)})  # fmt: skip
    held_out = TaskSetFactory(name="Held out")
    for i, (prompt, answer) in enumerate([("What is 2 + 5?", "7"), ("What is 4 + 4?", "8")]):
        TaskFactory(task_set=held_out, position=i, prompt=prompt, reference={"answer": answer})
    return {"base": base, "protocol": protocol, "teacher": teacher}


def watch(page, worker) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """The live panel while the run goes: the steps at which a reward was shown."""
    rewards: list[tuple[int, str]] = []
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        status = page.locator("#training-live").get_attribute("data-status")
        if status in TERMINAL:
            return {"status": status, "rewards": rewards}
        progress = page.text_content("#run-progress") or ""
        reward = page.locator("#latest-reward")
        step = re.match(r"\s*step (\d+) /", progress)
        if status == "running" and reward.count() and step:
            seen = (int(step[1]), reward.text_content() or "")
            if not rewards or rewards[-1] != seen:
                rewards.append(seen)
        time.sleep(0.1)
    raise AssertionError(f"online training did not end; seen {rewards}\n{worker.output()}")


def test_researcher_trains_online_and_reads_the_rollouts_and_the_trained_model(
    page, worker, tiny_model_dir: Path
) -> None:  # type: ignore[no-untyped-def]
    researcher = UserFactory(username="grace")
    data = world(tiny_model_dir)
    page.goto("/runs/")
    page.fill("#id_username", researcher.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/runs/")
    page.click("#online-sml-link")
    page.wait_for_url("**/training/online/new/")

    page.select_option("#id_base_model", label="tiny house")
    page.select_option("#id_task_set", label="Sums to train on")
    page.select_option("#id_protocol", label="Didactic, 3 turns")
    # The didactic protocol without a teacher is refused with the reason, nothing launched.
    page.select_option("#id_eval_task_set", label="Held out")
    page.select_option("#id_eval_protocol", label="Didactic, 3 turns")
    page.select_option("#id_eval_teacher", label="scripted teacher")
    for name, value in {
        "group_size": "2", "tasks_per_step": "2", "horizon": "2", "max_new_tokens": "6",
        "store_share": "0.5", "eval_every": "4", "max_steps": str(STEPS), "save_steps": "4",
        "learning_rate": "0.001", "device": "cpu", "max_length": "256",
    }.items():  # fmt: skip
        page.fill(f"#id_{name}", value)
    page.select_option("#id_precision", "float32")
    page.uncheck("#id_gradient_checkpointing")
    page.click("#launch-button")
    page.wait_for_selector("#online-form .errorlist")
    assert "needs a teacher" in (page.text_content("#online-form") or "")
    assert not Run.objects.exists()
    page.select_option("#id_teacher", label="scripted teacher")
    shot(page, "1-form")
    page.click("#launch-button")
    page.wait_for_url("**/training/runs/*/")

    runs = Run.objects.filter(kind=Run.Kind.TRAIN).order_by("pk")
    assert runs.count() == 2, "the online run and its single-turn RL sibling"
    run, sibling = runs
    assert "single-turn RL baseline" in sibling.name
    assert sibling.config["online"]["horizon"] == 1 and sibling.config["online"]["group_size"] == 4
    config = page.text_content("#training-config") or ""
    assert "online SML (multi-turn GRPO)" in config and "group 2 · horizon 2 turns" in config
    assert "Sums to train on v1 (6 tasks)" in config and "teacher scripted teacher" in config

    seen = watch(page, worker)
    run.refresh_from_db()
    assert seen["status"] == "succeeded", f"{run.error}\n{worker.output()}"
    # Shown while the run was going: how many polls caught a new step depends on how fast the
    # machine trains (12 tiny steps can take less than a poll), so one is what is asserted, and
    # every step's reward point is stored for the panel and the chart to read.
    assert seen["rewards"], f"no reward was shown while the run was going: {seen}"
    rewards = MetricPoint.objects.filter(run=run, name="reward")
    assert sorted(rewards.values_list("step", flat=True)) == list(range(1, STEPS + 1))
    page.wait_for_selector("#training-chart[data-drawn=true] .main-svg")
    titles = page.locator("#training-chart .annotation-text").all_text_contents()
    assert (
        "Held-out accuracy after turn k (95% Wilson)" in titles
        and "Mean reward of the step's dialogues" in titles
    )
    held_out = MetricPoint.objects.filter(run=run, name__startswith="heldout_solved_turn_")
    assert sorted(set(held_out.values_list("step", flat=True))) == [0, 4, 8, 12]
    names = {f"heldout_solved_turn_{k}" for k in (1, 2, 3)}
    assert set(held_out.values_list("name", flat=True)) == names
    played = MetricPoint.objects.filter(run=run, name="heldout_dialogues")
    assert set(played.values_list("value", flat=True)) == {2}, "both held-out tasks counted"

    # The stored rollouts of a step: half of each step's four dialogues.
    assert Dialogue.objects.filter(run=run).count() == 2 * STEPS
    page.click("#stored-rollouts a")
    page.wait_for_url(f"**/dialogues/?run={run.pk}")
    page.fill("#id_step", "5")
    page.press("#id_step", "Enter")
    page.wait_for_function("() => location.search.includes('step=5')")
    page.wait_for_function(
        "() => document.querySelectorAll('#dialogue-table tbody tr').length === 2"
    )
    page.click("#dialogue-table tbody tr:first-child td:first-child a")
    page.wait_for_selector("#training-step")
    assert "optimizer step 5" in (page.text_content("#training-step") or "")
    shot(page, "2-rollout")

    # The trained model, registered under its base and evaluated beside it.
    page.goto(f"/training/runs/{run.pk}/")
    trained = ModelSpec.objects.get(trained_by_run=run)
    assert trained.base_model == data["base"] and "online SML" in trained.name
    page.wait_for_selector("#trained-model")

    def evaluations_finished() -> bool:
        text = page.text_content("#training-live") or ""
        return "Provisional" not in text and text.count("(succeeded)") == 2

    wait_until(evaluations_finished, timeout=180, message=worker.output)
    page.wait_for_selector("#accuracy-difference")
    shot(page, "3-run")
    wait_until(
        lambda: Run.objects.get(pk=sibling.pk).status in TERMINAL, timeout=240,
        message=worker.output,
    )  # fmt: skip
    assert Run.objects.get(pk=sibling.pk).status == Run.Status.SUCCEEDED
