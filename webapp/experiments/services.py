"""Launching experiments: a Lost-in-Conversation experiment is three evaluation runs."""

from __future__ import annotations

from functools import partial

from django.db import transaction

from webapp.accounts.models import User
from webapp.experiments.models import LostInConversation
from webapp.models_registry.models import ModelSpec
from webapp.runs.models import Protocol
from webapp.runs.services import evaluation_run_create
from webapp.tasks.models import TaskSet
from webapp.tasks.services import task_set_with_shards_concatenated

ONE_TURN_PROTOCOL = "Lost in Conversation: one turn (FULL, CONCAT)"


def sharded_protocol_name(max_turns: int) -> str:
    return f"Lost in Conversation: SHARDED, {max_turns} turns"


def _protocol(name: str, mode: str, max_turns: int) -> Protocol:
    """The protocol of a condition, made the first time it is needed. An edited one is used as
    it is now: each run freezes what it played."""
    protocol, _ = Protocol.objects.get_or_create(
        name=name, defaults={"mode": mode, "max_turns": max_turns}
    )
    return protocol


@transaction.atomic
def lic_experiment_create(
    *,
    name: str,
    task_set: TaskSet,
    student: ModelSpec,
    user_simulator: ModelSpec,
    repeats: int,
    max_turns: int,
    seed: int,
    created_by: User | None,
) -> LostInConversation:
    """The three runs, queued, and the experiment that ties them. ``ValueError`` when a task has
    no shards, ``RunConfigError`` when a run could not play; nothing is created either way."""
    concat_set = task_set_with_shards_concatenated(task_set=task_set, created_by=created_by)
    one_turn = _protocol(ONE_TURN_PROTOCOL, Protocol.Mode.SINGLE_TURN, 1)
    sharded = _protocol(sharded_protocol_name(max_turns), Protocol.Mode.SHARDED, max_turns)
    run_create = partial(
        evaluation_run_create,
        student=student, samples_per_task=repeats, seed=seed, created_by=created_by,
    )  # fmt: skip
    runs = {
        "full_run": run_create(name=f"{name}: FULL", task_set=task_set, protocol=one_turn),
        "concat_run": run_create(name=f"{name}: CONCAT", task_set=concat_set, protocol=one_turn),
        "sharded_run": run_create(
            name=f"{name}: SHARDED", task_set=task_set, protocol=sharded,
            user_simulator=user_simulator,
        ),
    }  # fmt: skip
    return LostInConversation.objects.create(
        name=name, task_set=task_set, student=student, user_simulator=user_simulator,
        repeats=repeats, max_turns=max_turns, seed=seed, created_by=created_by, **runs,
    )  # fmt: skip
