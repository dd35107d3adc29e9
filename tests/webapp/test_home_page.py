"""The home page shows a house-model build while it runs (steps, loss, time left), polling its
progress file with htmx until the build is over. The file is written by the build's own writer
(``models_gpu.house.progress``), as ``manage.py build_house_model`` writes it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from models_gpu.house.progress import BuildProgressFile
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
