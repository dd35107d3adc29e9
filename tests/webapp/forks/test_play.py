"""A fork run played by the real worker code in-process with the scripted models: each fork
starts with its parent's turns, is stored with its parent and the turns it kept, and (changing
nothing but the run) plays its parent's continuation again."""

from __future__ import annotations

import pytest

from models_gpu.spec.run import RunConfig
from tests.factories import (
    ProtocolFactory,
    StudentFactory,
    TaskFactory,
    TaskSetFactory,
    TeacherFactory,
    frozen_run,
)
from webapp.dialogues.models import Dialogue
from webapp.forks import services
from webapp.metrics.partial import BatchInPlay
from webapp.runs.models import Run
from workers.evaluation import execute_evaluation

pytestmark = pytest.mark.django_db

TURN_FIELDS = ("index", "round", "role", "kind", "text", "is_correct", "extracted_answer")


def turns_of(dialogue: Dialogue) -> list[tuple[object, ...]]:
    return [tuple(getattr(turn, name) for name in TURN_FIELDS) for turn in dialogue.turns.all()]


def parents_and_forks(*, batch_size: int = 64) -> tuple[Run, list[tuple[Dialogue, int]]]:
    """A played run of 12 tasks, and a run of forks of its dialogues unsolved after turn 1."""
    task_set = TaskSetFactory()
    for i in range(12):
        TaskFactory(task_set=task_set, position=i, prompt=f"What is {10 + i} + {20 + i}?",
                    reference={"answer": str(30 + 2 * i)})  # fmt: skip
    teacher, protocol = TeacherFactory(), ProtocolFactory(max_turns=4)
    # Never right at once, whatever the seeds (they follow the task ids): 12 forks every time.
    student = StudentFactory(generation_params={"first_try_accuracy": 0.0, "feedback_gain": 0.4})
    parent_run = frozen_run(
        task_set=task_set, student=student, teacher=teacher, protocol=protocol, seed=5
    )
    assert execute_evaluation(parent_run.pk, worker="test", background_heartbeat=False)
    assert Run.objects.get(pk=parent_run.pk).status == Run.Status.SUCCEEDED

    played = Dialogue.objects.filter(run=parent_run).prefetch_related("turns").order_by("pk")
    parents, skipped = services.counterfactual_parents(played, 1)
    assert parents and len(parents) + sum(skipped.values()) == 12
    fork_run = services.fork_run_create(
        name="replay", parents=parents, student=parent_run.student, teacher=teacher,
        protocol=protocol, seed=5, created_by=None,
    )  # fmt: skip
    if batch_size != 64:
        config = RunConfig.from_json({**fork_run.config, "batch_size": batch_size})
        Run.objects.filter(pk=fork_run.pk).update(config=config.to_json())
    return Run.objects.get(pk=fork_run.pk), parents


def test_a_replay_from_turn_1_plays_forks_that_start_with_their_parents_turns() -> None:
    fork_run, parents = parents_and_forks()
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


def test_a_fork_run_stopped_midway_resumes_without_playing_a_fork_twice() -> None:
    """A first worker plays two chunks of forks and stops (as a killed one would: its
    heartbeat goes stale); the next one plays only the rest, from their kept turns, and every
    fork is stored once, as its parent's continuation."""
    from django.utils import timezone

    from models_gpu.engine import run_dialogues
    from webapp.core.heartbeat import stale_after
    from webapp.runs import services as run_services
    from workers.evaluation import RoundRecorder, load_role_generators, pending_jobs

    fork_run, parents = parents_and_forks(batch_size=2)
    assert run_services.run_claim(run_id=fork_run.pk, worker="first", stale_after=stale_after())
    config = fork_run.frozen_config
    roles = load_role_generators(config.roles())
    recorder = RoundRecorder(fork_run.pk, config, BatchInPlay())
    run_dialogues(
        pending_jobs(fork_run.pk, config), config.protocol, student=roles["student"],
        teacher=roles["teacher"], on_finished=recorder.ended, on_round=recorder.round_played,
        should_stop=lambda: Dialogue.objects.filter(run=fork_run).count() >= 3,
        batch_size=config.batch_size,
    )  # fmt: skip
    stored_first = Dialogue.objects.filter(run=fork_run).count()
    assert 3 <= stored_first < len(parents)
    Run.objects.filter(pk=fork_run.pk).update(heartbeat_at=timezone.now() - 2 * stale_after())

    assert execute_evaluation(fork_run.pk, worker="second", background_heartbeat=False)
    assert Run.objects.get(pk=fork_run.pk).status == Run.Status.SUCCEEDED
    forks = Dialogue.objects.filter(run=fork_run).select_related("parent")
    assert forks.count() == len(parents)
    for fork in forks:
        assert fork.parent is not None and turns_of(fork) == turns_of(fork.parent)
