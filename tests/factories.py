"""factory_boy factories for Dialab's models."""

from __future__ import annotations

from typing import Any

import factory

from webapp.accounts.models import User
from webapp.models_registry.models import ModelSpec
from webapp.runs.models import Protocol, Run
from webapp.runs.services import evaluation_config
from webapp.tasks.models import Task, TaskSet

PASSWORD = "correct horse battery staple"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    role = User.Role.RESEARCHER
    password = factory.PostGenerationMethodCall("set_password", PASSWORD)

    @factory.post_generation
    def save_password(self, create: bool, extracted: object, **kwargs: object) -> None:
        if create:
            self.save()


class TaskSetFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = TaskSet

    name = factory.Sequence(lambda n: f"task set {n}")


class TaskFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Task

    task_set = factory.SubFactory(TaskSetFactory)
    position = factory.Sequence(lambda n: n)
    prompt = factory.Sequence(lambda n: f"What is {n} + {n + 1}?")
    reference = factory.LazyAttribute(lambda task: {"answer": str(2 * task.position + 1)})
    verifier_kind = Task.VerifierKind.NUMERIC
    domain = "arithmetic"


class StudentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ModelSpec

    name = factory.Sequence(lambda n: f"student {n}")
    backend = ModelSpec.Backend.SCRIPTED
    location = "arithmetic-student"


class TeacherFactory(StudentFactory):
    name = factory.Sequence(lambda n: f"teacher {n}")
    location = "feedback-teacher"


class ProtocolFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Protocol

    name = factory.Sequence(lambda n: f"didactic {n}")
    mode = Protocol.Mode.DIDACTIC
    max_turns = 5


def frozen_run(
    *,
    task_set: TaskSet | None = None,
    student: ModelSpec | None = None,
    teacher: ModelSpec | None = None,
    user_simulator: ModelSpec | None = None,
    judge: ModelSpec | None = None,
    protocol: Protocol | None = None,
    name: str = "run",
    batch_size: int = 64,
    seed: int = 0,
    **fields: Any,
) -> Run:
    """A run row with the configuration the launch service would freeze for these rows, created
    without the service's checks or dispatch (for tests of pages, metrics and labels)."""
    task_set = task_set or TaskSetFactory()
    student = student or StudentFactory()
    protocol = protocol or ProtocolFactory()
    roles = {"teacher": teacher, "user_simulator": user_simulator, "judge": judge}
    config = evaluation_config(
        task_set=task_set, protocol=protocol, student=student, batch_size=batch_size,
        seed=seed, check=False, **roles,
    )  # fmt: skip
    return Run.objects.create(
        name=name,
        task_set=task_set,
        student=student,
        protocol=protocol,
        **roles,
        config=config.to_json(),
        config_hash=config.config_hash(),
        **fields,
    )
