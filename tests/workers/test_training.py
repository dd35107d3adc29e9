"""A training run from its frozen configuration to a registered, re-evaluated model, on the tiny
house model (in-process: the worker-process test is in tests/e2e)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from models_gpu.spec.run import RunConfigError
from models_gpu.spec.training import TrainingConfig
from tests.factories import ProtocolFactory, TaskFactory, TaskSetFactory, TeacherFactory, frozen_run
from tests.transcript_builders import attempt, feedback, store
from webapp.models_registry.models import ModelSpec
from webapp.runs.models import MetricPoint, Run
from webapp.runs.services import evaluation_config
from webapp.training.services import snapshot_create, training_run_config, training_run_create
from workers.training import execute_training

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

TINY = TrainingConfig(max_steps=4, batch_size=2, save_steps=2, logging_steps=1, seed=1)


@pytest.fixture
def launch(settings: Any, tmp_path: Path, tiny_model_dir: Path, researcher: Any) -> Any:
    settings.DIALAB_DATASETS_DIR = tmp_path / "datasets"
    settings.DIALAB_TRAINING_DIR = tmp_path / "training"
    task_set = TaskSetFactory()
    task = TaskFactory(task_set=task_set, prompt="What is 1 + 2?", reference={"answer": "3"})
    base = ModelSpec.objects.create(
        name="tiny", backend="transformers", location=str(tiny_model_dir)
    )
    protocol, teacher = ProtocolFactory(max_turns=2), TeacherFactory()
    source = frozen_run(name="collected", task_set=task_set, protocol=protocol)
    for sample in range(3):
        store(source, task.pk, sample, "a_late", [
            attempt("4", "4", False), feedback("Too high."), attempt("3", "3", True),
        ])  # fmt: skip

    def launch(training: TrainingConfig = TINY, base_model: ModelSpec = base) -> Run:
        snapshot = snapshot_create(name="solved", filter_query="outcome=solved", reader=researcher)
        evaluation = evaluation_config(
            task_set=task_set, protocol=protocol, student=base_model, teacher=teacher
        )
        config = training_run_config(
            base=base_model, snapshot=snapshot, training=training, evaluation=evaluation
        )
        return training_run_create(name="sft", config=config, created_by=researcher)

    launch.base = base  # type: ignore[attr-defined]
    return launch


def test_training_registers_the_model_with_lineage_and_evaluates_it_beside_the_base(
    launch: Any,
) -> None:
    run = launch()
    assert execute_training(run.pk, worker="test", background_heartbeat=False)
    run.refresh_from_db()
    assert run.status == Run.Status.SUCCEEDED, run.error
    assert (run.progress_done, run.progress_total) == (4, 4)
    losses = MetricPoint.objects.filter(run=run, name="loss").order_by("step")
    assert [point.step for point in losses] == [1, 2, 3, 4]
    assert MetricPoint.objects.filter(run=run, name="learning_rate").count() == 4

    trained = ModelSpec.objects.get(trained_by_run=run)
    assert trained.base_model == launch.base
    assert (Path(trained.location) / "config.json").is_file()
    evaluations = Run.objects.filter(kind=Run.Kind.EVAL).exclude(name="collected")
    by_student = {evaluation.student_id: evaluation for evaluation in evaluations}
    assert set(by_student) == {launch.base.pk, trained.pk}
    base_config = by_student[launch.base.pk].frozen_config
    trained_config = by_student[trained.pk].frozen_config
    assert trained_config.student.location == trained.location
    assert trained_config.task_set == base_config.task_set
    assert trained_config.protocol == base_config.protocol


def test_a_second_training_reuses_the_base_evaluation(launch: Any) -> None:
    first, second = launch(), launch(TrainingConfig(max_steps=2, batch_size=2, seed=2))
    for run in (first, second):
        execute_training(run.pk, worker="test", background_heartbeat=False)
    base_runs = Run.objects.filter(kind=Run.Kind.EVAL, student=launch.base)
    assert base_runs.count() == 1


def test_a_changed_snapshot_fails_the_run_with_the_reason(launch: Any) -> None:
    run = launch()
    path = Path(run.config["dataset"]["path"])
    path.write_text(path.read_text() + "\n", encoding="utf-8")
    execute_training(run.pk, worker="test", background_heartbeat=False)
    run.refresh_from_db()
    assert run.status == Run.Status.FAILED
    assert "changed since launch" in run.error
    assert not ModelSpec.objects.filter(trained_by_run=run).exists()


def test_a_base_that_is_not_a_checkpoint_is_refused_at_launch(launch: Any, tmp_path: Path) -> None:
    missing = ModelSpec.objects.create(
        name="gone", backend="transformers", location=str(tmp_path / "nowhere")
    )
    with pytest.raises(RunConfigError) as refused:
        launch(base_model=missing)
    assert [problem.field for problem in refused.value.problems] == ["base_model"]
    assert "not a directory" in str(refused.value)
    assert not Run.objects.filter(kind=Run.Kind.TRAIN).exists()


def test_a_cancel_stops_the_training_process_at_a_checkpoint(
    launch: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workers import training

    # No step-count checkpoint before the cancel's, however fast the steps run past step 3
    # before the worker's next read (a fast machine ran past step 50 and saved checkpoint-50).
    steps = 10_000
    run = launch(TrainingConfig(max_steps=steps, batch_size=2, save_steps=steps, logging_steps=1))
    record = training.ProgressReader.record

    def cancel_after_step_3(reader: Any, entry: Any) -> None:
        record(reader, entry)
        if entry.step == 3:  # as the cancel button does, while the process trains
            Run.objects.filter(pk=reader.run_id).update(cancel_requested=True)

    monkeypatch.setattr(training.ProgressReader, "record", cancel_after_step_3)
    execute_training(run.pk, worker="test", background_heartbeat=False)
    run.refresh_from_db()
    assert run.status == Run.Status.CANCELLED, run.error
    assert 3 <= run.progress_done < steps
    out = Path(run.config["dataset"]["path"]).parents[1] / "training"
    (checkpoint,) = out.glob("run-*/checkpoint-*")  # saved when it stopped
    assert int(checkpoint.name.removeprefix("checkpoint-")) == run.progress_done
    assert not ModelSpec.objects.filter(trained_by_run=run).exists()


def test_a_failing_training_process_fails_the_run_with_its_error(
    launch: Any, tmp_path: Path
) -> None:
    from transformers import AutoTokenizer

    from tests.models_gpu.training.test_encode import REWRITES_LAST

    rewriting = tmp_path / "rewriting"
    shutil.copytree(launch.base.location, rewriting)
    tokenizer = AutoTokenizer.from_pretrained(rewriting)
    tokenizer.chat_template = REWRITES_LAST
    tokenizer.save_pretrained(rewriting)
    base = ModelSpec.objects.create(
        name="rewrites", backend="transformers", location=str(rewriting)
    )
    run = launch(base_model=base)
    execute_training(run.pk, worker="test", background_heartbeat=False)
    run.refresh_from_db()
    assert run.status == Run.Status.FAILED
    assert "the training process exited with status 1" in run.error
    assert "ChatTemplateError" in run.error and "cannot express the sft layout" in run.error
