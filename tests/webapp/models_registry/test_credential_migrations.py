"""Keys saved before the URL rule are removed once, by data migrations: from models' locations
(models_registry 0006) and from the locations frozen into runs' configurations and the errors
runs recorded (runs 0010). Run through Django's migration executor, on the test database."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

KEY = "sk-abc123def456ghi789jkl0"
BEFORE = [("models_registry", "0005_person_backend_label"), ("runs", "0009_batch_in_play_help")]
AFTER = [
    ("models_registry", "0006_strip_credentials_from_locations"),
    ("runs", "0010_strip_credentials_from_configs"),
]

LOCATIONS = {
    # stored -> after the migration
    f"http://127.0.0.1:8000/v1%3Fapi_key%3D{KEY}": "http://127.0.0.1:8000/v1",
    f"http://127.0.0.1:8000/v1%253Fapi_key%253D{KEY}": "http://127.0.0.1:8000/v1",
    f"https://user:{KEY}@api.example.com/v1?api_key={KEY}#token={KEY}": (
        "https://api.example.com/v1"
    ),
    f"http://user%3A{KEY}%40host/v1": "http://host/v1",
    f"/models/{KEY}": "",  # a path that is a key: nothing of it can stay
    f"http://[::1/v1?api_key={KEY}": "",  # cannot be parsed
    "http://127.0.0.1:8000/v1": "http://127.0.0.1:8000/v1",  # nothing to remove
    "https://h/my%20models/v1": "https://h/my%20models/v1",
    "arithmetic-student": "arithmetic-student",
}


def migrate(targets: list[tuple[str, str]]) -> Any:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.fixture
def before_the_migrations(transactional_db: None) -> Iterator[Any]:
    """The schema as it was before the two migrations; put back to the latest afterwards."""
    apps = migrate(BEFORE)
    try:
        yield apps
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())


def role(name: str, location: str) -> dict[str, Any]:
    return {"backend": "openai", "location": location, "params": {"model": "m"}, "name": name}


def test_old_locations_lose_userinfo_query_and_fragment(before_the_migrations: Any) -> None:
    ModelSpec = before_the_migrations.get_model("models_registry", "ModelSpec")
    for n, location in enumerate(LOCATIONS):
        ModelSpec.objects.create(name=f"m{n}", backend="openai", location=location)

    apps = migrate(AFTER)

    stored = dict(
        apps.get_model("models_registry", "ModelSpec").objects.values_list("name", "location")
    )
    assert stored == {f"m{n}": cleaned for n, cleaned in enumerate(LOCATIONS.values())}


def test_runs_configs_and_errors_lose_the_keys(before_the_migrations: Any) -> None:
    apps = before_the_migrations
    ModelSpec = apps.get_model("models_registry", "ModelSpec")
    Protocol = apps.get_model("runs", "Protocol")
    Run = apps.get_model("runs", "Run")
    student = ModelSpec.objects.create(name="s", backend="openai", location="http://h/v1")
    protocol = Protocol.objects.create(name="p")
    leaky = f"http://127.0.0.1:8000/v1%3Fapi_key%3D{KEY}"
    evaluation = {
        "student": role("s", leaky),
        "teacher": role("t", f"https://u:{KEY}@h/v1"),
        "judge": None,
        "protocol": {"mode": "didactic", "templates": {"student_system": f"api_key={KEY}"}},
        "seed": 3,
    }
    training = {"base": role("b", "/models/base"), "rollouts": evaluation, "method": "sft"}
    error = f"OpenAIBackendError: openai backend: model 'm' at {leaky} refused: HTTP 401"
    eval_run = Run.objects.create(
        name="e", student=student, protocol=protocol, config=evaluation, config_hash="a" * 64,
        error=error,
    )  # fmt: skip
    train_run = Run.objects.create(
        name="t", kind="train", student=student, protocol=protocol, config=training,
        config_hash="b" * 64,
    )  # fmt: skip
    clean_run = Run.objects.create(
        name="c", student=student, protocol=protocol, config={"student": role("s", "http://h/v1")},
        config_hash="c" * 64,
    )  # fmt: skip

    apps = migrate(AFTER)

    runs = {run.pk: run for run in apps.get_model("runs", "Run").objects.all()}
    evaluated, trained, clean = runs[eval_run.pk], runs[train_run.pk], runs[clean_run.pk]
    assert evaluated.config["student"]["location"] == "http://127.0.0.1:8000/v1"
    assert evaluated.config["teacher"]["location"] == "https://h/v1"
    assert trained.config["rollouts"]["student"]["location"] == "http://127.0.0.1:8000/v1"
    assert trained.config["base"]["location"] == "/models/base"
    # Only locations are rewritten: everything else in the configuration stays as it ran.
    assert evaluated.config["protocol"] == evaluation["protocol"]
    assert evaluated.config["seed"] == 3 and evaluated.config["judge"] is None
    assert KEY not in evaluated.error and "refused: HTTP 401" in evaluated.error
    assert (evaluated.config_hash, trained.config_hash) == ("a" * 64, "b" * 64)
    assert clean.config == {"student": role("s", "http://h/v1")}
