"""Stored run configurations of every schema a database can hold, and the runs that hold them.

An evaluation stores a ``RunConfig`` (schema 1); a training run a ``TrainingRunConfig`` of any
of its ``READABLE_SCHEMAS``: 1 (no question writer), 2 (no online training), 3 (no priming
stage) and 4. Each is written here as the code of its time wrote it (the newer keys left out,
the schema number set) and checked to read back as the configuration it was made from. An
online run's stored rollouts are dialogues of that run played under its ``rollouts`` RunConfig.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from models_gpu.spec.online import OnlineConfig
from models_gpu.spec.results import DialogueRow
from models_gpu.spec.training import TrainingConfig
from models_gpu.spec.training_run import READABLE_SCHEMAS, DatasetRef, TrainingRunConfig
from tests.factories import ProtocolFactory, TaskFactory, TaskSetFactory, TeacherFactory, frozen_run
from tests.transcript_builders import attempt, feedback
from webapp.dialogues.models import Dialogue
from webapp.models_registry.models import ModelSpec
from webapp.runs.models import Run
from webapp.runs.services import dialogues_store, evaluation_config, role_spec


@dataclass(frozen=True)
class StoredKind:
    """A kind of stored training configuration: its schema, and what it has."""

    schema: int
    online: bool = False
    primed: bool = False

    @property
    def id(self) -> str:
        what = "primed-online" if self.primed else "online" if self.online else "offline"
        return f"{what}-schema-{self.schema}"


# Every combination a schema can hold: online training came with schema 3, priming with 4.
TRAINING_KINDS = [
    *(StoredKind(schema) for schema in READABLE_SCHEMAS),
    *(StoredKind(schema, online=True) for schema in READABLE_SCHEMAS if schema >= 3),
    StoredKind(4, online=True, primed=True),
]


def stored_training_json(config: TrainingRunConfig, schema: int) -> dict[str, Any]:
    """``config`` as code of ``schema``'s time stored it (the keys that schema did not have
    are left out; the configuration must not use them)."""
    data = config.to_json()
    if schema <= 3:
        assert config.priming is None, "schema 3 and older had no priming stage"
        del data["priming"]
    if schema <= 2:
        assert config.online is None and config.rollouts is None, "no online training"
        del data["online"], data["rollouts"]
    if schema == 1:
        assert config.question_writer is None, "schema 1 had no question writer"
        del data["question_writer"]
    data["schema"] = schema
    assert TrainingRunConfig.from_json(data) == config, "reads back as it was made"
    return data


@dataclass
class TrainingWorld:
    """A stored training run of one kind, with what the pages around it read: its rollouts
    (online runs), the trained model and the base's and the trained model's evaluations."""

    run: Run
    rollouts: list[Dialogue]
    base_evaluation: Run
    trained_evaluation: Run
    teacher: ModelSpec  # the rollouts' teacher


def stored_training_run(kind: StoredKind) -> TrainingWorld:
    base = ModelSpec.objects.create(
        name=f"base {kind.id}", backend="transformers", location="/models/base"
    )
    teacher = TeacherFactory(name=f"teacher {kind.id}")
    held_out, training_tasks = TaskSetFactory(name="held out"), TaskSetFactory(name="train")
    held_out_task = TaskFactory(task_set=held_out, reference={"answer": "3"})
    task = TaskFactory(task_set=training_tasks, prompt="What is 1 + 2?", reference={"answer": "3"})
    # The rollouts' protocol and teacher are not the held-out evaluation's: a page that names
    # the wrong ones shows it.
    protocol, rollout_protocol = ProtocolFactory(max_turns=3), ProtocolFactory(max_turns=3)
    evaluation_teacher = TeacherFactory()
    evaluation = evaluation_config(
        task_set=held_out, protocol=protocol, student=base, teacher=evaluation_teacher, check=False
    )
    rollouts = evaluation_config(
        task_set=training_tasks,
        protocol=rollout_protocol,
        student=base,
        teacher=teacher,
        check=False,
    )
    dataset = DatasetRef(
        id=1, name="snapshot", dialogues=2, sha256="0" * 64, path="/data/snapshot.jsonl"
    )
    config = TrainingRunConfig(
        base=role_spec(base),  # type: ignore[arg-type]
        dataset=dataset if kind.primed or not kind.online else None,
        training=TrainingConfig(),
        evaluation=evaluation,
        online=OnlineConfig(group_size=2, tasks_per_step=1, horizon=2) if kind.online else None,
        rollouts=rollouts if kind.online else None,
        priming=TrainingConfig(method="qpriming") if kind.primed else None,
    )
    run = Run.objects.create(
        name=f"training {kind.id}",
        kind=Run.Kind.TRAIN,
        status=Run.Status.SUCCEEDED,
        task_set=held_out,
        protocol=protocol,
        student=base,
        config=stored_training_json(config, kind.schema),
        config_hash=config.config_hash(),
    )
    stored: list[Dialogue] = []
    if kind.online:
        turns = [
            attempt("It is 4.", "4", False),
            feedback("Count again."),
            attempt("5", "5", False),
        ]
        for index, item in enumerate(turns):
            item.update(index=index, round=1 if index < 2 else 2)
        rows = [
            DialogueRow.from_json({
                "task_id": task.pk, "sample_index": sample, "seed": sample, "outcome": "unsolved",
                "first_correct_turn": None, "num_turns": 2, "end_reason": "max_turns",
                "turns": turns,
            })
            for sample in range(2)
        ]  # fmt: skip
        dialogues_store(run_id=run.pk, dialogues=rows, training_step=1)
        stored = list(Dialogue.objects.filter(run=run).order_by("sample_index"))
    trained = ModelSpec.objects.create(
        name=f"trained {kind.id}",
        backend="transformers",
        location="/models/trained",
        base_model=base,
        trained_by_run=run,
    )
    evaluations = [
        frozen_run(
            name=f"{student.name} held out", task_set=held_out, student=student,
            teacher=evaluation_teacher,
            protocol=protocol, status=Run.Status.SUCCEEDED,
        )
        for student in (base, trained)
    ]  # fmt: skip
    for evaluation_run in evaluations:
        dialogues_store(
            run_id=evaluation_run.pk,
            dialogues=[
                DialogueRow.from_json({
                    "task_id": held_out_task.pk, "sample_index": 0, "seed": 0,
                    "outcome": "solved", "first_correct_turn": 1, "num_turns": 1,
                    "end_reason": "solved",
                    "turns": [{**attempt("3", "3", True), "index": 0, "round": 1}],
                })
            ],
        )  # fmt: skip
    return TrainingWorld(run, stored, evaluations[0], evaluations[1], teacher)
