"""A run's configuration: frozen at launch, stored as JSON with its hash, the only thing the
worker reads.

The launch service builds a ``RunConfig`` from the rows the researcher chose, refuses it while
``run_config_problems`` finds anything, and stores ``to_json()`` and ``config_hash()``. The
worker rebuilds it with ``RunConfig.from_json`` (strict: a missing or unknown key is an error,
never a silent default) and, before it plays, checks that the task set still has the
fingerprint the configuration names (``task_fingerprint``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from models_gpu.spec.backends import backend_problems
from models_gpu.spec.protocol import ROLES, ProtocolSpec, protocol_problems, role_problems
from models_gpu.spec.settings import Problem
from models_gpu.spec.templates import resolve_templates

SCHEMA_VERSION = 1
MAX_SAMPLES_PER_TASK = 64
MAX_BATCH_SIZE = 4096
MAX_SEED = 2**31 - 1
DEFAULT_BATCH_SIZE = 64
# The task fields a fingerprint covers, in this order: what a dialogue's outcome depends on.
FINGERPRINT_FIELDS = ("id", "prompt", "reference", "verifier_kind", "verifier_config", "shards")


class RunConfigError(ValueError):
    """A configuration that cannot run; ``problems`` says what, field by field."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(f"{p.field}: {p.message}" for p in problems))
        self.problems = problems


@dataclass(frozen=True)
class RoleSpec:
    """Which model plays a role: backend name, where the model lives, generation parameters.
    ``id`` and ``name`` say which registered model it was (provenance; backends ignore them)."""

    backend: str
    location: str
    params: Mapping[str, Any] = field(default_factory=dict)
    id: int | None = None
    name: str = ""


@dataclass(frozen=True)
class TaskSetRef:
    """The task set version a run plays, and the fingerprint of its tasks at launch."""

    id: int
    name: str
    version: int
    task_count: int
    fingerprint: str


@dataclass(frozen=True)
class ForkSpec:
    """A run of forks: each parent dialogue (by id) with how many of its turns the fork keeps.
    A fork plays on from those turns under the run's own roles and protocol, with its parent's
    seed, so a fork that changes nothing plays its parent's continuation again."""

    parents: tuple[tuple[int, int], ...]  # (parent dialogue id, turns kept)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ForkSpec:
        values = exact_keys(cls, data, "forks")
        return cls(tuple((int(parent), int(keep)) for parent, keep in values["parents"]))


@dataclass(frozen=True)
class RunConfig:
    """Everything an evaluation run plays with. ``samples_per_task`` dialogues per task (K, for
    pass@k); ``batch_size`` dialogues advance together; ``seed`` seeds every dialogue."""

    task_set: TaskSetRef
    protocol: ProtocolSpec
    student: RoleSpec
    teacher: RoleSpec | None = None
    user_simulator: RoleSpec | None = None
    judge: RoleSpec | None = None
    samples_per_task: int = 1
    batch_size: int = DEFAULT_BATCH_SIZE
    seed: int = 0
    forks: ForkSpec | None = None  # a run of forks of these dialogues, instead of every task
    task_ids: tuple[int, ...] | None = None  # only these tasks of the set (a playground's one)

    @property
    def dialogue_count(self) -> int:
        """How many dialogues the run plays."""
        if self.forks is not None:
            return len(self.forks.parents)
        tasks = len(self.task_ids) if self.task_ids is not None else self.task_set.task_count
        return tasks * self.samples_per_task

    def roles(self) -> dict[str, RoleSpec | None]:
        return {role: getattr(self, role) for role in ROLES}

    def people_roles(self) -> list[str]:
        """The roles a person plays (the ``human`` backend)."""
        return [role for role, spec in self.roles().items() if spec and spec.backend == "human"]

    def to_json(self) -> dict[str, Any]:
        """Plain JSON-ready data; ``from_json`` reads it back to an equal configuration.
        The ``OPTIONAL`` fields are written only when set, so other configurations keep the hash
        they had before those fields existed."""
        data = {"schema": SCHEMA_VERSION, **asdict(self)}
        for name in OPTIONAL:
            if data[name] is None:
                del data[name]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunConfig:
        """Strict: a key missing or unknown anywhere is a ValueError naming it."""
        data = dict(data)
        schema = data.pop("schema", None)
        if schema != SCHEMA_VERSION:
            raise ValueError(
                f"run configuration schema {schema!r}; this code reads {SCHEMA_VERSION}"
            )
        for name in OPTIONAL:
            data.setdefault(name, None)
        values = exact_keys(cls, data, "run configuration")
        if values["forks"] is not None:
            values["forks"] = ForkSpec.from_json(values["forks"])
        if values["task_ids"] is not None:
            values["task_ids"] = tuple(int(task_id) for task_id in values["task_ids"])
        values["task_set"] = TaskSetRef(**exact_keys(TaskSetRef, values["task_set"], "task_set"))
        protocol = exact_keys(ProtocolSpec, values["protocol"], "protocol")
        values["protocol"] = ProtocolSpec(**protocol)
        for role in ROLES:
            if values[role] is not None:
                values[role] = RoleSpec(**exact_keys(RoleSpec, values[role], role))
        return cls(**values)

    def config_hash(self) -> str:
        """Identifies identical configurations (sha256 of the canonical JSON)."""
        canonical = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()

    def seed_group_hash(self) -> str:
        """Identifies configurations that differ at most in their seed: repeats of one
        experiment, whose results are averaged across seeds."""
        return replace(self, seed=0).config_hash()

    def student_free_hash(self) -> str:
        """Identifies configurations that differ at most in their student: the same
        evaluation of two models (a trained one and its base)."""
        return replace(self, student=RoleSpec(backend="", location="")).config_hash()


# Fields of RunConfig that a stored configuration may leave out (None).
OPTIONAL = ("forks", "task_ids")


def exact_keys(cls: type, data: Mapping[str, Any], what: str) -> dict[str, Any]:
    """``data`` as a dict, when its keys are exactly the dataclass ``cls``'s fields; else a
    ValueError naming ``what`` and the keys missing or unknown."""
    names = {f.name for f in fields(cls)}
    missing, unknown = sorted(names - set(data)), sorted(set(data) - names)
    if missing or unknown:
        raise ValueError(f"{what}: missing keys {missing}, unknown keys {unknown}")
    return dict(data)


def run_config_problems(config: RunConfig) -> list[Problem]:
    """Every reason ``config`` cannot run, each with the field it is about (empty: none)."""
    problems = list(protocol_problems(config.protocol))
    chosen = [role for role, spec in config.roles().items() if spec is not None]
    problems += role_problems(config.protocol, chosen)
    for role, spec in config.roles().items():
        if spec is not None:
            problems += [
                Problem(role, f"{spec.name or spec.backend}: {problem.message}")
                for problem in backend_problems(spec.backend, spec.location, spec.params)
            ]
    if config.judge is not None and config.judge.backend == "human":
        problems.append(Problem("judge", "A person cannot be the judge: choose a model."))
    ranges = {
        "samples_per_task": (config.samples_per_task, 1, MAX_SAMPLES_PER_TASK),
        "batch_size": (config.batch_size, 1, MAX_BATCH_SIZE),
        "seed": (config.seed, 0, MAX_SEED),
    }
    for name, (value, low, high) in ranges.items():
        if not low <= value <= high:
            problems.append(Problem(name, f"{name} must be between {low} and {high}."))
    if config.forks is not None and not config.forks.parents:
        problems.append(Problem("forks", "No dialogue to fork: choose at least one."))
    if config.task_ids is not None and not config.task_ids:
        problems.append(Problem("task_set", "No task chosen: choose at least one."))
    if config.task_set.task_count < 1:
        problems.append(Problem("task_set", "This task set has no tasks yet: add some first."))
    return problems


def checked(config: RunConfig) -> RunConfig:
    """``config`` when it can run; ``RunConfigError`` listing every problem otherwise."""
    problems = run_config_problems(config)
    if problems:
        raise RunConfigError(problems)
    return config


def frozen_protocol(protocol: ProtocolSpec) -> ProtocolSpec:
    """``protocol`` with the full text of every template, so a run keeps the prompts it ran with
    even if the protocol or the defaults change later."""
    templates = resolve_templates(protocol.templates)
    return ProtocolSpec(**{**asdict(protocol), "templates": templates})


def task_fingerprint(rows: Iterable[Iterable[Any]]) -> str:
    """A hash of the tasks' content: ``rows`` are each task's ``FINGERPRINT_FIELDS`` values, in
    the set's order (position, then id)."""
    digest = hashlib.sha256()
    for row in rows:
        digest.update(json.dumps(list(row), sort_keys=True, default=str).encode())
    return digest.hexdigest()
