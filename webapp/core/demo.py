"""The demo project: a researcher, scripted models, protocols, arithmetic tasks and one run.

Everything is made here, locally and deterministically: nothing is downloaded.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from django.db import transaction

from webapp.accounts.models import User
from webapp.accounts.services import user_create
from webapp.models_registry.models import ModelSpec
from webapp.runs.models import Protocol, Run
from webapp.runs.services import evaluation_run_create
from webapp.tasks.models import Task, TaskSet
from webapp.tasks.services import task_add, task_set_create

DEMO_USERNAME = "demo"
DEMO_PASSWORD = "dialab-demo"
DEMO_TASK_SET = "Arithmetic (demo)"


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


@dataclass(frozen=True)
class DemoProject:
    user: User
    task_set: TaskSet
    run: Run | None


@transaction.atomic
def demo_project_create(*, task_count: int = 40, launch_run: bool = True) -> DemoProject:
    """Create the demo project once; running it again changes nothing."""
    user = User.objects.filter(username=DEMO_USERNAME).first() or user_create(
        username=DEMO_USERNAME, password=DEMO_PASSWORD, role=User.Role.RESEARCHER
    )
    student, _ = ModelSpec.objects.get_or_create(
        name="scripted arithmetic student",
        defaults={
            "backend": ModelSpec.Backend.SCRIPTED,
            "location": "arithmetic-student",
            "generation_params": {"first_try_accuracy": 0.35, "feedback_gain": 0.45},
            "description": "A seeded policy that is sometimes right first and uses feedback.",
        },
    )
    teacher, _ = ModelSpec.objects.get_or_create(
        name="scripted feedback teacher",
        defaults={
            "backend": ModelSpec.Backend.SCRIPTED,
            "location": "feedback-teacher",
            "description": "Feedback computed from the verifier's details, never the answer.",
        },
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

    task_set = task_set_create(
        name=DEMO_TASK_SET,
        description="Procedural arithmetic for trying Dialab out.",
        created_by=user,
    )
    for prompt, answer in arithmetic_problems(task_count, seed=2026):
        task_add(
            task_set=task_set,
            prompt=prompt,
            reference={"answer": str(answer)},
            verifier_kind=Task.VerifierKind.NUMERIC,
            domain="arithmetic",
        )
    run = None
    if launch_run:
        run = evaluation_run_create(
            name="Demo: scripted student, didactic 5 turns",
            task_set=task_set,
            student=student,
            teacher=teacher,
            protocol=didactic,
            samples_per_task=4,
            seed=0,
            created_by=user,
        )
    return DemoProject(user=user, task_set=task_set, run=run)
