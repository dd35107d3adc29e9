"""An online SML run whose worker is killed (SIGKILL) between two checkpoints resumes, in a new
worker process, from its newest checkpoint, finishes and registers its model; the steps it
plays again store their rollouts once (the evidence of the resume itself is the offline drill's:
``tests/e2e/test_training_resume.py``)."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from django.db import transaction

from models_gpu.spec.online import OnlineConfig
from models_gpu.spec.training import TrainingConfig
from tests.e2e.test_training_resume import (
    HEARTBEAT_SECONDS,
    assert_registered_and_evaluated,
    kill_between_checkpoints,
    resume_in,
)
from tests.e2e.test_worker_resume import kill_worker
from tests.factories import ProtocolFactory, TaskFactory, TaskSetFactory, TeacherFactory
from webapp.dialogues.models import Dialogue
from webapp.models_registry.models import ModelSpec
from webapp.runs.models import MetricPoint, Run
from webapp.runs.services import evaluation_config
from webapp.training.selectors import training_output_dir
from webapp.training.services import (
    online_training_run_config,
    training_run_create,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

MAX_STEPS = 40  # a step of 4 short dialogues and its update: a fraction of a second on a CPU
SAVE_STEPS = 10
TRAINING = TrainingConfig(
    max_steps=MAX_STEPS, learning_rate=1e-3, seed=1, logging_steps=1, save_steps=SAVE_STEPS,
    device="cpu", precision="float32", gradient_checkpointing=False, max_length=256,
)  # fmt: skip
ONLINE = OnlineConfig(group_size=2, tasks_per_step=2, horizon=2, max_new_tokens=6, store_share=0.5)
STORED_PER_STEP = 2  # half of a step's 4 dialogues


def launch(tiny_model_dir: Path, researcher: Any) -> Run:
    training_set, held_out = TaskSetFactory(name="train"), TaskSetFactory(name="held out")
    for i in range(4):
        TaskFactory(
            task_set=training_set, position=i, prompt=f"What is {i} + 1?",
            reference={"answer": str(i + 1)},
        )  # fmt: skip
    TaskFactory(task_set=held_out, prompt="What is 5 + 1?", reference={"answer": "6"})
    base = ModelSpec.objects.create(
        name="tiny", backend="transformers", location=str(tiny_model_dir)
    )
    protocol, teacher = ProtocolFactory(max_turns=2), TeacherFactory()

    def run_config(task_set: Any) -> Any:
        return evaluation_config(
            task_set=task_set, protocol=protocol, student=base, teacher=teacher
        )

    config = online_training_run_config(
        base=base, rollouts=run_config(training_set), training=TRAINING, online=ONLINE,
        evaluation=run_config(held_out),
    )  # fmt: skip
    with transaction.atomic():
        run = training_run_create(name="resumed online", config=config, created_by=researcher)
        # Run ids start again with each test database, the data directory does not.
        shutil.rmtree(training_output_dir(run), ignore_errors=True)
    return run


def test_an_online_run_killed_mid_training_resumes_and_stores_each_rollout_once(
    start_worker, monkeypatch, tiny_model_dir, researcher
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("DIALAB_HEARTBEAT_SECONDS", str(HEARTBEAT_SECONDS))
    first = start_worker()
    run = launch(tiny_model_dir, researcher)
    killed_at, newest = kill_between_checkpoints(first, run, SAVE_STEPS, MAX_STEPS)
    # The steps after the checkpoint logged their rollouts before the kill, and the new attempt
    # plays them again: whether the first worker had read them or the second one records them
    # when it takes over, each must be stored once.
    run.refresh_from_db()
    replayed = list(range(newest + 1, killed_at + 1))

    second = start_worker()
    resume_in(second, run, newest, killed_at, run.progress_done, MAX_STEPS)

    stored = Dialogue.objects.filter(run=run)
    per_step = Counter(stored.values_list("training_step", flat=True))
    assert per_step == {step: STORED_PER_STEP for step in range(1, MAX_STEPS + 1)}, per_step
    assert len(set(stored.values_list("task_id", "sample_index"))) == stored.count()
    reward_steps = MetricPoint.objects.filter(run=run, name="reward").values_list("step", flat=True)
    assert sorted(reward_steps) == list(range(1, MAX_STEPS + 1)), "one reward point per step"
    assert_registered_and_evaluated(run)

    kill_worker(second)
    shutil.rmtree(training_output_dir(run), ignore_errors=True)
    print(f"killed at step {killed_at} (newest checkpoint-{newest}); replayed {replayed}")
