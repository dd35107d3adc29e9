"""The demo project: a researcher, scripted models, protocols, arithmetic tasks and runs.

Everything is made here, locally and deterministically: nothing is downloaded. The house model
(``manage.py build_house_model``) takes minutes to train, so its run is added by a second call
once the model exists; scripts/demo.sh does that in the background, then adds the miniature
reproduction's guess-the-number task sets (``manage.py sml_miniature --demo-task-sets``), which
the home page's button trains the house model on (``demo_miniature_launch``).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, replace
from pathlib import Path

from django.conf import settings
from django.db import transaction

from models_gpu.spec.miniature import (
    LATEST_FIGURE,
    LATEST_REPORT,
    MiniatureSettings,
    latest_results_dir,
)
from models_gpu.spec.online import single_turn_baseline
from webapp.accounts.models import User
from webapp.accounts.services import DEMO_USERNAME, user_create
from webapp.experiments.services import lic_experiment_create
from webapp.models_registry.house import HOUSE_MODEL_NAME as HOUSE_MODEL
from webapp.models_registry.models import ModelSpec
from webapp.models_registry.services import model_spec_register
from webapp.people.playground import person_model
from webapp.runs.models import Protocol, Run
from webapp.runs.services import (
    evaluation_config,
    evaluation_run_create,
    evaluation_run_from_config,
    runs_tag,
)
from webapp.tasks.models import Task, TaskSet
from webapp.tasks.services import task_add, task_set_create
from webapp.training.miniature import MINIATURE_HELDOUT_TASK_SET, MINIATURE_TASK_SET
from webapp.training.services import online_training_run_config, training_run_create

DEMO_PASSWORD = "dialab-demo"
DEMO_TASK_SET = "Arithmetic (demo)"
SHARDED_TASK_SET = "Sharded arithmetic (demo)"
HOUSE_TASK_SET = "Small arithmetic (house model demo)"
MINIATURE_STUDENT = "house, sampled (miniature)"
MINIATURE_RUN = "Miniature SML: house model learns to use feedback (seed 0)"
SHARDED_STUDENT = "scripted sharded student"
SHARD_REVEALER = "scripted shard revealer"
_OPERATION_NAMES = {"+": "sum", "-": "difference", "*": "product"}


def arithmetic_problems(count: int, *, seed: int) -> list[tuple[str, int]]:
    """Two- and three-digit additions, subtractions and products: (prompt, answer)."""
    rng = random.Random(seed)
    problems = []
    for _ in range(count):
        operator = rng.choice("+-*")
        left = rng.randint(10, 999)
        right = rng.randint(10, 99 if operator == "*" else 999)
        answer = {"+": left + right, "-": left - right, "*": left * right}[operator]
        problems.append((f"What is {left} {operator} {right}?", answer))
    return problems


def sharded_problems(count: int, *, seed: int) -> list[tuple[list[str], str, int]]:
    """Arithmetic told a piece at a time: (shards, full prompt, answer). The wording is what the
    scripted ``sharded-student`` reads: the operation first, then one number per shard."""
    problems = []
    for prompt, answer in arithmetic_problems(count, seed=seed):
        _, _, left, operator, right = prompt.rstrip("?").split(" ")
        shards = [
            f"I need a {_OPERATION_NAMES[operator]} of two numbers.",
            f"The first number is {left}.",
            f"The second number is {right}.",
        ]
        problems.append((shards, prompt, answer))
    return problems


def small_problems(count: int, *, seed: int) -> list[tuple[str, int]]:
    """Sums and differences of a one- or two-digit number and a digit: the house model is often
    right first on one-digit problems and seldom on two-digit ones, so feedback has work to do."""
    rng = random.Random(seed)
    problems = []
    for _ in range(count):
        operator = rng.choice("+-")
        left, right = rng.randint(1, 20), rng.randint(1, 9)
        answer = left + right if operator == "+" else left - right
        problems.append((f"What is {left} {operator} {right}?", answer))
    return problems


@dataclass(frozen=True)
class DemoProject:
    user: User
    task_set: TaskSet
    run: Run | None
    sharded_run: Run | None = None


@transaction.atomic
def demo_project_create(*, task_count: int = 40, launch_run: bool = True) -> DemoProject:
    """Create the demo project once; running it again changes nothing."""
    user = User.objects.filter(username=DEMO_USERNAME).first() or user_create(
        username=DEMO_USERNAME, password=DEMO_PASSWORD, role=User.Role.RESEARCHER
    )
    student, _ = model_spec_register(
        name="scripted arithmetic student",
        backend=ModelSpec.Backend.SCRIPTED,
        location="arithmetic-student",
        generation_params={"first_try_accuracy": 0.35, "feedback_gain": 0.45},
        description="A seeded policy that is sometimes right first and uses feedback.",
        replace=False,
    )
    teacher, _ = model_spec_register(
        name="scripted feedback teacher",
        backend=ModelSpec.Backend.SCRIPTED,
        location="feedback-teacher",
        description="Feedback computed from the verifier's details, never the answer.",
        replace=False,
    )
    didactic, _ = Protocol.objects.get_or_create(
        name="Didactic, 5 turns", defaults={"mode": Protocol.Mode.DIDACTIC, "max_turns": 5}
    )
    Protocol.objects.get_or_create(
        name="Single turn", defaults={"mode": Protocol.Mode.SINGLE_TURN, "max_turns": 1}
    )
    existing = TaskSet.objects.filter(name=DEMO_TASK_SET).first()
    if existing is not None:
        return DemoProject(user=user, task_set=existing, run=None)
    sharded_run = _sharded_demo_create(user, task_count=task_count // 2, launch_run=launch_run)

    task_set = task_set_create(
        name=DEMO_TASK_SET,
        description="Procedural arithmetic for trying Dialab out.",
        created_by=user,
    )
    for prompt, answer in arithmetic_problems(task_count, seed=2026):
        _add_arithmetic_task(task_set, prompt, answer)
    run = None
    if launch_run:
        run = evaluation_run_create(
            name=_didactic_run_name(seed=0),
            task_set=task_set,
            student=student,
            teacher=teacher,
            protocol=didactic,
            samples_per_task=4,
            seed=0,
            created_by=user,
        )
        _demo_experiments(user, task_set, student, teacher, didactic, run)
    return DemoProject(user=user, task_set=task_set, run=run, sharded_run=sharded_run)


def _didactic_run_name(*, seed: int) -> str:
    return f"Demo: scripted student, didactic 5 turns (seed {seed})"


DEMO_TAG = "demo: feedback vs one turn"
DEMO_SEEDS = (0, 1, 2)
DEMO_LIC = "Demo: Lost in Conversation, sharded arithmetic"


def _demo_experiments(
    user: User, task_set: TaskSet, student: ModelSpec, teacher: ModelSpec, didactic: Protocol,
    first: Run,
) -> None:  # fmt: skip
    """What the experiment pages show on the demo: the didactic run in three seeds beside a
    single-turn baseline in three seeds (tagged, to compare: how much does feedback add?), and a
    Lost-in-Conversation experiment on the sharded set."""
    single_turn = Protocol.objects.get(name="Single turn")
    runs = [first]
    for seed in DEMO_SEEDS:
        if seed != first.frozen_config.seed:
            runs.append(evaluation_run_create(
                name=_didactic_run_name(seed=seed), task_set=task_set,
                student=student, teacher=teacher, protocol=didactic, samples_per_task=4,
                seed=seed, created_by=user,
            ))  # fmt: skip
        runs.append(evaluation_run_create(
            name=f"Demo: scripted student, single turn (seed {seed})", task_set=task_set,
            student=student, protocol=single_turn, samples_per_task=4, seed=seed,
            created_by=user,
        ))  # fmt: skip
    runs_tag(run_ids=[run.pk for run in runs], tag=DEMO_TAG)
    _demo_person_run(user, task_set, student, didactic)
    lic_experiment_create(
        name=DEMO_LIC, task_set=TaskSet.objects.get(name=SHARDED_TASK_SET),
        student=ModelSpec.objects.get(name=SHARDED_STUDENT),
        user_simulator=ModelSpec.objects.get(name=SHARD_REVEALER),
        repeats=4, max_turns=6, seed=0, created_by=user,
    )  # fmt: skip


DEMO_PERSON_RUN = "Demo: you teach the scripted student"
DEMO_PERSON_TASKS = 5


def _demo_person_run(user: User, task_set: TaskSet, student: ModelSpec, didactic: Protocol) -> Run:
    """A run where the demo user is the teacher, on a few tasks: its turns wait in the inbox."""
    config = evaluation_config(
        task_set=task_set, protocol=didactic, student=student, teacher=person_model()
    )
    first_tasks = task_set.tasks.order_by("position").values_list("pk", flat=True)
    config = replace(config, task_ids=tuple(first_tasks[:DEMO_PERSON_TASKS]))
    return evaluation_run_from_config(
        name=DEMO_PERSON_RUN, config=config, created_by=user, people=[user]
    )


def _sharded_demo_create(user: User, *, task_count: int, launch_run: bool) -> Run | None:
    student, _ = model_spec_register(
        name=SHARDED_STUDENT,
        backend=ModelSpec.Backend.SCRIPTED,
        location="sharded-student",
        description="Asks about what is missing, sometimes answers too early.",
        replace=False,
    )
    simulator, _ = model_spec_register(
        name=SHARD_REVEALER,
        backend=ModelSpec.Backend.SCRIPTED,
        location="shard-revealer",
        description="A user simulator that reveals the next shard, one per turn.",
        replace=False,
    )
    protocol, _ = Protocol.objects.get_or_create(
        name="Sharded, 6 turns", defaults={"mode": Protocol.Mode.SHARDED, "max_turns": 6}
    )
    task_set = task_set_create(
        name=SHARDED_TASK_SET,
        description="Arithmetic revealed one fact per turn (Lost-in-Conversation style).",
        created_by=user,
    )
    for shards, prompt, answer in sharded_problems(task_count, seed=2027):
        _add_arithmetic_task(task_set, prompt, answer, shards=shards)
    if not launch_run:
        return None
    return evaluation_run_create(
        name="Demo: sharded student and user simulator",
        task_set=task_set,
        student=student,
        teacher=None,
        user_simulator=simulator,
        protocol=protocol,
        samples_per_task=2,
        seed=0,
        created_by=user,
    )


@transaction.atomic
def demo_house_run_create(*, task_count: int = 30) -> Run | None:
    """Once the house model is registered: small arithmetic and a didactic run of the house
    student with the scripted teacher. None when there is no house model or the run exists."""
    house = ModelSpec.objects.filter(name=HOUSE_MODEL).first()
    user = User.objects.filter(username=DEMO_USERNAME).first()
    if house is None or user is None or TaskSet.objects.filter(name=HOUSE_TASK_SET).exists():
        return None
    task_set = task_set_create(
        name=HOUSE_TASK_SET,
        description="Small sums and differences for the locally trained house model.",
        created_by=user,
    )
    for prompt, answer in small_problems(task_count, seed=2028):
        _add_arithmetic_task(task_set, prompt, answer)
    return evaluation_run_create(
        name="Demo: house model, didactic 5 turns",
        task_set=task_set,
        student=house,
        teacher=ModelSpec.objects.get(name="scripted feedback teacher"),
        protocol=Protocol.objects.get(name="Didactic, 5 turns"),
        samples_per_task=4,
        seed=0,
        created_by=user,
    )


def _add_arithmetic_task(
    task_set: TaskSet, prompt: str, answer: int, *, shards: list[str] | None = None
) -> None:
    task_add(
        task_set=task_set,
        prompt=prompt,
        reference={"answer": str(answer)},
        verifier_kind=Task.VerifierKind.NUMERIC,
        domain="arithmetic",
        shards=shards,
    )


def demo_miniature_run() -> Run | None:
    """The miniature's online run launched last from the demo, if there is one."""
    return Run.objects.filter(kind=Run.Kind.TRAIN, name=MINIATURE_RUN).order_by("-pk").first()


def demo_miniature_relaunchable(run: Run | None) -> bool:
    """Whether the button launches the miniature again: its last run failed or was cancelled."""
    return run is not None and run.status in (Run.Status.FAILED, Run.Status.CANCELLED)


@dataclass(frozen=True)
class MiniatureResult:
    """The latest ``manage.py sml_miniature`` report: when it finished, its seeds, its tables
    (as printed) and its headline figures."""

    finished: str
    seeds: list[int]
    report: list[str]
    headline: dict[str, float]


def miniature_latest_result() -> MiniatureResult | None:
    """The report ``sml_miniature`` kept last (None: none yet, or unreadable)."""
    path = latest_results_dir(Path(settings.DATA_DIR)) / LATEST_REPORT
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return MiniatureResult(
            finished=str(data["finished"]),
            seeds=[int(seed) for seed in data["seeds"]],
            report=[str(line) for line in data["report"]],
            headline={str(name): float(value) for name, value in data["headline"].items()},
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def miniature_latest_figure() -> Path | None:
    """The figure of that report (None: there is none)."""
    path = latest_results_dir(Path(settings.DATA_DIR)) / LATEST_FIGURE
    return path if path.is_file() else None


def demo_miniature_ready() -> bool:
    return (
        ModelSpec.objects.filter(name=HOUSE_MODEL).exists()
        and TaskSet.objects.filter(name=MINIATURE_HELDOUT_TASK_SET).exists()
    )


@transaction.atomic
def demo_miniature_launch(*, user: User) -> Run:
    """Online SML of the house model on the miniature's tasks with its recipe (seed 0), and its
    single-turn RL sibling on the same generation budget; each evaluated on the held-out set
    when it ends. Launched once: again, the run already launched, unless it failed or was
    cancelled (then both are launched anew)."""
    launched = demo_miniature_run()
    if launched is not None and not demo_miniature_relaunchable(launched):
        return launched
    recipe = MiniatureSettings()
    house = ModelSpec.objects.get(name=HOUSE_MODEL)
    # The house model as the miniature samples it: evaluated at temperature 0.7, not greedily.
    student, _ = model_spec_register(
        name=MINIATURE_STUDENT, backend=house.backend, location=house.location,
        generation_params={**house.generation_params, **dict(recipe.eval_params)},
        description="The house model, sampled as the miniature reproduction evaluates it.",
        replace=True,
    )  # fmt: skip
    teacher = ModelSpec.objects.get(name="scripted feedback teacher")
    online = recipe.online
    training_protocol, _ = Protocol.objects.get_or_create(
        name=f"Didactic, {online.horizon} turns",
        defaults={"mode": Protocol.Mode.DIDACTIC, "max_turns": online.horizon},
    )
    eval_protocol, _ = Protocol.objects.get_or_create(
        name=f"Didactic, {recipe.eval_turns} turns",
        defaults={"mode": Protocol.Mode.DIDACTIC, "max_turns": recipe.eval_turns},
    )
    config = online_training_run_config(
        base=student,
        rollouts=evaluation_config(
            task_set=TaskSet.objects.get(name=MINIATURE_TASK_SET), protocol=training_protocol,
            student=student, teacher=teacher,
        ),
        training=recipe.training(seed=0, device="auto"),
        online=online,
        evaluation=evaluation_config(
            task_set=TaskSet.objects.get(name=MINIATURE_HELDOUT_TASK_SET),
            protocol=eval_protocol, student=student, teacher=teacher,
            samples_per_task=recipe.heldout_samples,
        ),
    )  # fmt: skip
    run = training_run_create(name=MINIATURE_RUN, config=config, created_by=user)
    sibling = replace(config, online=single_turn_baseline(online))
    training_run_create(
        name=f"{MINIATURE_RUN}: single-turn RL baseline", config=sibling, created_by=user
    )
    return run
