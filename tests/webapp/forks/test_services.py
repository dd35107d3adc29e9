"""Fork launches: what is refused (and how it is said), what the run's configuration holds,
and which dialogues a "replay from turn t" forks, keeping how many turns."""

from __future__ import annotations

import pytest

from models_gpu.spec.run import RunConfig, RunConfigError
from tests.factories import ProtocolFactory, TaskFactory, TaskSetFactory, TeacherFactory, frozen_run
from tests.transcript_builders import attempt, feedback, turn
from tests.webapp.forks.builders import stored
from webapp.dialogues.models import Dialogue
from webapp.forks import services
from webapp.runs.models import Run

pytestmark = pytest.mark.django_db


def wrong(n: int) -> list[dict]:  # type: ignore[type-arg]
    """n wrong attempts, each answered by the teacher but the last."""
    turns = []
    for k in range(n):
        turns.append(attempt(f"It is {k}.", str(k), False))
        if k < n - 1:
            turns.append(feedback(f"Not {k}."))
    return turns


@pytest.fixture
def world():  # type: ignore[no-untyped-def]
    task_set = TaskSetFactory()
    tasks = [TaskFactory(task_set=task_set) for _ in range(3)]
    teacher = TeacherFactory()
    run = frozen_run(task_set=task_set, teacher=teacher, protocol=ProtocolFactory(max_turns=3))
    return {"task_set": task_set, "tasks": tasks, "teacher": teacher, "run": run}


def launch(world, parents, **changes):  # type: ignore[no-untyped-def]
    run = world["run"]
    arguments = {
        "name": "fork", "parents": parents, "student": run.student, "teacher": world["teacher"],
        "protocol": run.protocol, "seed": 3, "created_by": None, **changes,
    }  # fmt: skip
    return services.fork_run_create(**arguments)


def test_a_fork_run_config_round_trips_and_counts_one_dialogue_per_parent(world) -> None:  # type: ignore[no-untyped-def]
    first = stored(world["run"], world["tasks"][0].pk, 0, wrong(3))
    second = stored(world["run"], world["tasks"][1].pk, 0, wrong(2))
    fork_run = launch(world, [(first, 1), (second, 2)])

    config = RunConfig.from_json(fork_run.config)
    assert config.forks is not None and config.forks.parents == ((first.pk, 1), (second.pk, 2))
    assert config.to_json() == fork_run.config and config.config_hash() == fork_run.config_hash
    assert config.task_set.id == world["task_set"].pk and config.task_set.task_count == 3
    assert config.teacher is not None and config.teacher.id == world["teacher"].pk
    assert fork_run.progress_total == 2 == config.dialogue_count
    assert fork_run.status == Run.Status.QUEUED and fork_run.task_set_id == world["task_set"].pk


def test_kept_turns_with_a_correct_reply_are_refused_by_dialogue(world) -> None:  # type: ignore[no-untyped-def]
    solved = stored(world["run"], world["tasks"][0].pk, 0, [
        attempt("4", "4", False), feedback("No."), attempt("3", "3", True),
    ])  # fmt: skip
    with pytest.raises(RunConfigError) as refused:
        launch(world, [(solved, 3)])
    assert str(refused.value) == (
        f"forks: Dialogue #{solved.pk}: its first 3 turns already hold a correct reply (turn 2), "
        "so there is nothing to play on."
    )
    assert launch(world, [(solved, 2)]).frozen_config.forks.parents == ((solved.pk, 2),)


def test_a_fork_with_no_turn_left_before_max_turns_is_refused(world) -> None:  # type: ignore[no-untyped-def]
    # max_turns 3: after the student's third reply no teacher may answer; after the teacher's
    # second answer the student may still reply a third time.
    parent = stored(world["run"], world["tasks"][0].pk, 0, wrong(3))
    with pytest.raises(RunConfigError) as refused:
        launch(world, [(parent, 5)])
    message = refused.value.problems[0].message
    assert message.startswith(f"Dialogue #{parent.pk}: after its first 5 turns the next turn ")
    assert "stops at 3 turns" in message
    assert launch(world, [(parent, 4)]).frozen_config.forks.parents == ((parent.pk, 4),)
    with pytest.raises(RunConfigError, match="has 5 turns: it cannot keep 6"):
        launch(world, [(parent, 6)])


def test_parents_of_two_task_sets_are_refused_naming_them(world) -> None:  # type: ignore[no-untyped-def]
    here = stored(world["run"], world["tasks"][0].pk, 0, wrong(1))
    other_set = TaskSetFactory()
    other_run = frozen_run(task_set=other_set, teacher=world["teacher"])
    there = stored(other_run, TaskFactory(task_set=other_set).pk, 0, wrong(1))
    with pytest.raises(RunConfigError) as refused:
        launch(world, [(here, 1), (there, 1)])
    message = str(refused.value)
    assert "these parents span several" in message
    assert f"#{here.pk} of task set #{world['task_set'].pk}" in message
    assert f"#{there.pk} of task set #{other_set.pk}" in message
    assert not Run.objects.exclude(pk__in=[world["run"].pk, other_run.pk]).exists()


def test_the_run_checks_still_apply(world) -> None:  # type: ignore[no-untyped-def]
    parent = stored(world["run"], world["tasks"][0].pk, 0, wrong(2))
    with pytest.raises(RunConfigError, match="teacher: The didactic protocol needs a teacher"):
        launch(world, [(parent, 1)], teacher=None)
    with pytest.raises(RunConfigError, match="No dialogue to fork"):
        launch(world, [])


def test_fork_points_offer_only_turns_a_fork_can_play_on_from(world) -> None:  # type: ignore[no-untyped-def]
    parent = stored(world["run"], world["tasks"][0].pk, 0, [
        attempt("It is 4, I think, but let me explain at length why.", "4", False),
        feedback("No."), attempt("3", "3", True),
    ])  # fmt: skip
    points = services.fork_points(turns=list(parent.turns.all()), max_turns=3)
    assert [point.keep for point in points] == [1, 2]
    # The message named as every page names it (webapp/dialogues/numbering.py).
    assert points[0].label == (
        "after Student · turn 1 · message #1: It is 4, I think, but let me explain at…"
    )
    assert points[1].label == "after Teacher · turn 1 · message #2: No."


def test_counterfactual_parents_keep_through_the_reply_of_turn_t_and_count_skips(world) -> None:  # type: ignore[no-untyped-def]
    run, (one, two, three) = world["run"], world["tasks"]
    unsolved = stored(run, one.pk, 0, wrong(3))
    late = stored(run, two.pk, 0, [*wrong(2), feedback("Look again."), attempt("3", "3", True)])
    early = stored(run, three.pk, 0, [attempt("4", "4", False), feedback("No."),
                                      attempt("3", "3", True)])  # fmt: skip
    short = stored(run, one.pk, 1, [attempt("4", "4", False)])
    asked = stored(run, two.pk, 1, [turn("student", "question", "Base ten?"), feedback("Yes."),
                                    attempt("4", "4", False), feedback("No."),
                                    attempt("5", "5", False)])  # fmt: skip
    dialogues = Dialogue.objects.filter(run=run).prefetch_related("turns").order_by("pk")

    parents, skipped = services.counterfactual_parents(dialogues, 2)

    assert [(d.pk, keep) for d, keep in parents] == [(unsolved.pk, 3), (late.pk, 3), (asked.pk, 3)]
    assert skipped == {services.SKIP_SOLVED: 1, services.SKIP_NO_REPLY: 1}
    assert early.first_correct_turn == 2 and short.num_turns == 1
    # The new teacher answers the reply of turn t: the last kept turn is that reply.
    launched = launch(world, parents)
    assert launched.progress_total == 3
    parents_at_1, skipped_at_1 = services.counterfactual_parents(dialogues, 1)
    assert [keep for _, keep in parents_at_1] == [1, 1, 1, 1, 1] and skipped_at_1 == {}
