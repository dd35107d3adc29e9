"""Run a training job: claim the run, read its frozen configuration, check the dataset snapshot
against its hash, fine-tune (``models_gpu.training``), then register the trained model and
launch its held-out evaluation beside the base model's.

An online run with a priming stage trains in two stages, each in its own processes: the
priming (SFT or Q-priming on the dataset, in ``priming/`` under the run's output directory),
then GRPO from the primed model. The run's progress is its current stage's; the priming stage's
curves are named "priming_loss", ...

A restarted job resumes: the trainer continues from the newest checkpoint in the run's output
directory (weights, optimizer, scheduler, data position), a stage that finished returns what it
made, and registering and launching the evaluations find what an earlier attempt already made.
Cancelling saves a checkpoint and stops within a step.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from models_gpu.spec.reports import (
    PRIMING_PREFIX,
    Accounting,
    Report,
    StepReport,
    TrainResult,
    report_from_json,
)
from models_gpu.spec.results import DialogueRow
from models_gpu.spec.training_run import NOTHING_TO_TRAIN, DatasetRef, TrainingRunConfig
from models_gpu.training.launch import OnlineTrainingJob, TrainingJob, job_to_json, task_to_json
from webapp.runs import services as runs
from webapp.runs.models import Run
from webapp.runs.services import dialogues_store
from webapp.training import services
from webapp.training.models import TrainingPreview
from webapp.training.selectors import preview_selection, training_run_to_play
from workers.claimed import CancelWatch, execute_claimed
from workers.evaluation import dialogue_jobs, run_tasks

logger = logging.getLogger(__name__)

READ_BLOCK = 1 << 20
POLL_SECONDS = 0.5  # how often the worker reads the training's progress and its cancel
JOB_LOG = "job.log"  # the training processes' output, in the run's output directory
PRIMING_DIR = "priming"  # the priming stage's output directory, in the run's
PR_SET_PDEATHSIG = 1


class DatasetChanged(Exception):
    """The snapshot file is missing or its bytes are not the ones frozen at launch."""


def check_snapshot(dataset: DatasetRef) -> None:
    path = Path(dataset.path)
    if not path.is_file():
        raise DatasetChanged(f"the dataset snapshot file {path} is missing")
    digest = hashlib.sha256()
    with path.open("rb") as snapshot:
        while block := snapshot.read(READ_BLOCK):
            digest.update(block)
    if digest.hexdigest() != dataset.sha256:
        raise DatasetChanged(
            f"the dataset snapshot file {path} changed since launch (sha256 "
            f"{digest.hexdigest()[:12]}, launched with {dataset.sha256[:12]})"
        )


class AppendedLines:
    """The JSON lines appended to a file since the last read (a line still being written waits
    for the next read)."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset = path, 0

    def read_new(self) -> list[Any]:
        if not self.path.exists():
            return []
        with self.path.open("rb") as appended:
            appended.seek(self.offset)
            data = appended.read()
        complete = data[: data.rfind(b"\n") + 1]
        self.offset += len(complete)
        return [json.loads(line) for line in complete.decode("utf-8").splitlines()]


class ProgressReader:
    """Records the training processes' log entries (``progress.jsonl``) as they are appended:
    metric points and the run's progress by step; and, of online training, the stored rollouts
    (``rollouts.jsonl``) as dialogues of the run, each with its step."""

    def __init__(
        self, run_id: int, path: Path, rollouts: Path | None = None, curves: str = ""
    ) -> None:
        self.run_id = run_id
        self.progress = AppendedLines(path)
        self.rollouts = AppendedLines(rollouts) if rollouts else None
        self.curves = curves  # the prefix of the curves' names

    def read_new(self) -> None:
        # A step's rollouts are written before its log entry: read after the entries and stored
        # before them, so that a run's progress at step s means its rollouts up to s are stored.
        entries = self.progress.read_new()
        for line in self.rollouts.read_new() if self.rollouts else []:
            dialogue = DialogueRow.from_json(line["dialogue"])
            dialogues_store(run_id=self.run_id, dialogues=[dialogue], training_step=line["step"])
        reports = [report_from_json(entry) for entry in entries]
        for report in reports:
            self.record(report)
        # The run's progress once per read, at the newest step: reading a long log again (when
        # taking over) must not walk the run's progress through every step it logged.
        steps = [report for report in reports if isinstance(report, StepReport)]
        if steps:
            services.training_progress(
                run_id=self.run_id, step=steps[-1].step, total_steps=steps[-1].total_steps
            )

    def take_over(self) -> None:
        """Before this attempt's processes start: record what an earlier attempt logged after
        its worker last read the files (a killed worker read them every ``POLL_SECONDS``), then
        start over on empty files. The new attempt does not log again the steps up to the
        checkpoint it resumes from, so without this their points and rollouts would be lost.
        Recording is idempotent (a step's first value and a sample's first dialogue are kept):
        what was recorded before is read again harmlessly."""
        self.read_new()
        for lines in (self.progress, self.rollouts):
            if lines is not None:
                lines.path.unlink(missing_ok=True)
                lines.offset = 0

    def record(self, report: Report) -> None:
        values = {self.curves + name: value for name, value in report.curves().items()}
        services.metric_points_record(run_id=self.run_id, step=report.step, values=values)


class TrainingProcessFailed(Exception):
    """The training process exited with an error (its last lines say which)."""


def run_training_job(
    job: TrainingJob | OnlineTrainingJob, progress: ProgressReader, watch: CancelWatch
) -> TrainResult:
    """Run ``job`` in its own process(es) (``models_gpu.training.launch``), recording its
    progress and passing on a cancel; how it ended."""
    from models_gpu.training.launch import launch_command, processes_for

    out = Path(job.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    job_file = out / "job.json"
    job_file.write_text(json.dumps(job.to_json(), indent=2) + "\n", encoding="utf-8")
    job.result_path.unlink(missing_ok=True)
    progress.take_over()
    command = launch_command(job_file, processes_for(job.config.device))
    with (out / JOB_LOG).open("ab") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent
        )
        try:
            while process.poll() is None:
                time.sleep(POLL_SECONDS)
                progress.read_new()
                if watch():
                    job.stop_path.touch()  # again each time: the job clears it when it starts
        finally:
            if process.poll() is None:  # this worker is stopping: so does its training
                process.kill()
                process.wait()
    progress.read_new()
    if process.returncode != 0 or not job.result_path.exists():
        raise TrainingProcessFailed(_failure(out / JOB_LOG, process.returncode))
    return TrainResult.from_json(json.loads(job.result_path.read_text(encoding="utf-8")))


def _die_with_parent() -> None:
    """In the training process, before it starts: die when the worker dies (Linux), so that a
    killed worker never leaves a training process writing to a run another worker resumes."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _failure(log: Path, returncode: int | None) -> str:
    """The error a failed training process ended with: the last line of its traceback."""
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    errors = [line for line in lines if re.match(r"^[\w.]+(Error|Exception)\b.*:", line)]
    last = errors[-1] if errors else (lines[-1] if lines else "no output")
    return f"the training process exited with status {returncode}: {last} (log: {log})"


def dataset_job(config: TrainingRunConfig, out: Path, base_model: str) -> TrainingJob:
    """Fine-tuning ``base_model`` on the run's dataset snapshot (checked against its hash
    first): an offline run, or an online run's priming stage."""
    assert config.dataset is not None, "a dataset to train on"
    check_snapshot(config.dataset)
    return TrainingJob(
        config=config.dataset_training,
        base_model=base_model,
        examples=config.dataset.path,
        output_dir=str(out),
        question_writer=config.question_writer,
    )


def online_job(config: TrainingRunConfig, out: Path, base_model: str) -> OnlineTrainingJob:
    """Online SML from ``base_model``: the training tasks and the held-out jobs written where
    the training process reads them (``TaskSetChanged`` when a task set changed since launch)."""
    assert config.online is not None and config.rollouts is not None, "an online run"
    out.mkdir(parents=True, exist_ok=True)
    tasks, heldout = out / "tasks.jsonl", out / "heldout.jsonl"
    _write_lines(tasks, [task_to_json(task) for task in run_tasks(config.rollouts)])
    evaluation = config.evaluation
    jobs = dialogue_jobs(evaluation, run_tasks(evaluation)) if evaluation else []
    _write_lines(heldout, [job_to_json(job) for job in jobs])
    return OnlineTrainingJob(
        config=config.training,
        online=config.online,
        base_model=base_model,
        rollouts=config.rollouts,
        tasks=str(tasks),
        evaluation=evaluation,
        heldout=str(heldout),
        output_dir=str(out),
    )


def _write_lines(path: Path, items: list[Any]) -> None:
    path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")


def execute_training(run_id: int, *, worker: str, background_heartbeat: bool = True) -> bool:
    """Claim the run and train what is left of it; False when it could not be claimed
    (``workers.claimed``)."""
    return execute_claimed(run_id, _train, worker=worker, background_heartbeat=background_heartbeat)


def _train(run_id: int) -> None:
    run = training_run_to_play(run_id=run_id)
    if run.attempts > 1:
        logger.info("run %s: claimed again (attempt %s)", run_id, run.attempts)
    stages = _train_stages(run_id, run.config, run.output_dir, CancelWatch(run_id))
    if stages is None:
        runs.run_finish(run_id=run_id, status=Run.Status.CANCELLED)
        return
    result, primed = stages
    assert result.final_dir is not None, "a stage that was not stopped made its model"
    trained = services.trained_model_register(run_id=run_id, location=result.final_dir)
    services.evaluations_launch(run_id=run_id, trained=trained)
    runs.run_finish(
        run_id=run_id, status=Run.Status.SUCCEEDED, accounting=training_accounting(result, primed)
    )


def training_accounting(result: TrainResult, primed: TrainResult | None) -> Accounting:
    """What a training run spent: its optimizer steps and wall time (the priming stage's
    added), and the examples it trained on."""
    dataset, priming = result.dataset, primed.dataset if primed else None
    return Accounting(
        optimizer_steps=result.global_step,
        examples=dataset.examples if dataset else None,
        trained_tokens_per_epoch=dataset.trained_tokens if dataset else None,
        priming_steps=primed.global_step if primed else None,
        priming_examples=priming.examples if priming else None,
        wall_seconds=result.wall_seconds + (primed.wall_seconds if primed else 0.0),
    )


def _train_stages(
    run_id: int, config: TrainingRunConfig, out: Path, watch: CancelWatch
) -> tuple[TrainResult, TrainResult | None] | None:
    """Train the run's priming stage, if it has one, then its own training from the model the
    priming made; (the training's result, the priming's or None), or None when cancelled."""
    base_model, primed = config.base.location, None
    if config.priming is not None:
        job = dataset_job(config, out / PRIMING_DIR, base_model)
        primed = _run_stage(
            run_id,
            job,
            ProgressReader(run_id, job.progress_path, curves=PRIMING_PREFIX),
            watch,
        )
        if primed is None:
            return None
        assert primed.final_dir is not None, "a finished priming stage made its model"
        base_model = primed.final_dir
    if config.is_online:
        online = online_job(config, out, base_model)
        reader = ProgressReader(run_id, online.progress_path, online.rollouts_path)
        result = _run_stage(run_id, online, reader, watch)
    else:
        offline = dataset_job(config, out, base_model)
        result = _run_stage(run_id, offline, ProgressReader(run_id, offline.progress_path), watch)
    return None if result is None else (result, primed)


def _run_stage(
    run_id: int, job: TrainingJob | OnlineTrainingJob, reader: ProgressReader, watch: CancelWatch
) -> TrainResult | None:
    """Run one stage of the run's training; its result, or None when it stopped on a cancel."""
    result = run_training_job(job, reader, watch)
    if result.resumed_from:
        logger.info("run %s: resumed from %s", run_id, result.resumed_from)
    return None if result.stopped else result


# A preview tokenizes this many dialogues of the selection (the first by id) and scales its
# counts to the whole selection.
PREVIEW_SAMPLE = 200


def build_preview(preview_id: int, *, heartbeat: bool) -> bool:
    """The launch form's preview (``models_gpu.training.preview``), or why there is none;
    ``heartbeat``: keep the preview's heartbeat fresh while it is built (not when run eagerly).
    False when it was not taken (``preview_claim``)."""
    from models_gpu.training.preview import training_preview
    from webapp.core.interactive_jobs import JobHeartbeat

    if not services.preview_claim(preview_id=preview_id):
        return False
    with JobHeartbeat(TrainingPreview, preview_id, enabled=heartbeat):
        selection = preview_selection(preview_id=preview_id, sample_size=PREVIEW_SAMPLE)
        if not selection.sample:
            services.preview_record(preview_id=preview_id, result=None, error=NOTHING_TO_TRAIN)
            return True
        try:
            result = training_preview(
                selection.base_model,
                selection.sample,
                selected=selection.selected,
                config=selection.training,
            )
        except (OSError, ValueError) as error:  # no tokenizer there; ChatTemplateError: ValueError
            services.preview_record(preview_id=preview_id, result=None, error=str(error))
            return True
    services.preview_record(preview_id=preview_id, result=result)
    return True
