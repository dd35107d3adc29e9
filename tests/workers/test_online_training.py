"""An online SML run from its frozen configuration to a registered, re-evaluated model, on the
tiny house model (in-process worker; the training itself in its own process, as in production),
with and without a priming stage before it."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from models_gpu.spec.online import OnlineConfig
from models_gpu.spec.run import RunConfigError
from models_gpu.spec.training import TrainingConfig
from tests.factories import (
    ProtocolFactory,
    TaskFactory,
    TaskSetFactory,
    TeacherFactory,
    frozen_run,
)
from tests.transcript_builders import attempt, feedback, store
from webapp.dialogues.models import Dialogue
from webapp.models_registry.models import ModelSpec
from webapp.runs.models import MetricPoint, Run
from webapp.runs.services import evaluation_config
from webapp.training.selectors import training_output_dir
from webapp.training.services import (
    online_training_run_config,
    snapshot_create,
    training_run_create,
)
from workers.training import execute_training

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

TINY = TrainingConfig(
    max_steps=3, learning_rate=1e-3, seed=1, logging_steps=1, save_steps=2, device="cpu",
    precision="float32", gradient_checkpointing=False, max_length=256,
)  # fmt: skip
ONLINE = OnlineConfig(
    group_size=2, tasks_per_step=2, horizon=2, max_new_tokens=6, store_share=0.5, eval_every=2
)


@pytest.fixture
def launch(settings: Any, tmp_path: Path, tiny_model_dir: Path, researcher: Any) -> Any:
    settings.DIALAB_TRAINING_DIR = tmp_path / "training"
    training_set, held_out = TaskSetFactory(name="train"), TaskSetFactory(name="held out")
    for i in range(4):
        TaskFactory(
            task_set=training_set, prompt=f"What is {i} + 1?", reference={"answer": str(i + 1)}
        )
    for i in (5, 6):  # two tasks: each held-out dialogue counts, whatever its sample index
        TaskFactory(task_set=held_out, prompt=f"What is {i} + 1?", reference={"answer": str(i + 1)})
    base = ModelSpec.objects.create(
        name="tiny", backend="transformers", location=str(tiny_model_dir)
    )
    protocol, teacher = ProtocolFactory(max_turns=3), TeacherFactory()

    def run_config(task_set: Any) -> Any:
        return evaluation_config(
            task_set=task_set, protocol=protocol, student=base, teacher=teacher
        )

    def launch(online: OnlineConfig = ONLINE, priming: TrainingConfig | None = None) -> Run:
        snapshot = None
        if priming is not None:  # collected dialogues of the training tasks, to prime on
            source = frozen_run(name="collected", task_set=training_set, protocol=protocol)
            for sample, task in enumerate(training_set.tasks.all()):
                right = task.reference["answer"]
                store(source, task.pk, sample, "a_late", [
                    attempt("0", "0", False), feedback("Too low."), attempt(right, right, True),
                ])  # fmt: skip
            snapshot = snapshot_create(filter_query=f"run={source.pk}", reader=researcher)
        config = online_training_run_config(
            base=base, rollouts=run_config(training_set), training=TINY, online=online,
            evaluation=run_config(held_out), priming=priming, priming_snapshot=snapshot,
        )  # fmt: skip
        return training_run_create(name="online", config=config, created_by=researcher)

    launch.base = base  # type: ignore[attr-defined]
    return launch


def test_online_training_stores_curves_rollouts_and_the_trained_model(launch: Any) -> None:
    run = launch()
    assert execute_training(run.pk, worker="test", background_heartbeat=False)
    run.refresh_from_db()
    assert run.status == Run.Status.SUCCEEDED, run.error
    assert (run.progress_done, run.progress_total) == (3, 3)
    names = set(MetricPoint.objects.filter(run=run).values_list("name", flat=True))
    assert {"reward", "solved", "rollout_turn_1", "rollout_turn_2", "update_seconds"} <= names
    held_out = MetricPoint.objects.filter(run=run, name="heldout_solved_turn_3").order_by("step")
    assert [point.step for point in held_out] == [0, 2, 3], "before step 1, every 2 and at the end"
    played = MetricPoint.objects.filter(run=run, name="heldout_dialogues")
    held_out_dialogues = Run.objects.get(pk=run.pk).config["evaluation"]["task_set"]["task_count"]
    assert set(played.values_list("value", flat=True)) == {held_out_dialogues}, "each one counted"
    stored = Dialogue.objects.filter(run=run)
    assert sorted(set(stored.values_list("training_step", flat=True))) == [1, 2, 3]
    assert stored.count() == 3 * 2, "half of each step's 4 dialogues"
    assert len(set(stored.values_list("task_id", "sample_index"))) == 6
    trained = ModelSpec.objects.get(trained_by_run=run)
    assert trained.base_model == launch.base and "online SML" in trained.name
    students = set(Run.objects.filter(kind=Run.Kind.EVAL).values_list("student_id", flat=True))
    assert students == {launch.base.pk, trained.pk}


def test_an_online_configuration_out_of_range_is_refused_at_launch(launch: Any) -> None:
    with pytest.raises(RunConfigError, match="group_size"):
        launch(OnlineConfig(group_size=1))


def test_a_priming_stage_trains_first_and_grpo_starts_from_what_it_made(launch: Any) -> None:
    priming = replace(TINY, method="qpriming", max_steps=0, epochs=1, learning_rate=1e-3)
    run = launch(priming=priming)
    assert execute_training(run.pk, worker="test", background_heartbeat=False)
    run.refresh_from_db()
    assert run.status == Run.Status.SUCCEEDED, run.error
    out = training_output_dir(run)
    primed = out / "priming" / "final"
    assert (primed / "config.json").is_file()
    online_job = json.loads((out / "job.json").read_text())
    assert online_job["base_model"] == str(primed), "GRPO from the primed model"
    names = set(MetricPoint.objects.filter(run=run).values_list("name", flat=True))
    assert "priming_loss" in names and {"reward", "loss"} <= names
    assert (run.progress_done, run.progress_total) == (3, 3), "the last stage's progress"
    assert run.accounting["priming_steps"] >= 1 and run.accounting["optimizer_steps"] == 3
    trained = ModelSpec.objects.get(trained_by_run=run)
    assert trained.base_model == launch.base, "one lineage: the base, not the primed model"
    assert "qpriming + online SML" in trained.name and "first on dataset" in trained.description
    assert not ModelSpec.objects.filter(location=str(primed)).exists(), "not registered"

    # A worker that claims it again (as after a crash) trains nothing twice: both stages are done.
    priming_mtime = (primed / "dialab_training.json").stat().st_mtime
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING, finished_at=None)
    from workers.training import _train

    _train(run.pk)
    run.refresh_from_db()
    assert run.status == Run.Status.SUCCEEDED, run.error
    assert (primed / "dialab_training.json").stat().st_mtime == priming_mtime
    assert ModelSpec.objects.filter(trained_by_run=run).count() == 1
