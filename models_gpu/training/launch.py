"""A training job in processes of its own: one per GPU through ``accelerate launch`` on a host
with several GPUs, a single one otherwise (the same code path on a CPU).

The worker writes a ``TrainingJob`` to a file, starts ``launch_command(job_file)`` and, while it
runs, reads the progress the job appends to ``progress.jsonl`` (one JSON log entry per line, from
the main process) and asks it to stop by creating the ``STOP`` file; the main process decides and
every process stops at the same step, with a checkpoint saved. When the job ends, ``result.json``
holds its ``TrainResult``. A process of its own also gives the worker its memory back after every
job, and a crash in training (out of memory, a CUDA error) fails the job, not the worker.

    python -m models_gpu.training.launch JOB_FILE
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from models_gpu.spec.run import RoleSpec
from models_gpu.spec.training import TrainingConfig
from models_gpu.training.qpriming import QuestionRequest, model_writer, template_writer
from models_gpu.types import Generator

PROGRESS_FILE = "progress.jsonl"
STOP_FILE = "STOP"
RESULT_FILE = "result.json"


@dataclass(frozen=True)
class TrainingJob:
    """What ``train`` is called with: the configuration, the base checkpoint, the snapshot file
    (one ``TrainingDialogue`` JSON per line), the output directory and, for Q-priming, the model
    that writes the questions (None: the configuration's template)."""

    config: TrainingConfig
    base_model: str
    examples: str
    output_dir: str
    question_writer: RoleSpec | None = None

    @property
    def progress_path(self) -> Path:
        return Path(self.output_dir) / PROGRESS_FILE

    @property
    def stop_path(self) -> Path:
        return Path(self.output_dir) / STOP_FILE

    @property
    def result_path(self) -> Path:
        return Path(self.output_dir) / RESULT_FILE

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "config": self.config.to_json()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TrainingJob:
        writer = data.get("question_writer")
        return cls(
            **{
                **data,
                "config": TrainingConfig.from_json(data["config"]),
                "question_writer": RoleSpec(**writer) if writer else None,
            }
        )


class LoadedQuestionWriter:
    """Q-priming's model writer, loaded at its first question (a resumed job whose dataset is
    on disk never loads it) and let go by ``close`` (the trainer closes it once the dataset is
    written, so the writer's model does not sit in memory during training)."""

    def __init__(self, spec: RoleSpec, config: TrainingConfig) -> None:
        self.spec = spec
        self.config = config
        self.generator: Generator | None = None

    def __call__(self, requests: Sequence[QuestionRequest]) -> list[str]:
        if self.generator is None:
            from models_gpu.backends import load_generator

            self.generator = load_generator(self.spec)
        fallback = template_writer(self.config.qpriming_question_template)
        write = model_writer(self.generator, seed=self.config.seed, fallback=fallback)
        return write(requests)

    def close(self) -> None:
        generator, self.generator = self.generator, None
        close = getattr(generator, "close", None)
        if close is not None:
            close()


def processes_for(device: str) -> int:
    """How many processes train: one per visible GPU when ``device`` lets training use them all
    ("auto" or "cuda") and there are several; else one."""
    if device not in ("auto", "cuda"):
        return 1
    import torch

    return max(1, torch.cuda.device_count()) if torch.cuda.is_available() else 1


def launch_command(job_file: str | Path, processes: int) -> list[str]:
    """The command that runs the job in ``processes`` processes."""
    module = ["-m", "models_gpu.training.launch", str(job_file)]
    if processes <= 1:
        return [sys.executable, *module]
    launcher = ["-m", "accelerate.commands.launch", "--multi_gpu"]
    return [sys.executable, *launcher, "--num_processes", str(processes), *module]


def run(job: TrainingJob) -> None:
    """Train as the job says, reporting to its files (what each launched process runs)."""
    from accelerate import PartialState

    from models_gpu.spec.training import TrainingDialogue
    from models_gpu.training.trainer import train

    def dialogues() -> Any:
        with open(job.examples, encoding="utf-8") as snapshot:
            for line in snapshot:
                yield TrainingDialogue.from_json(json.loads(line))

    def report(entry: Mapping[str, Any]) -> None:
        with job.progress_path.open("a", encoding="utf-8") as progress:
            progress.write(json.dumps(dict(entry)) + "\n")

    job.stop_path.unlink(missing_ok=True)  # a stop asked of an earlier attempt is not this one's
    result = train(
        job.config,
        base_model=job.base_model,
        examples=dialogues,
        output_dir=job.output_dir,
        on_log=report,
        should_stop=job.stop_path.exists,
        write_question=(
            LoadedQuestionWriter(job.question_writer, job.config) if job.question_writer else None
        ),
    )
    if PartialState().is_main_process:
        job.result_path.write_text(json.dumps(asdict(result), indent=2) + "\n", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    job = TrainingJob.from_json(json.loads(Path(args[0]).read_text(encoding="utf-8")))
    run(job)
    return 0


if __name__ == "__main__":
    sys.exit(main())
