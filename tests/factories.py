"""factory_boy factories for Dialab's models."""

from __future__ import annotations

import factory

from webapp.accounts.models import User
from webapp.models_registry.models import ModelSpec
from webapp.runs.models import Protocol
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
