"""A training run's configuration: frozen at launch, stored as JSON with its hash, the only thing
the training worker reads (as ``spec.run.RunConfig`` is for an evaluation).

It names the base model, the dataset snapshot (a file of ``TrainingDialogue`` lines and its
sha256: what the run trains on, even if the runs it came from are deleted), the hyperparameters
(``spec.training.TrainingConfig``), for Q-priming the model that writes the questions (none: the
question template), and the held-out evaluation that follows: a ``RunConfig`` whose student is
the base model. When training ends, the same configuration with the trained
model as the student evaluates it, and the base's evaluation is the one with exactly this
configuration (reused when it exists).

Online SML (``online`` set, no dataset): the student plays dialogues while it trains
(``models_gpu.training.online``). ``rollouts`` says what it plays: a ``RunConfig`` whose task set
holds the training tasks, whose protocol and teacher play them (its max turns is the training
horizon's ceiling; ``online.horizon`` cuts it) and whose student is the base model.

A priming stage (``priming`` set, online runs only) chains offline training before GRPO in one
run: the base model is first fine-tuned on ``dataset`` under ``priming`` (SFT or Q-priming, whose
question writer is ``question_writer``), and GRPO starts from what that stage produced. The
trained model's lineage is the run's: one base, one configuration naming both stages.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from models_gpu.spec.backends import backend_problems
from models_gpu.spec.online import OnlineConfig
from models_gpu.spec.run import RoleSpec, RunConfig, exact_keys, run_config_problems
from models_gpu.spec.settings import Problem
from models_gpu.spec.training import TrainingConfig

TRAINING_RUN_SCHEMA = 4
# Schema 1 had no question writer (such runs wrote Q-priming's questions from the template);
# schema 2 no online training; schema 3 no priming stage.
READABLE_SCHEMAS = (1, 2, 3, TRAINING_RUN_SCHEMA)
NOTHING_TO_TRAIN = "No dialogue matches this selection: there is nothing to train on."
# The protocols online training plays (a teacher's or a user's turns between the student's).
ONLINE_MODES = ("didactic", "sharded")
# Backends whose location is a checkpoint directory that training can start from.
TRAINABLE_BACKENDS = ("transformers", "vllm")
# Backends that can write Q-priming's questions (a model that generates text).
WRITER_BACKENDS = ("transformers", "vllm", "openai")
# The methods that can prime a policy before online training.
PRIMING_METHODS = ("sft", "qpriming")


@dataclass(frozen=True)
class DatasetRef:
    """A frozen dataset snapshot: its file (one ``TrainingDialogue`` JSON per line), how many
    dialogues it holds, and the sha256 of its bytes."""

    id: int
    name: str
    dialogues: int
    sha256: str
    path: str


@dataclass(frozen=True)
class TrainingRunConfig:
    base: RoleSpec
    dataset: DatasetRef | None
    training: TrainingConfig
    evaluation: RunConfig | None = None
    question_writer: RoleSpec | None = None
    online: OnlineConfig | None = None
    rollouts: RunConfig | None = None
    priming: TrainingConfig | None = None

    @property
    def is_online(self) -> bool:
        return self.online is not None

    @property
    def dataset_training(self) -> TrainingConfig:
        """How the dataset is trained on: the run's training, or its priming stage's."""
        return self.priming if self.is_online and self.priming else self.training

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": TRAINING_RUN_SCHEMA,
            "base": asdict(self.base),
            "dataset": asdict(self.dataset) if self.dataset else None,
            "training": self.training.to_json(),
            "evaluation": self.evaluation.to_json() if self.evaluation else None,
            "question_writer": asdict(self.question_writer) if self.question_writer else None,
            "online": self.online.to_json() if self.online else None,
            "rollouts": self.rollouts.to_json() if self.rollouts else None,
            "priming": self.priming.to_json() if self.priming else None,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TrainingRunConfig:
        """Strict: a key missing or unknown anywhere is a ValueError naming it."""
        data = dict(data)
        schema = data.pop("schema", None)
        if schema not in READABLE_SCHEMAS:
            raise ValueError(
                f"training run configuration schema {schema!r}; this code reads "
                f"{', '.join(map(str, READABLE_SCHEMAS))}"
            )
        if schema == 1:
            data["question_writer"] = None
        if schema in (1, 2):
            data.update(online=None, rollouts=None)
        if schema in (1, 2, 3):
            data["priming"] = None
        exact_keys(cls, data, "training run configuration")
        evaluation, writer, dataset = data["evaluation"], data["question_writer"], data["dataset"]
        online, rollouts, priming = data["online"], data["rollouts"], data["priming"]
        return cls(
            base=RoleSpec(**exact_keys(RoleSpec, data["base"], "base")),
            dataset=DatasetRef(**exact_keys(DatasetRef, dataset, "dataset")) if dataset else None,
            training=TrainingConfig.from_json(data["training"]),
            evaluation=RunConfig.from_json(evaluation) if evaluation is not None else None,
            question_writer=(
                RoleSpec(**exact_keys(RoleSpec, writer, "question writer")) if writer else None
            ),
            online=OnlineConfig.from_json(online) if online is not None else None,
            rollouts=RunConfig.from_json(rollouts) if rollouts is not None else None,
            priming=TrainingConfig.from_json(priming) if priming is not None else None,
        )

    def config_hash(self) -> str:
        canonical = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()

    def trained_evaluation(self, trained: RoleSpec) -> RunConfig | None:
        """The held-out evaluation with ``trained`` as the student."""
        return replace(self.evaluation, student=trained) if self.evaluation else None


def checkpoint_problems(location: str) -> list[Problem]:
    """Why the checkpoint directory ``location`` cannot be a base to train from (read where
    this runs: the web server and the training workers share the models' storage)."""
    if not os.path.isdir(location):
        return [Problem("base_model", f"{location} is not a directory here.")]
    if not os.path.isfile(os.path.join(location, "config.json")):
        return [
            Problem(
                "base_model",
                f"{location} holds no config.json: not a Hugging Face checkpoint directory.",
            )
        ]
    tokenizer_files = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")
    if not any(os.path.isfile(os.path.join(location, name)) for name in tokenizer_files):
        return [Problem("base_model", f"{location} holds no tokenizer files.")]
    return []


def training_run_problems(config: TrainingRunConfig) -> list[Problem]:
    """Every reason ``config`` cannot run, each with the field it is about (empty: none)."""
    base = config.base
    problems = []
    if base.backend not in TRAINABLE_BACKENDS:
        problems.append(
            Problem(
                "base_model",
                f"{base.name or base.backend} uses the {base.backend} backend: training starts "
                f"from a local checkpoint ({' or '.join(TRAINABLE_BACKENDS)} backend).",
            )
        )
    else:
        problems += [
            Problem("base_model", f"{base.name}: {problem.message}")
            for problem in backend_problems(base.backend, base.location, base.params)
            + checkpoint_problems(base.location)
        ]
    problems += _data_problems(config)
    problems += config.training.problems()
    problems += question_writer_problems(config.question_writer, config.dataset_training.method)
    if config.evaluation is not None:
        problems += [
            Problem(f"evaluation_{problem.field}", problem.message)
            for problem in run_config_problems(config.evaluation)
        ]
    return problems


def _data_problems(config: TrainingRunConfig) -> list[Problem]:
    """An offline run trains on a dataset; an online run plays its rollouts' tasks, after a
    priming stage on a dataset when it has one."""
    if config.online is None:
        if config.rollouts is not None:
            return [Problem("rollouts", "Only online training plays rollouts.")]
        if config.priming is not None:
            return [Problem("priming", "Only online training has a priming stage.")]
        if config.dataset is None or config.dataset.dialogues < 1:
            return [Problem("dataset", NOTHING_TO_TRAIN)]
        return []
    problems = config.online.problems() + _priming_problems(config)
    if config.rollouts is None:
        return [*problems, Problem("rollouts", "Online training needs the tasks it plays.")]
    problems += [
        Problem(f"rollouts_{problem.field}", problem.message)
        for problem in run_config_problems(config.rollouts)
    ]
    if config.rollouts.protocol.mode not in ONLINE_MODES:
        problems.append(
            Problem(
                "rollouts_protocol",
                f"Online training plays {' or '.join(ONLINE_MODES)} dialogues, not "
                f"{config.rollouts.protocol.mode}.",
            )
        )
    if config.training.method != "sft":
        problems.append(
            Problem("method", "Online training trains on its own rollouts: leave the method sft.")
        )
    return problems


def _priming_problems(config: TrainingRunConfig) -> list[Problem]:
    """A priming stage trains on a dataset by a priming method; without one, there is none."""
    priming, dataset = config.priming, config.dataset
    if priming is None:
        if dataset is not None:
            return [
                Problem("dataset", "Online training plays its own dialogues: a dataset is for a "
                        "priming stage.")
            ]  # fmt: skip
        return []
    problems = [Problem(f"priming_{p.field}", p.message) for p in priming.problems()]
    if priming.method not in PRIMING_METHODS:
        problems.append(
            Problem(
                "priming_method",
                f"A priming stage trains by {' or '.join(PRIMING_METHODS)}, not {priming.method}.",
            )
        )
    if dataset is None or dataset.dialogues < 1:
        problems.append(Problem("priming_dataset", NOTHING_TO_TRAIN))
    return problems


def question_writer_problems(writer: RoleSpec | None, method: str) -> list[Problem]:
    """Why ``writer`` cannot write the questions of a ``method`` run (none when there is no
    writer: the question template writes them)."""
    if writer is None:
        return []
    name = writer.name or writer.backend
    if method != "qpriming":
        return [Problem("question_writer", "Only Q-priming writes questions: leave it empty.")]
    if writer.backend not in WRITER_BACKENDS:
        return [
            Problem(
                "question_writer",
                f"{name} uses the {writer.backend} backend: questions are written by a model "
                f"({', '.join(WRITER_BACKENDS)} backend), or by the template when none is chosen.",
            )
        ]
    return [
        Problem("question_writer", f"{name}: {problem.message}")
        for problem in backend_problems(writer.backend, writer.location, writer.params)
    ]
