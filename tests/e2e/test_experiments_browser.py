"""Experiments in headless Chromium: three seeds each of a base and a trained model, chosen in
the runs table, compared on one page with the gap's interval and test, and a figure downloaded as
SVG; the transfer matrix of two trained models; a Lost-in-Conversation experiment launched from
its form and played by a real worker."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import wait_until
from tests.e2e.test_transcripts_browser import shot
from tests.factories import PASSWORD, UserFactory
from tests.webapp.experiments.builders import base_and_trained_seeds, base_and_two_trained_models
from webapp.demo.services import SHARDED_TASK_SET, demo_project_create
from webapp.experiments.models import LostInConversation
from webapp.runs.models import Run, Tag

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def log_in(page, path: str) -> None:  # type: ignore[no-untyped-def]
    researcher = UserFactory()
    page.goto(path)
    page.fill("#id_username", researcher.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")


def test_three_seeds_of_base_and_trained_compared_with_the_gaps_interval_and_test(
    page, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    runs = base_and_trained_seeds(tasks=30)
    log_in(page, "/runs/?group=seeds")
    page.wait_for_selector("#run-table")
    assert page.locator(".group-row").count() == 2
    assert page.locator(".seeds-mean").count() == 2

    # Tag the six runs (htmx posts the ticked boxes; the table reloads with the chips).
    for run in runs["base"] + runs["trained"]:
        page.check(f"input[name=runs][value='{run.pk}']")
    page.fill("#tag-name", "seeds study")
    page.click("#tag-selected")
    page.wait_for_selector("#run-table .tag:has-text('seeds study')")
    assert Tag.objects.get(name="seeds study").runs.count() == 6
    shot(page, "runs-table-grouped-by-seed")

    for run in runs["base"] + runs["trained"]:
        page.check(f"input[name=runs][value='{run.pk}']")
    page.click("#compare-selected")
    page.wait_for_url("**/experiments/compare/**")
    page.wait_for_selector("#comparison-chart .main-svg")
    page.wait_for_selector("#difference-chart .main-svg")
    lines = page.locator("#comparison-lines tbody tr")
    assert lines.count() == 2, "three seeds of each model are one line each"
    assert "3 seeds" in lines.nth(0).inner_text() and "baseline" in lines.nth(0).inner_text()
    gap = page.locator("#gap-table tbody tr").first
    final = gap.locator(".gap-final").inner_text()
    assert final.startswith("+") and "pts" in final, final
    assert "significant at 5%" in gap.locator(".gap-p").inner_text()
    shot(page, "compare-base-and-trained-seeds")

    # The other way round: the trained model as the baseline, the gap turns negative.
    page.select_option("#baseline", str(runs["trained"][0].pk))
    page.click("#compare-controls button[type=submit]")
    page.wait_for_selector("#difference-chart .main-svg")
    assert page.locator("#gap-table .gap-final").first.inner_text().startswith("-")

    with page.expect_download() as download_info:
        page.click("#accuracy-downloads a[data-format=svg]")
    download = download_info.value
    assert download.suggested_filename == "comparison-accuracy.svg"
    saved = tmp_path / download.suggested_filename
    download.save_as(saved)
    svg = saved.read_text()
    assert "<svg" in svg and "Accuracy after turn k" in svg


def test_the_transfer_matrix_of_two_trained_models(page) -> None:  # type: ignore[no-untyped-def]
    base_and_two_trained_models()
    log_in(page, "/experiments/")
    page.click("#transfer-link")
    page.wait_for_selector("#transfer-matrix")
    heads = page.locator("#transfer-matrix thead th").all_inner_texts()
    assert heads[1:] == ["arithmetic", "logic"]
    rows = page.locator("#transfer-matrix tbody tr")
    assert rows.count() == 2
    gains = page.locator("#transfer-matrix td.gain")
    assert gains.count() == 2, "each model gains on the domain it trained on, and only there"
    shot(page, "transfer-matrix")


def test_a_lost_in_conversation_experiment_played_by_a_real_worker(page, worker) -> None:  # type: ignore[no-untyped-def]
    demo_project_create(task_count=12, launch_run=False)  # 6 sharded arithmetic instructions
    log_in(page, "/experiments/")
    page.click("#new-lic")
    page.fill("#id_name", "LiC on sharded arithmetic")
    page.select_option("#id_task_set", label=SHARDED_TASK_SET)
    page.select_option("#id_student", label="scripted sharded student")
    page.select_option("#id_user_simulator", label="scripted shard revealer")
    page.fill("#id_repeats", "4")
    page.fill("#id_max_turns", "6")
    page.click("#lic-form button[type=submit]")
    page.wait_for_url("**/experiments/lost-in-conversation/*/")
    experiment = LostInConversation.objects.get()
    wait_until(
        lambda: all(
            r.is_finished
            for r in Run.objects.filter(pk__in=[r.pk for r in experiment.runs.values()])
        ),
        timeout=120,
        message=worker.output,
    )
    page.wait_for_selector("#lic-live:not([hx-get])")  # the page noticed, and stopped polling
    assert page.locator("#lic-partial").count() == 0
    for condition in ("FULL", "CONCAT", "SHARDED"):
        row = page.locator(f"tr[data-condition={condition}]")
        assert "Succeeded" in row.inner_text()
        assert "24 over 6 instructions" in row.inner_text()
        assert "%" in row.locator(".lic-mean").inner_text()
    assert "From FULL to SHARDED" in page.locator("#lic-drop").inner_text()
    assert page.locator("#lic-premature th").count() >= 2
    page.wait_for_selector("#premature-chart .main-svg")
    shot(page, "lost-in-conversation")
