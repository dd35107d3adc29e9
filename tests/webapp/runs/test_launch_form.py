"""Launching a run from the form: roles per mode, samples per task, batch size, seed."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from tests.factories import ProtocolFactory, StudentFactory, TaskFactory, TaskSetFactory
from webapp.models_registry.models import ModelSpec
from webapp.runs.models import Protocol, Run

pytestmark = pytest.mark.django_db


def scripted(policy: str) -> ModelSpec:
    return StudentFactory(name=policy, location=policy)


@pytest.fixture
def models() -> dict[str, ModelSpec]:
    return {
        "student": scripted("arithmetic-student"),
        "teacher": scripted("feedback-teacher"),
        "sharded_student": scripted("sharded-student"),
        "revealer": scripted("shard-revealer"),
    }


@pytest.fixture
def plain_set():  # type: ignore[no-untyped-def]
    task_set = TaskSetFactory(name="plain")
    TaskFactory.create_batch(3, task_set=task_set)
    return task_set


@pytest.fixture
def sharded_set():  # type: ignore[no-untyped-def]
    task_set = TaskSetFactory(name="sharded")
    for position in range(2):
        TaskFactory(
            task_set=task_set,
            prompt="What is 3 + 4?",
            reference={"answer": "7"},
            shards=["I need a sum.", "The first number is 3.", "The second number is 4."],
            position=position,
        )
    return task_set


def launch(client, **fields: Any):  # type: ignore[no-untyped-def]
    data = {"samples_per_task": 2, "batch_size": 16, "seed": 3}
    data.update({key: getattr(value, "pk", value) for key, value in fields.items()})
    return client.post(reverse("run_create"), {k: v for k, v in data.items() if v is not None})


def test_the_form_offers_every_role_and_the_sampling_settings(researcher_client) -> None:  # type: ignore[no-untyped-def]
    page = researcher_client.get(reverse("run_create")).content.decode()
    for field in ("student", "teacher", "user_simulator", "judge", "samples_per_task",
                  "batch_size", "seed"):  # fmt: skip
        assert f'name="{field}"' in page
    assert "Samples per task (K)" in page


def test_a_sharded_run_freezes_its_user_simulator_and_batch_size(
    researcher_client, models, sharded_set
) -> None:  # type: ignore[no-untyped-def]
    protocol = ProtocolFactory(mode=Protocol.Mode.SHARDED, max_turns=4)
    response = launch(
        researcher_client, task_set=sharded_set, protocol=protocol,
        student=models["sharded_student"], user_simulator=models["revealer"],
    )  # fmt: skip
    assert response.status_code == 302, response.content.decode()
    run = Run.objects.get()
    assert (run.user_simulator, run.teacher, run.judge) == (models["revealer"], None, None)
    assert run.config["user_simulator"]["location"] == "shard-revealer"
    assert run.config["teacher"] is None and run.config["judge"] is None
    assert run.frozen_config.batch_size == 16
    assert run.progress_total == 4
    # Unnamed, it is named by what tells it from other runs of this model on this set.
    assert run.name == f"sharded-student on sharded, {protocol}, seed 3"


def test_a_judge_is_frozen_with_the_run(researcher_client, models, plain_set) -> None:  # type: ignore[no-untyped-def]
    judge = StudentFactory(name="judge", location="feedback-teacher")  # any model may judge
    protocol = ProtocolFactory(judge_leaks=True)
    response = launch(
        researcher_client, task_set=plain_set, protocol=protocol, student=models["student"],
        teacher=models["teacher"], judge=judge,
    )  # fmt: skip
    assert response.status_code == 302, response.content.decode()
    assert Run.objects.get().config["judge"]["name"] == "judge"


def test_the_same_model_may_play_several_roles(researcher_client, models, plain_set) -> None:  # type: ignore[no-untyped-def]
    house = ModelSpec.objects.create(name="house", backend="transformers", location="/ckpt")
    response = launch(
        researcher_client, task_set=plain_set, protocol=ProtocolFactory(), student=house,
        teacher=house,
    )  # fmt: skip
    assert response.status_code == 302, response.content.decode()
    run = Run.objects.get()
    assert run.config["student"] == run.config["teacher"]


@pytest.mark.parametrize(
    ("mode", "roles", "message"),
    [
        ("didactic", {"teacher": None}, "The didactic protocol needs a teacher model."),
        ("sharded", {"teacher": None}, "The sharded mode needs a user simulator"),
        ("single_turn", {}, "has no teacher: leave this empty"),
        ("self_correction", {}, "has no teacher: leave this empty"),
        ("didactic", {"user_simulator": "revealer"}, "has no user simulator: leave this empty"),
        ("didactic", {"judge": "student"}, "asks no judge anything (its judge switches are off)"),
    ],
)
def test_roles_follow_the_protocol(
    researcher_client, models, plain_set, sharded_set, mode: str, roles: dict, message: str
) -> None:  # type: ignore[no-untyped-def]
    protocol = ProtocolFactory(mode=mode, max_turns=1 if mode == "single_turn" else 4)
    fields = {"teacher": "teacher", **roles}
    chosen = {role: models[name] if name else None for role, name in fields.items()}
    task_set = sharded_set if mode == "sharded" else plain_set
    response = launch(
        researcher_client, task_set=task_set, protocol=protocol, student=models["student"],
        **chosen,
    )  # fmt: skip
    assert message in response.content.decode()
    assert not Run.objects.exists()


def test_a_judge_is_optional_for_a_judging_protocol(researcher_client, models, plain_set) -> None:  # type: ignore[no-untyped-def]
    protocol = ProtocolFactory(judge_turn_kinds=True, judge_leaks=True, name="judged")
    response = launch(
        researcher_client, task_set=plain_set, protocol=protocol, student=models["student"],
        teacher=models["teacher"],
    )  # fmt: skip
    assert response.status_code == 302, "without a judge, the rules alone decide"
    assert Run.objects.get().config["judge"] is None


def test_sharded_runs_need_tasks_with_shards(researcher_client, models, plain_set) -> None:  # type: ignore[no-untyped-def]
    protocol = ProtocolFactory(mode=Protocol.Mode.SHARDED, max_turns=4)
    response = launch(
        researcher_client, task_set=plain_set, protocol=protocol,
        student=models["sharded_student"], user_simulator=models["revealer"],
    )  # fmt: skip
    assert "3 task(s) in this set have no shards" in response.content.decode()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"batch_size": 0}, "greater than or equal to 1"),
        ({"samples_per_task": 65}, "less than or equal to 64"),
        ({"seed": -1}, "greater than or equal to 0"),
    ],
)
def test_sampling_settings_are_checked(
    researcher_client, models, plain_set, fields: dict, message: str
) -> None:  # type: ignore[no-untyped-def]
    response = launch(
        researcher_client, task_set=plain_set, protocol=ProtocolFactory(),
        student=models["student"], teacher=models["teacher"], **fields,
    )  # fmt: skip
    assert message in response.content.decode()


def test_a_person_can_play_a_role_and_answers_are_theirs_by_default(
    researcher_client, models, plain_set
) -> None:  # type: ignore[no-untyped-def]
    person = ModelSpec.objects.create(name="person", backend="human")
    response = launch(
        researcher_client, task_set=plain_set, protocol=ProtocolFactory(),
        student=models["student"], teacher=person,
    )  # fmt: skip
    assert response.status_code == 302
    run = Run.objects.get()
    assert run.frozen_config.people_roles() == ["teacher"]
    assert list(run.people.all()) == [run.created_by]


def test_annotators_answer_only_as_the_teacher(researcher_client, models, plain_set) -> None:  # type: ignore[no-untyped-def]
    from tests.factories import UserFactory

    person = ModelSpec.objects.create(name="person", backend="human")
    annotator = UserFactory(username="ann", role="annotator")
    response = launch(
        researcher_client, task_set=plain_set, protocol=ProtocolFactory(), student=person,
        teacher=models["teacher"], people=[annotator.pk],
    )  # fmt: skip
    assert "ann: annotators may answer only as the teacher" in response.content.decode()
    assert not Run.objects.exists()


def test_roles_played_by_the_same_model_load_it_once(tiny_model_dir) -> None:  # type: ignore[no-untyped-def]
    from models_gpu.spec.run import RoleSpec
    from workers.evaluation import load_role_generators

    house = RoleSpec("transformers", str(tiny_model_dir), {"max_new_tokens": 4})
    greedy = RoleSpec("transformers", str(tiny_model_dir), {"max_new_tokens": 4, "temperature": 0})
    same_as_house = RoleSpec(house.backend, house.location, {"max_new_tokens": 4})
    generators = load_role_generators(
        {"student": house, "teacher": same_as_house, "user_simulator": None, "judge": greedy}
    )
    assert generators["student"] is generators["teacher"], "same RoleSpec: one generator"
    assert generators["judge"] is not generators["student"], "other settings: its own"
    assert generators["user_simulator"] is None
