"""Runs with stored dialogues for the experiment pages' tests (and their browser test): seeds of
a base and a trained model on one task set, and a base with two models trained from it."""

from __future__ import annotations

import random
from typing import Any

from models_gpu.spec.online import OnlineConfig
from models_gpu.spec.results import DialogueRow
from models_gpu.spec.training import TrainingConfig
from models_gpu.spec.training_run import DatasetRef, TrainingRunConfig
from tests.factories import ProtocolFactory, StudentFactory, TaskFactory, TaskSetFactory, frozen_run
from tests.transcript_builders import attempt, feedback
from webapp.runs.models import Run
from webapp.runs.services import dialogues_store, evaluation_config, role_spec
from webapp.training.models import DatasetSnapshot

MAX_TURNS = 3


def play(run: Run, first_correct: dict[int, int | None]) -> None:
    """Store one dialogue per task: wrong attempts with feedback until the first correct turn
    (None: wrong every turn), then mark the run succeeded."""
    rows = []
    for task_id, solved_at in first_correct.items():
        turns: list[dict[str, Any]] = []
        last = solved_at or MAX_TURNS
        for round_number in range(1, last + 1):
            correct = round_number == solved_at
            turns.append(attempt(f"try {round_number}", "3" if correct else "4", correct))
            if not correct and round_number < MAX_TURNS:
                turns.append(feedback("check the sum"))
        rounds = 0
        for index, item in enumerate(turns):
            rounds += item["role"] == "student"
            item.update(index=index, round=rounds)
        rows.append(
            DialogueRow.from_json({
                "task_id": task_id, "sample_index": 0, "seed": run.frozen_config.seed,
                "outcome": "solved" if solved_at else "unsolved", "first_correct_turn": solved_at,
                "num_turns": last, "end_reason": "solved" if solved_at else "max_turns",
                "turns": turns,
            })
        )  # fmt: skip
    dialogues_store(run_id=run.pk, dialogues=rows)
    Run.objects.filter(pk=run.pk).update(
        status=Run.Status.SUCCEEDED, progress_done=len(rows), progress_total=len(rows)
    )


def base_and_trained_seeds(tasks: int = 30, prefix: str = "") -> dict[str, list[Run]]:
    """Three seeds each: the base solves about 30% of tasks by turn 3, the trained model about
    70%, each seed drawing its own outcomes (fixed random generator). ``prefix`` starts every
    name, for a second set in one test."""
    task_set = TaskSetFactory(name=f"{prefix}sums")
    task_ids = [TaskFactory(task_set=task_set, prompt=f"{i} + 1 = ?").pk for i in range(tasks)]
    protocol = ProtocolFactory(name=f"{prefix}didactic 3", max_turns=MAX_TURNS)
    teacher = StudentFactory(name=f"{prefix}teacher", location="feedback-teacher")
    rng = random.Random(7)
    runs: dict[str, list[Run]] = {}
    for label, solve in (("base", 0.3), ("trained", 0.7)):
        student = StudentFactory(name=f"{prefix}{label} model")
        runs[label] = []
        for seed in range(3):
            run = frozen_run(
                name=f"{prefix}{label} seed {seed}", task_set=task_set, student=student,
                teacher=teacher, protocol=protocol, seed=seed,
            )  # fmt: skip
            play(
                run,
                {t: rng.randint(1, MAX_TURNS) if rng.random() < solve else None for t in task_ids},
            )
            runs[label].append(run)
    return runs


def _training_run(base, config: TrainingRunConfig, protocol) -> Run:  # type: ignore[no-untyped-def]
    return Run.objects.create(
        name="training", kind=Run.Kind.TRAIN, student=base, protocol=protocol,
        status=Run.Status.SUCCEEDED, config=config.to_json(), config_hash=config.config_hash(),
    )  # fmt: skip


def _trained(name: str, base, run: Run):  # type: ignore[no-untyped-def]
    return StudentFactory(name=name, base_model=base, trained_by_run=run, location="/ckpt/" + name)


def base_and_two_trained_models() -> dict[str, Run]:
    """A base model and two models trained from it (scripted training runs: nothing trains),
    one online on arithmetic, one on a dataset of logic dialogues, each evaluated beside the base
    on 20 arithmetic and 20 logic held-out tasks: each gains on its own domain only."""
    protocol = ProtocolFactory(name="didactic", max_turns=MAX_TURNS)
    teacher = StudentFactory(name="teacher", location="feedback-teacher")
    base = StudentFactory(name="base")
    training_tasks = TaskSetFactory(name="arithmetic training")
    TaskFactory(task_set=training_tasks, domain="arithmetic")
    logic_source = TaskSetFactory(name="logic transcripts")
    TaskFactory(task_set=logic_source, domain="logic")
    source_run = frozen_run(
        name="logic source", task_set=logic_source, student=base, protocol=protocol
    )

    rollouts = evaluation_config(
        task_set=training_tasks, protocol=protocol, student=base, teacher=teacher, check=False
    )
    online = TrainingRunConfig(
        base=role_spec(base), dataset=None, training=TrainingConfig(max_steps=4),  # type: ignore[arg-type]
        online=OnlineConfig(horizon=2), rollouts=rollouts,
    )  # fmt: skip
    snapshot = DatasetSnapshot.objects.create(
        name="logic", dialogue_count=1, turn_count=2, student_turn_count=1,
        source_runs=[{"id": source_run.pk, "name": source_run.name, "dialogues": 1}],
        sha256="a" * 64, path="/d/logic.jsonl",
    )  # fmt: skip
    offline = TrainingRunConfig(
        base=role_spec(base),  # type: ignore[arg-type]
        dataset=DatasetRef(snapshot.pk, "logic", 1, "a" * 64, "/d/logic.jsonl"),
        training=TrainingConfig(method="sft"),
    )
    arithmetic_model = _trained(
        "trained on arithmetic", base, _training_run(base, online, protocol)
    )
    logic_model = _trained("trained on logic", base, _training_run(base, offline, protocol))

    held_out = TaskSetFactory(name="held out")
    arithmetic = [TaskFactory(task_set=held_out, domain="arithmetic").pk for _ in range(20)]
    logic = [TaskFactory(task_set=held_out, domain="logic").pk for _ in range(20)]
    rng = random.Random(3)

    def evaluate(student, arithmetic_rate: float, logic_rate: float) -> Run:  # type: ignore[no-untyped-def]
        run = frozen_run(
            name=f"{student.name} held out",
            task_set=held_out,
            student=student,
            teacher=teacher,
            protocol=protocol,
        )
        outcomes = {t: 1 if rng.random() < arithmetic_rate else None for t in arithmetic}
        outcomes.update({t: 1 if rng.random() < logic_rate else None for t in logic})
        play(run, outcomes)
        return Run.objects.get(pk=run.pk)

    return {
        "base": evaluate(base, 0.2, 0.2),
        "arithmetic": evaluate(arithmetic_model, 0.9, 0.2),
        "logic": evaluate(logic_model, 0.2, 0.85),
    }
