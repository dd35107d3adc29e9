"""A training job in processes of its own: one per GPU through ``accelerate launch`` on a host
with several GPUs, a single one otherwise (the same code path on a CPU).

The worker writes a ``TrainingJob`` to a file, starts ``launch_command(job_file)`` and, while it
runs, reads the progress the job appends to ``progress.jsonl`` (one JSON log entry per line, from
the main process) and asks it to stop by creating the ``STOP`` file; the main process decides and
every process stops at the same step, with a checkpoint saved. When the job ends, ``result.json``
holds its ``TrainResult``. A process of its own also gives the worker its memory back after every
job, and a crash in training (out of memory, a CUDA error) fails the job, not the worker.

An online job (``OnlineTrainingJob``: online SML, the policy playing its own dialogues) runs
the same way; its stored share of every step's dialogues goes to ``rollouts.jsonl`` (one
``{"step": s, "dialogue": DialogueRow}`` per line) for the worker to store.

    python -m models_gpu.training.launch JOB_FILE
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from models_gpu.spec.online import OnlineConfig
from models_gpu.spec.reports import Report
from models_gpu.spec.run import RoleSpec, RunConfig
from models_gpu.spec.training import TrainingConfig
from models_gpu.training.qpriming import QuestionRequest, model_writer, template_writer
from models_gpu.types import DialogueJob, Generator, TaskSpec

PROGRESS_FILE = "progress.jsonl"
ROLLOUTS_FILE = "rollouts.jsonl"
STOP_FILE = "STOP"
RESULT_FILE = "result.json"


class JobFiles:
    """Where a job's processes report, under its output directory."""

    output_dir: str

    @property
    def progress_path(self) -> Path:
        return Path(self.output_dir) / PROGRESS_FILE

    @property
    def stop_path(self) -> Path:
        return Path(self.output_dir) / STOP_FILE

    @property
    def result_path(self) -> Path:
        return Path(self.output_dir) / RESULT_FILE

    @property
    def rollouts_path(self) -> Path:
        return Path(self.output_dir) / ROLLOUTS_FILE


@dataclass(frozen=True)
class TrainingJob(JobFiles):
    """What ``train`` is called with: the configuration, the base checkpoint, the snapshot file
    (one ``TrainingDialogue`` JSON per line), the output directory and, for Q-priming, the model
    that writes the questions (None: the configuration's template)."""

    config: TrainingConfig
    base_model: str
    examples: str
    output_dir: str
    question_writer: RoleSpec | None = None

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


@dataclass(frozen=True)
class OnlineTrainingJob(JobFiles):
    """What ``online.train_online`` is called with. ``rollouts``: the configuration the policy
    plays (its protocol and teacher; its task set's tasks are in ``tasks``); ``evaluation``: the
    held-out configuration (its protocol, and the student's sampling params), whose jobs are in
    ``heldout``. Tasks and jobs are files of JSON lines (``task_to_json``, ``job_to_json``).
    ``sample_offset(step)`` numbers a stored rollout so that every step's are distinct."""

    config: TrainingConfig
    online: OnlineConfig
    base_model: str
    rollouts: RunConfig
    tasks: str
    evaluation: RunConfig | None
    heldout: str
    output_dir: str

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "online",
            **asdict(self),
            "config": self.config.to_json(),
            "online": self.online.to_json(),
            "rollouts": self.rollouts.to_json(),
            "evaluation": self.evaluation.to_json() if self.evaluation else None,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> OnlineTrainingJob:
        data = {key: value for key, value in data.items() if key != "kind"}
        evaluation = data["evaluation"]
        return cls(
            **{
                **data,
                "config": TrainingConfig.from_json(data["config"]),
                "online": OnlineConfig.from_json(data["online"]),
                "rollouts": RunConfig.from_json(data["rollouts"]),
                "evaluation": RunConfig.from_json(evaluation) if evaluation else None,
            }
        )


def task_to_json(task: TaskSpec) -> dict[str, Any]:
    return asdict(task)


def task_from_json(data: Mapping[str, Any]) -> TaskSpec:
    return TaskSpec(**{**data, "shards": tuple(data["shards"])})


def job_to_json(job: DialogueJob) -> dict[str, Any]:
    return {"task": task_to_json(job.task), "sample_index": job.sample_index, "seed": job.seed}


def job_from_json(data: Mapping[str, Any]) -> DialogueJob:
    return DialogueJob(task_from_json(data["task"]), data["sample_index"], data["seed"])


def read_lines(path: str) -> list[Any]:
    with open(path, encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


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


def reporter(path: Path) -> Callable[[Report], None]:
    """``on_log`` for a training process: each report appended to ``path`` as a JSON line
    (``spec.reports.report_from_json`` reads it back)."""

    def report(entry: Report) -> None:
        with path.open("a", encoding="utf-8") as progress:
            progress.write(json.dumps(entry.to_json()) + "\n")

    return report


def run(job: TrainingJob) -> None:
    """Train as the job says, reporting to its files (what each launched process runs)."""
    from accelerate import PartialState

    from models_gpu.spec.training import TrainingDialogue
    from models_gpu.training.trainer import train

    def dialogues() -> Any:
        with open(job.examples, encoding="utf-8") as snapshot:
            for line in snapshot:
                yield TrainingDialogue.from_json(json.loads(line))

    job.stop_path.unlink(missing_ok=True)  # a stop asked of an earlier attempt is not this one's
    result = train(
        job.config,
        base_model=job.base_model,
        examples=dialogues,
        output_dir=job.output_dir,
        on_log=reporter(job.progress_path),
        should_stop=job.stop_path.exists,
        write_question=(
            LoadedQuestionWriter(job.question_writer, job.config) if job.question_writer else None
        ),
    )
    if PartialState().is_main_process:
        job.result_path.write_text(json.dumps(result.to_json(), indent=2) + "\n", encoding="utf-8")


def run_online(job: OnlineTrainingJob) -> None:
    """Train online as the job says, reporting to its files."""
    from accelerate import PartialState

    from models_gpu.backends import load_generator
    from models_gpu.results import dialogue_row
    from models_gpu.training.online import train_online

    def store(step: int, results: Sequence[Any]) -> None:
        # A rollout's sample index is its place in its step: numbered on across steps, so that
        # every stored dialogue of the run has its own (task, sample).
        offset = (step - 1) * job.online.dialogues_per_step
        with job.rollouts_path.open("a", encoding="utf-8") as rollouts:
            for result in results:
                numbered = replace(result, sample_index=offset + result.sample_index)
                row = dialogue_row(numbered).to_json()
                rollouts.write(json.dumps({"step": step, "dialogue": row}) + "\n")

    rollouts, evaluation = job.rollouts, job.evaluation
    teacher = load_generator(rollouts.teacher) if rollouts.teacher else None
    heldout_protocol = evaluation.protocol if evaluation else None
    # The held-out curve is the final evaluation's configuration: its own teacher too.
    heldout_teacher = (
        load_generator(evaluation.teacher)
        if evaluation and evaluation.teacher and evaluation.teacher != rollouts.teacher
        else None
    )
    job.stop_path.unlink(missing_ok=True)
    result = train_online(
        job.config,
        job.online,
        base_model=job.base_model,
        tasks=[task_from_json(task) for task in read_lines(job.tasks)],
        protocol=rollouts.protocol,
        teacher=teacher,
        output_dir=job.output_dir,
        heldout=[job_from_json(item) for item in read_lines(job.heldout)],
        heldout_protocol=heldout_protocol,
        heldout_teacher=heldout_teacher,
        heldout_params=_student_params(evaluation) if evaluation else None,
        on_log=reporter(job.progress_path),
        on_rollouts=store,
        should_stop=job.stop_path.exists,
    )
    if PartialState().is_main_process:
        job.result_path.write_text(json.dumps(result.to_json(), indent=2) + "\n", encoding="utf-8")


def _student_params(config: RunConfig) -> dict[str, Any]:
    """The evaluation student's sampling params that the policy's generator takes."""
    from models_gpu.spec.backends import BACKENDS

    known = {setting.name for setting in BACKENDS["transformers"].params}
    return {name: value for name, value in config.student.params.items() if name in known}


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    data = json.loads(Path(args[0]).read_text(encoding="utf-8"))
    if data.get("kind") == "online":
        run_online(OnlineTrainingJob.from_json(data))
    else:
        run(TrainingJob.from_json(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
