"""How a training job is launched: one process, or one per GPU through accelerate."""

from __future__ import annotations

import sys

from models_gpu.spec.training import TrainingConfig
from models_gpu.training.launch import TrainingJob, launch_command, processes_for


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
