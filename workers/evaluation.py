"""Run an evaluation: claim the run, build plain specs, drive the engine, store what finishes.

The database is the truth: dialogues are stored as they finish, progress is their count, and a
restarted or re-delivered job runs only the (task, sample) pairs not stored yet.
"""

from __future__ import annotations

import logging
import time
import traceback
from datetime import timedelta
from typing import Any

from django.conf import settings

from models_gpu.backends import load_generator
from models_gpu.engine import EngineStats, run_dialogues
from models_gpu.types import DialogueJob, DialogueResult, TurnRecord
from webapp.dialogues.services import dialogues_store
from webapp.runs import services
from webapp.runs.models import Run
from webapp.runs.selectors import run_stored_dialogue_keys
from webapp.tasks.selectors import task_payloads
from workers.specs import dialogue_seed, protocol_spec, role_spec, task_spec

logger = logging.getLogger(__name__)


def pending_jobs(run: Run) -> list[DialogueJob]:
    """Every (task, sample) of the run that has no stored dialogue yet."""
    stored = run_stored_dialogue_keys(run_id=run.pk)
    jobs = []
    for payload in task_payloads(task_set_id=run.task_set_id):
        task = task_spec(payload)
        for sample_index in range(run.samples_per_task):
            if (task.task_id, sample_index) not in stored:
                seed = dialogue_seed(run.seed, task.task_id, sample_index)
                jobs.append(DialogueJob(task=task, sample_index=sample_index, seed=seed))
    return jobs


def turn_row(turn: TurnRecord) -> dict[str, Any]:
    verdict = turn.verdict
    return {
        "index": turn.index,
        "round": turn.round,
        "role": turn.role,
        "kind": turn.kind,
        "text": turn.text,
        "private_context": dict(turn.private_context),
        "extracted_answer": (verdict.extracted or "") if verdict else "",
        "is_correct": verdict.correct if verdict else None,
        "score": verdict.score if verdict else None,
        "verdict_details": dict(verdict.details) if verdict else {},
        "leak_flag": False,
        "prompt_tokens": turn.prompt_tokens,
        "completion_tokens": turn.completion_tokens,
        "latency_ms": turn.latency_ms,
    }


def dialogue_row(result: DialogueResult) -> dict[str, Any]:
    return {
        "task_id": result.task_id,
        "sample_index": result.sample_index,
        "seed": result.seed,
        "outcome": "solved" if result.solved else "unsolved",
        "first_correct_turn": result.first_correct_turn,
        "num_turns": max((t.round for t in result.turns), default=0),
        "end_reason": result.end_reason,
        "turns": [turn_row(turn) for turn in result.turns],
    }


class CancelWatch:
    """Answers the engine's "should I stop?" from the database, at most once per interval, and
    doubles as the run's heartbeat."""

    def __init__(self, run_id: int, interval_seconds: float) -> None:
        self.run_id = run_id
        self.interval_seconds = interval_seconds
        self.last_check = 0.0
        self.cancelled = False

    def __call__(self) -> bool:
        now = time.monotonic()
        if not self.cancelled and now - self.last_check >= self.interval_seconds:
            self.last_check = now
            self.cancelled = services.run_heartbeat(run_id=self.run_id)
        return self.cancelled


def accounting(stats: EngineStats) -> dict[str, float]:
    return {
        "dialogues": stats.dialogues_finished,
        "student_generations": stats.student_generations,
        "teacher_calls": stats.teacher_calls,
        "prompt_tokens": stats.prompt_tokens,
        "completion_tokens": stats.completion_tokens,
        "wall_seconds": round(stats.wall_seconds, 3),
    }


def execute_evaluation(run_id: int, *, worker: str) -> None:
    heartbeat = settings.DIALAB_HEARTBEAT_SECONDS
    claimed = services.run_claim(
        run_id=run_id, worker=worker, stale_after=timedelta(seconds=3 * heartbeat)
    )
    if not claimed:
        logger.info("run %s: not claimable (taken, finished or cancelled); skipping", run_id)
        return
    run = Run.objects.get(pk=run_id)
    try:
        jobs = pending_jobs(run)
        teacher_spec = role_spec(run.config["teacher"])
        student_spec = role_spec(run.config["student"])
        assert student_spec is not None, "every run has a student"

        def store(results: list[DialogueResult]) -> None:
            dialogues_store(run_id=run_id, dialogues=[dialogue_row(r) for r in results])
            services.run_progress_refresh(run_id=run_id)

        watch = CancelWatch(run_id, interval_seconds=min(1.0, heartbeat))
        stats = run_dialogues(
            jobs,
            protocol_spec(run.config["protocol"]),
            student=load_generator(student_spec),
            teacher=load_generator(teacher_spec) if teacher_spec else None,
            on_finished=store,
            should_stop=watch,
        )
    except Exception as error:
        logger.exception("run %s failed", run_id)
        summary = "".join(traceback.format_exception_only(error)).strip()
        services.run_finish(run_id=run_id, status=Run.Status.FAILED, error=summary)
        return
    status = Run.Status.CANCELLED if watch.cancelled else Run.Status.SUCCEEDED
    services.run_finish(run_id=run_id, status=status, accounting=accounting(stats))
