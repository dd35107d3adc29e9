"""People in the dialogue and forks, in headless Chromium with real Celery workers.

- A person teaches the house model on 10 tasks from the browser while a second worker plays
  another run; each answer comes back with the student's next attempt and its verdict, and the
  run's metrics count the dialogues the person taught.
- Two people race for one waiting turn: one holds it and answers, the other is told.
- A playground conversation (a researcher teaching a scripted student) is stored as a dialogue.
- A dialogue forked after turn 2 with another teacher, and the two branches side by side.
- A batch counterfactual: a run's dialogues replayed from turn 1 with another teacher, and the
  paired comparison with their parents.
- A stored rollout of an online training run (its configuration a TrainingRunConfig) opens its
  fork panel with no error and forks like any dialogue, under its rollouts' configuration.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.config_builders import StoredKind, stored_training_run
from tests.e2e.conftest import wait_until
from tests.e2e.test_transcripts_browser import shot
from tests.factories import (
    PASSWORD,
    ProtocolFactory,
    StudentFactory,
    TaskFactory,
    TaskSetFactory,
    UserFactory,
)
from webapp.accounts.models import User
from webapp.dialogues.models import Dialogue, PendingTurn, Turn
from webapp.models_registry.models import ModelSpec
from webapp.runs import services
from webapp.runs.models import Protocol, Run
from webapp.tasks.models import TaskSet

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

FEEDBACK = "Look at the tens and the units separately, then add them again."


def log_in(page, user: User, path: str) -> None:  # type: ignore[no-untyped-def]
    page.goto(path)
    page.fill("#id_username", user.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")


def arithmetic_set(name: str, tasks: int) -> TaskSet:
    task_set = TaskSetFactory(name=name)
    for i in range(tasks):
        TaskFactory(task_set=task_set, position=i, prompt=f"What is {12 + i} + {30 + i}?",
                    reference={"answer": str(42 + 2 * i)})  # fmt: skip
    return task_set


def scripted(name: str, policy: str, **params: float) -> ModelSpec:
    return ModelSpec.objects.create(
        name=name, backend="scripted", location=policy, generation_params=params
    )


def didactic(name: str, max_turns: int) -> Protocol:
    return ProtocolFactory(name=name, mode="didactic", max_turns=max_turns)


def played(run: Run, worker, timeout: float = 120) -> Run:  # type: ignore[no-untyped-def]
    wait_until(
        lambda: Run.objects.get(pk=run.pk).is_finished, timeout=timeout, message=worker.output
    )
    run.refresh_from_db()
    assert run.status == Run.Status.SUCCEEDED, run.error + "\n" + worker.output()
    return run


def test_a_person_teaches_the_house_model_while_a_worker_plays_another_run(
    page, start_worker, tiny_model_dir: Path
) -> None:  # type: ignore[no-untyped-def]
    ada = UserFactory(username="ada")
    arithmetic_set("Ten sums", 10)
    house = ModelSpec.objects.create(
        name="house", backend="transformers", location=str(tiny_model_dir),
        generation_params={"max_new_tokens": 8},
    )  # fmt: skip
    ModelSpec.objects.create(name="a person", backend="human")
    didactic("Two turns", 2)
    # The other run: model-only, slow enough (a pause per batched call) to be playing while
    # the person answers, however slow the machine: 400 tasks in chunks of 4, each chunk at
    # least two 0.3 s calls, last more than a minute. The test cancels it once done.
    long_set = arithmetic_set("Four hundred sums", 400)
    other = services.evaluation_run_create(
        name="model-only run", task_set=long_set, protocol=didactic("Five turns", 5),
        student=scripted("slow student", "arithmetic-student", first_try_accuracy=0.1,
                         feedback_gain=0.1, delay_ms=300),
        teacher=scripted("slow teacher", "feedback-teacher", delay_ms=300),
        batch_size=4, created_by=ada,
    )  # fmt: skip
    workers = [start_worker(), start_worker()]

    # Launch from the form: the house model is the student, a person the teacher (ada: people
    # left empty means the one who launches).
    log_in(page, ada, "/runs/new/")
    page.select_option("#id_task_set", label="Ten sums")
    page.select_option("#id_protocol", label="Two turns")
    page.select_option("#id_student", label="house")
    page.select_option("#id_teacher", label="a person")
    page.click("button:has-text('Launch')")
    page.wait_for_url("**/runs/*/")
    run = Run.objects.get(pk=int(page.url.rstrip("/").rsplit("/", 1)[1]))
    assert run.frozen_config.people_roles() == ["teacher"] and run.student == house

    def all_parked() -> bool:
        parked = PendingTurn.objects.filter(run=run).count()
        return parked > 0 and parked + Dialogue.objects.filter(run=run).count() == 10

    wait_until(all_parked, timeout=120, message=lambda: "\n".join(w.output() for w in workers))
    page.goto(f"/runs/{run.pk}/")
    page.wait_for_selector("#run-status:has-text('Waiting for people')")
    assert "wait for an answer" in page.text_content("#run-people")
    shot(page, "people-1-run-waiting")

    answered_while_other_ran = 0
    answered = 0
    while PendingTurn.objects.filter(run=run, status="open").exists():
        page.goto("/people/inbox/")
        page.locator("main a:has-text('Answer')").first.click()
        page.wait_for_selector("#composer textarea")
        if answered == 0:
            # A teacher sees the reference and what the verifier said of the last reply.
            assert page.locator("#private-reference").count() == 1
            assert page.locator("#attempts .verdict.wrong").count() >= 1
            shot(page, "people-2-teacher-turn")
        page.fill("#composer textarea", FEEDBACK)
        page.press("#composer textarea", "Control+Enter")
        page.wait_for_selector("#sent")
        # The worker plays the student's next reply: the dialogue ends (two turns) and the
        # page shows the verdict, without a reload.
        page.wait_for_selector("#final-verdict", timeout=60_000)
        answered += 1
        if Run.objects.get(pk=other.pk).status == Run.Status.RUNNING:
            answered_while_other_ran += 1
    shot(page, "people-3-verdict")
    assert answered_while_other_ran >= 1, "people were answered while the other run played"
    services.run_cancel(run=other)

    run = played(run, workers[0])
    page.goto(f"/runs/{run.pk}/")
    assert "10 / 10" in page.text_content("#run-progress")
    taught = Turn.objects.filter(dialogue__run=run, role="teacher", private_context__person="ada")
    assert taught.count() == answered >= 1
    assert Dialogue.objects.filter(run=run, num_turns=2).count() == answered
    page.wait_for_selector("#accuracy-chart[data-drawn=true] .main-svg")
    # Human-taught dialogues are counted: turn 2's accuracy is over all 10.
    assert "/10 solved" in page.text_content("#metric-final")
    shot(page, "people-4-run-done")


def test_two_browsers_race_for_one_waiting_turn(page, browser, live_server, worker) -> None:  # type: ignore[no-untyped-def]
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    run = services.evaluation_run_create(
        name="raced", task_set=arithmetic_set("Sums", 1), protocol=didactic("Two turns", 2),
        student=scripted("never right", "arithmetic-student", first_try_accuracy=0.0),
        teacher=ModelSpec.objects.create(name="a person", backend="human"),
        people=[alice, bob], created_by=alice,
    )  # fmt: skip
    wait_until(lambda: PendingTurn.objects.filter(run=run).exists(), message=worker.output)
    pending = PendingTurn.objects.get(run=run)
    other = browser.new_context(base_url=live_server.url)
    bob_page = other.new_page()
    log_in(page, alice, "/people/inbox/")
    log_in(bob_page, bob, "/people/inbox/")
    # Both open the turn: the first holds it, the second is told who does.
    page.goto(f"/people/turns/{pending.pk}/")
    bob_page.goto(f"/people/turns/{pending.pk}/")
    assert page.locator("#composer textarea").count() == 1
    assert "alice is answering this turn" in bob_page.text_content("#taken")
    assert bob_page.locator("#send").count() == 0
    page.fill("#composer textarea", FEEDBACK)
    page.click("#send")
    page.wait_for_selector("#sent")
    bob_page.reload()
    assert "Answered by alice" in bob_page.text_content("#answered-by")
    pending.refresh_from_db()
    assert (pending.answered_by, pending.answer) == (alice, FEEDBACK)
    other.close()


def test_a_playground_conversation_is_stored_as_a_dialogue(page, worker) -> None:  # type: ignore[no-untyped-def]
    grace = UserFactory(username="grace")
    task_set = arithmetic_set("Sums", 2)
    scripted("learns from feedback", "arithmetic-student", first_try_accuracy=0.0,
             feedback_gain=1.0)  # fmt: skip
    didactic("Three turns", 3)
    log_in(page, grace, f"/task-sets/{task_set.pk}/")
    page.locator("#task-table a:has-text('Playground')").first.click()
    page.check("input[name=role][value=teacher]")
    page.select_option("#id_partner", label="learns from feedback")
    page.select_option("#id_protocol", label="Three turns")
    page.click("button:has-text('Start')")
    # The student speaks first; its wrong answer opens the teacher's turn for grace.
    page.wait_for_url("**/people/turns/*/", timeout=60_000)
    assert page.locator("#attempts .verdict.wrong").count() == 1
    page.fill("#composer textarea", FEEDBACK)
    page.click("#send")
    page.wait_for_selector("#final-verdict:has-text('solved at turn 2')", timeout=60_000)
    shot(page, "people-5-playground")
    page.click("#dialogue-link")
    page.wait_for_url("**/dialogues/*/")
    assert FEEDBACK in page.text_content(".turn-teacher")
    dialogue = Dialogue.objects.get(run__name__startswith="Playground: grace")
    assert dialogue.outcome == "solved" and dialogue.run.frozen_config.task_ids is not None


def parent_run(user: User, tasks: int, max_turns: int, worker) -> Run:  # type: ignore[no-untyped-def]
    """Never right at once and seldom after feedback, whatever the seeds (they follow the task
    ids): every dialogue can be forked after turn 1, nearly all after turn 2."""
    run = services.evaluation_run_create(
        name="parents", task_set=arithmetic_set("Sums", tasks),
        protocol=didactic(f"{max_turns} turns", max_turns),
        student=scripted("slow learner", "arithmetic-student", first_try_accuracy=0.0,
                         feedback_gain=0.1),
        teacher=scripted("teacher A", "feedback-teacher"), created_by=user,
    )  # fmt: skip
    return played(run, worker)


def test_a_fork_at_turn_2_with_another_teacher_and_the_branches_side_by_side(
    page, worker, tiny_model_dir: Path
) -> None:  # type: ignore[no-untyped-def]
    ada = UserFactory(username="ada")
    parents = parent_run(ada, 4, 4, worker)
    parent = Dialogue.objects.filter(run=parents, num_turns__gte=3).first()
    assert parent is not None, "a slow learner is still going after turn 2"
    ModelSpec.objects.create(
        name="teacher B (house)", backend="transformers", location=str(tiny_model_dir),
        generation_params={"max_new_tokens": 8},
    )  # fmt: skip
    second_reply = parent.turns.get(round=2, role="student")

    log_in(page, ada, f"/dialogues/{parent.pk}/")
    page.click(f"a.fork-after[href$='after={second_reply.index}']")
    page.wait_for_selector("#fork-form")
    page.select_option("#id_teacher", label="teacher B (house)")
    page.click("#fork-form button:has-text('Fork')")
    page.wait_for_url("**/runs/*/")
    fork_run = played(Run.objects.get(pk=int(page.url.rstrip("/").rsplit("/", 1)[1])), worker)
    fork = Dialogue.objects.get(run=fork_run)
    assert (fork.parent_id, fork.fork_turns) == (parent.pk, second_reply.index + 1)
    kept = list(parent.turns.order_by("index").values_list("text", flat=True))[: fork.fork_turns]
    assert list(fork.turns.order_by("index").values_list("text", flat=True))[: len(kept)] == kept

    page.goto(f"/dialogues/{fork.pk}/")
    page.wait_for_selector("#branch-tree")
    assert f"#{parent.pk}" in page.text_content("#branch-tree")
    shot(page, "forks-1-tree")
    page.goto(f"/forks/compare/?a={parent.pk}&b={fork.pk}")
    html = page.content()
    assert kept[-1] in html and "teacher B (house)" in html
    shot(page, "forks-2-side-by-side")


def test_a_batch_counterfactual_and_its_paired_comparison(
    page, worker, tiny_model_dir: Path
) -> None:  # type: ignore[no-untyped-def]
    ada = UserFactory(username="ada")
    parents = parent_run(ada, 12, 3, worker)
    ModelSpec.objects.create(
        name="teacher B (house)", backend="transformers", location=str(tiny_model_dir),
        generation_params={"max_new_tokens": 8},
    )  # fmt: skip
    unsolved_after_1 = Dialogue.objects.filter(run=parents).exclude(first_correct_turn=1).count()

    log_in(page, ada, f"/dialogues/?run={parents.pk}")
    page.click("#replay-these")
    page.wait_for_selector("#counterfactual-form")
    page.fill("#id_after_round", "1")
    page.select_option("#id_teacher", label="teacher B (house)")
    page.click("#counterfactual-form button:has-text('Replay')")
    page.wait_for_url("**/runs/*/")
    forks = played(Run.objects.get(pk=int(page.url.rstrip("/").rsplit("/", 1)[1])), worker)
    assert forks.progress_total == unsolved_after_1 >= 1
    page.goto(f"/runs/{forks.pk}/")
    page.click("#fork-comparison-link")
    page.wait_for_selector("#counterfactual-table")
    assert page.locator("#counterfactual-table tbody tr").count() == 3  # turns 1 to 3
    assert f"{unsolved_after_1} pair" in page.text_content("main")
    assert page.locator("#provisional").count() == 0
    shot(page, "forks-3-counterfactual")


def test_a_stored_rollout_of_online_training_opens_its_fork_panel_and_forks(page, worker) -> None:  # type: ignore[no-untyped-def]
    """Before, its fork panel answered 500 (the run's configuration is a TrainingRunConfig of
    schema 4, read as a RunConfig) and the dialogue page showed "Something went wrong"."""
    ada = UserFactory(username="ada")
    online = stored_training_run(StoredKind(4, online=True))
    rollout = online.rollouts[0]
    StudentFactory(name="scripted student")

    log_in(page, ada, f"/dialogues/{rollout.pk}/")
    page.wait_for_selector("#fork-panel #fork-form-card")  # swapped in by htmx
    assert "Something went wrong" not in page.content()
    assert "training step 1" in page.text_content("#rollout-note")
    assert online.teacher.name in page.text_content("#rollout-roles")
    shot(page, "forks-4-rollout")

    page.click(f"a.fork-after[href$='after={rollout.turns.get(index=0).index}']")
    page.wait_for_selector("#fork-form")
    assert "Something went wrong" not in page.content()
    assert page.input_value("#id_teacher") == str(online.teacher.pk), "the rollouts' teacher"
    page.select_option("#id_student", label="scripted student")
    page.click("#fork-form button:has-text('Fork')")
    page.wait_for_url("**/runs/*/")
    fork_run = played(Run.objects.get(pk=int(page.url.rstrip("/").rsplit("/", 1)[1])), worker)
    fork = Dialogue.objects.get(run=fork_run)
    assert (fork.parent_id, fork.fork_turns, fork.task_id) == (rollout.pk, 1, rollout.task_id)
    page.goto(f"/dialogues/{rollout.pk}/")
    page.wait_for_selector("#branch-tree")
    assert f"#{fork.pk}" in page.text_content("#branch-tree")
