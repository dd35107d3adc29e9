"""The home page shows a house-model build while it runs (steps, loss, time left), polling its
progress file with htmx until the build is over. The file is written by the build's own writer
(``models_gpu.house.progress``), as ``manage.py build_house_model`` writes it."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from models_gpu.house.progress import BuildProgressFile
from tests.config_builders import StoredKind, stored_training_run
from tests.factories import TaskFactory, UserFactory, frozen_run
from tests.transcript_builders import attempt, feedback, store
from webapp.demo.services import MINIATURE_RUN
from webapp.models_registry.house import HOUSE_MODEL_NAME
from webapp.models_registry.models import ModelSpec
from webapp.runs.models import Run
from webapp.views import HOUSE_BUILD_SILENT_SECONDS, house_build_progress_path

pytestmark = pytest.mark.django_db

POLL = {"HX-Request": "true", "HX-Target": "house-build"}


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def progress(settings: Any, tmp_path: Path) -> BuildProgressFile:
    settings.DATA_DIR = tmp_path
    # Every step reported, so the test knows the step the file holds.
    return BuildProgressFile(
        house_build_progress_path(), every_seconds=0, clock=Clock(), wall=time.time
    )


def card(page: str) -> str:
    start = page.index('id="house-build"')
    return page[page.rindex("<section", 0, start) : page.index("</section>", start)]


def train_to(report: BuildProgressFile, step: int, total: int, loss: float) -> None:
    """``step`` steps of 0.05 s each."""
    clock = report.clock
    for done in range(1, step + 1):
        clock.now += 0.05  # type: ignore[attr-defined]
        report(done, total, loss)


def test_the_home_page_shows_steps_loss_and_time_left_while_the_house_model_trains(
    researcher_client: Any, progress: BuildProgressFile
) -> None:
    progress.start(total=4000)
    train_to(progress, 1200, 4000, 1.25)
    page = researcher_client.get(reverse("home")).content.decode()
    shown = card(page)
    assert 'hx-trigger="every 2s"' in shown and 'hx-get="/"' in shown
    assert 'step <strong id="house-build-step">1200</strong> of 4000 (30%)' in shown
    assert 'loss <strong id="house-build-loss">1.250</strong>' in shown
    # 0.05 s a step, 2800 steps left: about 2 min.
    assert 'about <strong id="house-build-eta">2 min</strong> left' in shown
    poll = researcher_client.get(reverse("home"), headers=POLL)
    assert poll.status_code == 200 and poll.content.decode().lstrip().startswith("<section")
    assert 'hx-trigger="every 2s"' in poll.content.decode()


def test_polling_stops_when_the_build_is_over(
    researcher_client: Any, progress: BuildProgressFile
) -> None:
    progress.start(total=10)
    train_to(progress, 10, 10, 0.5)
    finishing = researcher_client.get(reverse("home"), headers=POLL)
    assert finishing.status_code == 200 and "Measuring it on held-out" in finishing.content.decode()
    progress.done()
    over = researcher_client.get(reverse("home"), headers=POLL)
    assert over.status_code == 286
    assert "Built in" in over.content.decode() and "hx-trigger" not in over.content.decode()
    # Loaded afresh, the home page has no card for a build that is done.
    assert 'id="house-build"' not in researcher_client.get(reverse("home")).content.decode()


def test_a_build_that_went_silent_is_shown_as_stopped(
    researcher_client: Any, progress: BuildProgressFile
) -> None:
    progress.start(total=4000)
    train_to(progress, 40, 4000, 3.0)
    progress.wall = lambda: time.time() - HOUSE_BUILD_SILENT_SECONDS - 60  # its last word
    train_to(progress, 41, 4000, 3.0)
    page = researcher_client.get(reverse("home")).content.decode()
    assert "The build stopped reporting 11 min ago" in card(page)
    assert "hx-trigger" not in card(page)


def test_no_build_no_card(researcher_client: Any, settings: Any, tmp_path: Path) -> None:
    settings.DATA_DIR = tmp_path
    page = researcher_client.get(reverse("home")).content.decode()
    assert 'id="house-build"' not in page and "Recent runs" in page
    house_build_progress_path().parent.mkdir(parents=True)
    house_build_progress_path().write_text("{not json")
    assert researcher_client.get(reverse("home")).status_code == 200


def test_a_built_house_model_shows_what_its_evaluation_scored_and_links_it(
    researcher_client: Any, progress: BuildProgressFile
) -> None:
    """Once built, the house model is no longer hidden (issue 33): the card says what its
    evaluation run scored, and links the run and the model."""
    progress.start(total=10)
    train_to(progress, 10, 10, 0.5)
    progress.done()
    assert 'id="house-model"' not in researcher_client.get(reverse("home")).content.decode()
    house = ModelSpec.objects.create(name=HOUSE_MODEL_NAME, backend="transformers", location="/h")
    run = frozen_run(name="Demo: house model", student=house, status=Run.Status.SUCCEEDED)
    task = TaskFactory(task_set=run.task_set)
    store(run, task.pk, 0, "a_first", [attempt("3", "3", True)])
    store(run, task.pk, 1, "a_late", [attempt("4", "4", False)])
    # Runs after it do not take its place: a cancelled one, a playground chat (a person plays).
    frozen_run(name="cancelled", student=house, status=Run.Status.CANCELLED)
    chat = frozen_run(name="Playground: chat", student=house, status=Run.Status.WAITING)
    chat.people.add(UserFactory())
    page = researcher_client.get(reverse("home")).content.decode()
    shown = page[
        page.index('id="house-model"') : page.index("</section>", page.index('id="house-model"'))
    ]
    assert f'href="/runs/{run.pk}/" id="house-run"' in shown
    assert f"#model-{house.pk}" in shown and "Built in" in shown
    assert 'solved <strong id="house-final">50.0%</strong>' in shown and "of 2 dialogues" in shown
    assert 'id="house-build"' not in page


def test_the_miniature_card_says_which_evaluations_still_run_after_training(
    researcher_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A succeeded miniature run whose held-out evaluations are queued is not "Succeeded"."""
    monkeypatch.setattr("webapp.views.demo_miniature_ready", lambda: True)
    world = stored_training_run(StoredKind(4, online=True))
    Run.objects.filter(pk=world.run.pk).update(name=MINIATURE_RUN)
    Run.objects.filter(pk=world.trained_evaluation.pk).update(status=Run.Status.QUEUED)
    page = researcher_client.get(reverse("home")).content.decode()
    assert 'id="miniature-status">Trained · evaluating' in page
    waiting = world.trained_evaluation.pk
    assert f'<a href="/runs/{waiting}/">#{waiting}</a> (queued)' in page
    Run.objects.filter(pk=world.trained_evaluation.pk).update(status=Run.Status.SUCCEEDED)
    page = researcher_client.get(reverse("home")).content.decode()
    assert 'id="miniature-status">Succeeded' in page and "miniature-waiting" not in page


def test_recent_runs_show_the_accuracy_the_runs_list_shows(client: Any) -> None:
    client.force_login(UserFactory(role="researcher"))
    run = frozen_run(name="scored", status=Run.Status.SUCCEEDED)
    first, second, third = TaskFactory.create_batch(3, task_set=run.task_set)
    store(run, first.pk, 0, "a_first", [attempt("3", "3", True)])
    store(run, third.pk, 0, "a_question", [attempt("9", "9", False)])
    store(run, second.pk, 0, "a_late", [
        attempt("2", "2", False), feedback("Too low."), attempt("3", "3", True),
    ])  # fmt: skip

    def rates(page: str) -> list[str]:
        row = page.split(f'data-run="{run.pk}"')[1].split("</tr>")[0]
        return re.findall(r'<span title="[^"]*Wilson[^"]*">[^<]*', row)

    home, listed = (
        rates(client.get(reverse(name)).content.decode()) for name in ("home", "run_list")
    )
    assert len(home) == 1 and home[0].startswith('<span title="2/3; 95% Wilson interval')
    assert home[0] in listed, "turn T, as the runs list shows it"
