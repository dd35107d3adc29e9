"""What a newcomer tripped over on the second walk (issue 33), checked in headless Chromium at
1400 and 1024 px wide: the online training page's charts (rates from 0 to 100%, axes and a note
in every panel before the first step)."""

from __future__ import annotations

import re

import pytest

from models_gpu.spec.reports import Curve
from tests.config_builders import StoredKind, stored_training_run
from tests.e2e.test_newcomer_layout_browser import WIDTHS, at_width, login, shot
from tests.factories import UserFactory
from webapp.runs.models import MetricPoint, Run
from webapp.training.charts import ONLINE_PANELS, SHARES

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def y_ticks(page, panel: int) -> list[str]:  # type: ignore[no-untyped-def]
    """The tick labels Plotly drew on panel ``panel``'s y axis (0-based)."""
    axis = "y" if panel == 0 else f"y{panel + 1}"
    return page.locator(f"#training-chart g.{axis}tick text").all_text_contents()


def open_chart(page, path: str, width: int) -> None:  # type: ignore[no-untyped-def]
    at_width(page, width)
    page.goto(path)
    page.wait_for_selector("#training-chart[data-drawn=true] .main-svg")


def test_the_online_training_charts_have_axes_from_the_start_and_rates_in_percent(page) -> None:  # type: ignore[no-untyped-def]
    researcher = UserFactory(username="grace")
    run = stored_training_run(StoredKind(4, online=True)).run
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING, progress_total=12)
    path = f"/training/runs/{run.pk}/"
    login(page, researcher.username, path)
    shares = [i for i, (_, names) in enumerate(ONLINE_PANELS) if SHARES & set(names)]
    for width in WIDTHS:
        open_chart(page, path, width)
        notes = page.locator("#training-chart .annotation-text").all_text_contents()
        assert notes.count("no training steps logged yet") == len(ONLINE_PANELS)
        for panel in range(len(ONLINE_PANELS)):
            assert y_ticks(page, panel), f"panel {panel} has no axis before the first step"
        for panel in shares:
            assert y_ticks(page, panel)[0] == "0%" and y_ticks(page, panel)[-1] == "100%"
        shot(page, f"second-walk-online-empty-{width}")

    # Three steps in, one held-out evaluation (2 of 5 solved by turn 1): no rate is negative
    # or past 100% (a question rate of 0 throughout once drew an axis from -100% to 100%).
    for step in (1, 2, 3):
        for name, value in (
            (Curve.REWARD, 0.2 * step),
            (Curve.QUESTION_RATE, 0.0),
            (Curve.ROLLOUT_ACCURACY_AFTER_TURN_.at(1), 0.25),
            (Curve.ZERO_VARIANCE_GROUPS, 1.0),
            (Curve.LOSS, 0.01),
            (Curve.SOLVED, 0.25),
        ):
            MetricPoint.objects.create(run=run, name=name, step=step, value=value)
    MetricPoint.objects.create(run=run, name=Curve.HELDOUT_DIALOGUES, step=2, value=5)
    MetricPoint.objects.create(run=run, name=Curve.HELDOUT_SOLVED_BY_TURN_.at(1), step=2, value=2)
    for width in WIDTHS:
        open_chart(page, path, width)
        for panel in shares:
            ticks = y_ticks(page, panel)
            assert ticks[0] == "0%" and ticks[-1] == "100%", ticks
            assert all(re.fullmatch(r"\d+%", tick) for tick in ticks), ticks
        assert "no held-out evaluation yet" not in page.locator("#training-chart").text_content()
        assert page.locator("#training-chart g.errorbar path").count(), "the held-out interval"
        assert page.text_content("#latest-solved") == "solved 25%"
        shot(page, f"second-walk-online-steps-{width}")
