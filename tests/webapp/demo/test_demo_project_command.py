"""``manage.py demo_project``: the demo project is created once, its house run once the house model
exists."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from webapp.accounts.models import User
from webapp.demo.services import (
    DEMO_LIC,
    DEMO_PERSON_RUN,
    DEMO_TAG,
    DEMO_TASK_SET,
    DEMO_USERNAME,
    HOUSE_MODEL,
    HOUSE_TASK_SET,
    SHARDED_TASK_SET,
)
from webapp.experiments.models import LostInConversation
from webapp.models_registry.models import ModelSpec
from webapp.runs.models import Run, Tag
from webapp.tasks.models import TaskSet

pytestmark = pytest.mark.django_db


def test_demo_project_is_created_once(django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks() as callbacks:
        call_command("demo_project")
        call_command("demo_project")
    assert User.objects.get(username=DEMO_USERNAME).is_researcher
    assert TaskSet.objects.get(name=DEMO_TASK_SET).tasks.count() == 40
    sharded = TaskSet.objects.get(name=SHARDED_TASK_SET).tasks.all()
    assert len(sharded) == 20 and all(len(task.shards) == 3 for task in sharded)
    modes = sorted(Run.objects.values_list("protocol__mode", flat=True))
    # The didactic run and its single-turn baseline in three seeds each, tagged to compare; the
    # sharded run; a Lost-in-Conversation experiment (FULL and CONCAT in one turn, SHARDED); a
    # didactic run on five tasks where the demo user is the teacher.
    assert modes == ["didactic"] * 4 + ["sharded"] * 2 + ["single_turn"] * 5
    assert Tag.objects.get(name=DEMO_TAG).runs.count() == 6
    assert LostInConversation.objects.get().name == DEMO_LIC
    person_run = Run.objects.get(name=DEMO_PERSON_RUN)
    assert person_run.frozen_config.people_roles() == ["teacher"]
    assert list(person_run.people.values_list("username", flat=True)) == [DEMO_USERNAME]
    assert person_run.progress_total == 5
    assert len(callbacks) == 11  # each run is dispatched once, after commit
    assert not TaskSet.objects.filter(name=HOUSE_TASK_SET).exists()  # no house model yet


def test_demo_project_adds_the_house_run_once_the_house_model_exists(
    django_capture_on_commit_callbacks,  # type: ignore[no-untyped-def]
) -> None:
    call_command("demo_project")
    ModelSpec.objects.create(name=HOUSE_MODEL, backend="transformers", location="/models/house")
    with django_capture_on_commit_callbacks() as callbacks:
        call_command("demo_project")
        call_command("demo_project")
    run = Run.objects.get(student__name=HOUSE_MODEL)
    assert run.task_set.name == HOUSE_TASK_SET and run.teacher.name == "scripted feedback teacher"
    assert run.task_set.tasks.count() == 30
    assert len(callbacks) == 1
