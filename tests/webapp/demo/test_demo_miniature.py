"""The demo's miniature SML: ``sml_miniature --demo-task-sets`` adds its tasks once, and the home
page's button launches the house model's online run with the miniature's recipe (and its
single-turn sibling), once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.urls import reverse

from models_gpu.spec.miniature import MINIATURE_ONLINE, MiniatureSettings
from models_gpu.spec.training_run import TrainingRunConfig
from webapp.accounts.models import User
from webapp.demo.services import (
    DEMO_USERNAME,
    HOUSE_MODEL,
    MINIATURE_HELDOUT_TASK_SET,
    MINIATURE_STUDENT,
    MINIATURE_TASK_SET,
)
from webapp.models_registry.models import ModelSpec
from webapp.runs.models import Run
from webapp.tasks.models import TaskSet

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(tiny_model_dir: Path, settings: Any, tmp_path: Path) -> None:
    settings.DIALAB_TRAINING_DIR = tmp_path / "training"
    call_command("demo_project", "--no-run")
    ModelSpec.objects.create(
        name=HOUSE_MODEL, backend="transformers", location=str(tiny_model_dir),
        generation_params={"temperature": 0.0, "max_new_tokens": 16},
    )  # fmt: skip


def test_the_task_sets_are_added_once_with_the_held_out_ranges_apart(demo: None) -> None:
    call_command("sml_miniature", "--demo-task-sets")
    call_command("sml_miniature", "--demo-task-sets")
    training = TaskSet.objects.get(name=MINIATURE_TASK_SET).tasks.all()
    heldout = TaskSet.objects.get(name=MINIATURE_HELDOUT_TASK_SET).tasks.all()
    assert (len(training), len(heldout)) == (128, 32), "16 and 4 ranges of 8, each number once"

    def lower_end(task: Any) -> int:
        return int(task.prompt.split("between ")[1].split(" ")[0])

    assert {lower_end(t) for t in heldout} == {5, 10, 15, 20}
    assert not {lower_end(t) for t in training} & {5, 10, 15, 20}
    assert {t.verifier_kind for t in heldout} == {"numeric"}


def test_the_button_launches_the_miniature_once(
    demo: None, client: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client.force_login(User.objects.get(username=DEMO_USERNAME))
    assert b"miniature-launch" not in client.get(reverse("home")).content, "no tasks yet"
    call_command("sml_miniature", "--demo-task-sets")
    assert b"miniature-launch" in client.get(reverse("home")).content

    with django_capture_on_commit_callbacks(execute=False) as dispatched:
        launched = client.post(reverse("demo_miniature"))
    run, sibling = Run.objects.filter(kind=Run.Kind.TRAIN).order_by("pk")
    assert launched.url == reverse("training_run_detail", args=[run.pk])
    assert len(dispatched) == 2, "both runs go to a worker"
    config = TrainingRunConfig.from_json(run.config)
    settings = MiniatureSettings()
    assert config.online == MINIATURE_ONLINE and config.training == settings.training(0, "auto")
    assert config.rollouts and config.rollouts.task_set.name == MINIATURE_TASK_SET
    assert config.rollouts.protocol.max_turns == MINIATURE_ONLINE.horizon
    evaluation = config.evaluation
    assert evaluation and evaluation.task_set.name == MINIATURE_HELDOUT_TASK_SET
    assert (evaluation.protocol.max_turns, evaluation.samples_per_task) == (8, 8)
    assert evaluation.student.name == MINIATURE_STUDENT
    assert evaluation.student.params["temperature"] == 0.7, "sampled, as the miniature evaluates"
    sibling_config = TrainingRunConfig.from_json(sibling.config)
    assert sibling_config.online and sibling_config.online.horizon == 1
    assert sibling_config.online.group_size == 32, "the same generation budget"

    again = client.post(reverse("demo_miniature"))
    assert again.url == launched.url and Run.objects.filter(kind=Run.Kind.TRAIN).count() == 2
    home = client.get(reverse("home")).content.decode()
    assert "miniature-launch" not in home and f'href="{launched.url}"' in home


def test_a_failed_miniature_can_be_launched_again(
    demo: None, client: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client.force_login(User.objects.get(username=DEMO_USERNAME))
    call_command("sml_miniature", "--demo-task-sets")
    with django_capture_on_commit_callbacks(execute=False):
        first = client.post(reverse("demo_miniature"))
    Run.objects.filter(kind=Run.Kind.TRAIN).update(status=Run.Status.FAILED)
    home = client.get(reverse("home")).content.decode()
    assert "Train it again" in home
    with django_capture_on_commit_callbacks(execute=False) as dispatched:
        second = client.post(reverse("demo_miniature"))
    assert second.url != first.url and len(dispatched) == 2, "both runs anew"
    assert Run.objects.filter(kind=Run.Kind.TRAIN).count() == 4
    home = client.get(reverse("home")).content.decode()
    assert f'href="{second.url}"' in home and "miniature-launch" not in home


def test_the_home_page_shows_the_last_measured_result(
    demo: None, client: Any, settings: Any, tmp_path: Path
) -> None:
    client.force_login(User.objects.get(username=DEMO_USERNAME))
    call_command("sml_miniature", "--demo-task-sets")
    settings.DATA_DIR = tmp_path / "data"
    home = client.get(reverse("home")).content.decode()
    assert "Not measured on this instance yet" in home
    assert client.get(reverse("demo_miniature_figure")).status_code == 404
    latest = tmp_path / "data" / "miniature"
    latest.mkdir(parents=True)
    (latest / "latest.json").write_text(json.dumps({
        "finished": "2026-11-27T06:00:00+00:00", "seeds": [0, 1],
        "report": ["Accuracy after turn k <on> held-out tasks"],
        "headline": {"gain_turn_1": 1.5, "gain_turn_8": 20.3},
    }))  # fmt: skip
    (latest / "latest.svg").write_text("<svg xmlns='http://www.w3.org/2000/svg'></svg>")
    home = client.get(reverse("home")).content.decode()
    assert "gain_turn_8" in home and "20.3" in home and "seeds 0, 1" in home
    assert "Accuracy after turn k &lt;on&gt; held-out tasks" in home, "escaped"
    figure = client.get(reverse("demo_miniature_figure"))
    assert figure["Content-Type"] == "image/svg+xml"
    assert figure["Content-Security-Policy"] == "default-src 'none'"
