"""A fork run played by the real worker code in-process with the scripted models: each fork
starts with its parent's turns, is stored with its parent and the turns it kept, and (changing
nothing but the run) plays its parent's continuation again."""

from __future__ import annotations

import pytest

from tests.factories import ProtocolFactory, TaskFactory, TaskSetFactory, TeacherFactory, frozen_run
from webapp.dialogues.models import Dialogue
from webapp.forks import services
from webapp.runs.models import Run
from workers.evaluation import execute_evaluation

pytestmark = pytest.mark.django_db

TURN_FIELDS = ("index", "round", "role", "kind", "text", "is_correct", "extracted_answer")


def turns_of(dialogue: Dialogue) -> list[tuple[object, ...]]:
    return [tuple(getattr(turn, name) for name in TURN_FIELDS) for turn in dialogue.turns.all()]


def test_a_replay_from_turn_1_plays_forks_that_start_with_their_parents_turns() -> None:
    task_set = TaskSetFactory()
    for i in range(12):
        TaskFactory(task_set=task_set, position=i, prompt=f"What is {10 + i} + {20 + i}?",
                    reference={"answer": str(30 + 2 * i)})  # fmt: skip
    teacher, protocol = TeacherFactory(), ProtocolFactory(max_turns=4)
    parent_run = frozen_run(task_set=task_set, teacher=teacher, protocol=protocol, seed=5)
    assert execute_evaluation(parent_run.pk, worker="test", background_heartbeat=False)
    assert Run.objects.get(pk=parent_run.pk).status == Run.Status.SUCCEEDED

    played = Dialogue.objects.filter(run=parent_run).prefetch_related("turns").order_by("pk")
    parents, skipped = services.counterfactual_parents(played, 1)
    assert parents and len(parents) + sum(skipped.values()) == 12
    fork_run = services.fork_run_create(
        name="replay", parents=parents, student=parent_run.student, teacher=teacher,
        protocol=protocol, seed=5, created_by=None,
    )  # fmt: skip
    assert execute_evaluation(fork_run.pk, worker="test", background_heartbeat=False)
    fork_run.refresh_from_db()
    assert fork_run.status == Run.Status.SUCCEEDED and fork_run.progress_done == len(parents)

    forks = {fork.sample_index: fork for fork in Dialogue.objects.filter(run=fork_run)}
    for i, (parent, keep) in enumerate(parents):
        fork = forks[i]
        assert (fork.parent_id, fork.fork_turns, fork.task_id) == (parent.pk, keep, parent.task_id)
        assert fork.seed == parent.seed
        assert turns_of(fork)[:keep] == turns_of(parent)[:keep]
        # Nothing changed but the run: the fork plays its parent's continuation again.
        assert turns_of(fork) == turns_of(parent)
        assert fork.first_correct_turn == parent.first_correct_turn
