"""How a training job is launched: one process, or one per GPU through accelerate; what the
process loads for it (Q-priming's question writer)."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from models_gpu.backends import load_generator
from models_gpu.spec.reports import TrainResult
from models_gpu.spec.run import RoleSpec
from models_gpu.spec.training import TrainingConfig
from models_gpu.training.launch import (
    LoadedQuestionWriter,
    TrainingJob,
    launch_command,
    processes_for,
    run,
)
from models_gpu.training.qpriming import QuestionRequest, model_writer, template_writer
from tests.models_gpu.training.dialogues import didactic


def test_one_process_runs_the_module_and_several_go_through_accelerate() -> None:
    assert launch_command("/out/job.json", 1) == [
        sys.executable, "-m", "models_gpu.training.launch", "/out/job.json",
    ]  # fmt: skip
    several = launch_command("/out/job.json", 4)
    assert several[:3] == [sys.executable, "-m", "accelerate.commands.launch"]
    assert "--multi_gpu" in several and several[several.index("--num_processes") + 1] == "4"
    assert several[-3:] == ["-m", "models_gpu.training.launch", "/out/job.json"]


def test_a_named_device_trains_in_one_process() -> None:
    assert processes_for("cpu") == processes_for("cuda:1") == 1
    assert processes_for("auto") >= 1  # the GPUs visible here, or 1 without CUDA


def test_a_job_reads_back_what_it_wrote() -> None:
    job = TrainingJob(
        config=TrainingConfig(method="critique", max_steps=3),
        base_model="/models/base",
        examples="/data/datasets/abc.jsonl",
        output_dir="/data/training/run-1-abc",
    )
    assert TrainingJob.from_json(job.to_json()) == job
    assert str(job.stop_path) == "/data/training/run-1-abc/STOP"


@pytest.mark.slow
def test_a_model_writes_q_primings_questions_and_is_let_go_before_training(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    """The job's question writer, a real transformers model (the tiny house model), writes the
    questions of the stream a chunk at a time; the trainer closes it before training."""
    pytest.importorskip("trl")
    snapshot = tmp_path / "snapshot.jsonl"
    dialogues = [replace(didactic(), dialogue_id=i) for i in range(1, 6)]
    snapshot.write_text("".join(json.dumps(asdict(d)) + "\n" for d in dialogues))
    writer = RoleSpec("transformers", str(tiny_model_dir), {"max_new_tokens": 6}, 7, "writer")
    job = TrainingJob(
        config=TrainingConfig(
            method="qpriming", qpriming_decay=1.0, max_steps=1, batch_size=2, device="cpu",
            precision="float32", gradient_checkpointing=False, save_steps=1000,
            qpriming_question_template="TEMPLATE QUESTION",
        ),
        base_model=str(tiny_model_dir),
        examples=str(snapshot),
        output_dir=str(tmp_path / "out"),
        question_writer=writer,
    )  # fmt: skip
    assert TrainingJob.from_json(json.loads(json.dumps(job.to_json()))) == job
    loaded: list[LoadedQuestionWriter] = []
    original = LoadedQuestionWriter.close

    def close(self: LoadedQuestionWriter) -> None:
        loaded.append(self)
        assert self.generator is not None, "the model was loaded to write the questions"
        original(self)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(LoadedQuestionWriter, "close", close)
        run(job)
    assert len(loaded) == 1 and loaded[0].generator is None
    result = TrainResult.from_json(json.loads(job.result_path.read_text()))
    assert result.dataset is not None and result.dataset.examples == 5 and result.final_dir

    # What was trained: every failed attempt became what the model wrote (the same text as the
    # writer gives for the same request again), or the template where it wrote nothing.
    from transformers import AutoTokenizer

    from models_gpu.training.trainer import load_encoded_dataset

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    rows = load_encoded_dataset(Path(job.output_dir) / "dataset")
    generator = load_generator(writer)
    fallback = template_writer("TEMPLATE QUESTION")
    again = model_writer(generator, seed=job.config.seed, fallback=fallback)
    written = []
    for dialogue, row in zip(dialogues, rows, strict=True):
        questions = again([QuestionRequest(dialogue, 0), QuestionRequest(dialogue, 2)])
        written += questions
        trained = tokenizer.decode([t for t in row["labels"] if t != -100])
        for question in questions:
            assert question.strip() and question in trained
        assert "The answer is 18." not in trained and "The answer is 19." in trained
    assert any(question != "TEMPLATE QUESTION" for question in written), "the model wrote them"
