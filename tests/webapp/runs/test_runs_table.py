"""The runs table: figures per run, filters, sorting by a figure, grouping by seed, tags and
renaming."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.webapp.experiments.builders import base_and_trained_seeds
from webapp.runs.models import Tag

pytestmark = pytest.mark.django_db


def _row_names(html: str) -> list[str]:
    return re.findall(
        r'<tr data-run="\d+">\s*<td>.*?</td>\s*<td><a href="/runs/\d+/">([^<]+)</a>', html, re.S
    )


def test_each_run_shows_its_figures_and_sorting_by_one_orders_the_rows(researcher_client) -> None:  # type: ignore[no-untyped-def]
    runs = base_and_trained_seeds(tasks=20)
    html = researcher_client.get("/runs/?sort=-accuracy_final").content.decode()
    names = _row_names(html)
    assert set(names[:3]) == {"trained seed 0", "trained seed 1", "trained seed 2"}
    assert set(names[3:]) == {"base seed 0", "base seed 1", "base seed 2"}
    assert "T=3" in html and f'name="runs" value="{runs["base"][0].pk}"' in html
    ascending = _row_names(researcher_client.get("/runs/?sort=accuracy_final").content.decode())
    assert set(ascending[:3]) == set(names[3:])


def test_the_table_counts_figures_in_a_fixed_number_of_queries(researcher_client) -> None:  # type: ignore[no-untyped-def]
    counts = []
    for tasks, prefix in ((4, ""), (12, "more ")):
        base_and_trained_seeds(tasks=tasks, prefix=prefix)  # 6 runs, then 12
        with CaptureQueriesContext(connection) as queries:
            assert researcher_client.get("/runs/?sort=-leak_rate").status_code == 200
        counts.append(len(queries))
    assert counts[0] == counts[1], counts


def test_grouping_by_seed_gives_each_configuration_its_mean_over_seeds(researcher_client) -> None:  # type: ignore[no-untyped-def]
    base_and_trained_seeds(tasks=20)
    html = researcher_client.get("/runs/?group=seeds").content.decode()
    assert html.count('class="group-row"') == 2
    assert html.count("mean over 3 seeds") == 2 and "(95% t interval)" in html
    assert "sums · base model · didactic 3 (seeds 0, 1, 2)" in html


def test_filters_narrow_the_table_and_say_when_nothing_matches(researcher_client) -> None:  # type: ignore[no-untyped-def]
    runs = base_and_trained_seeds(tasks=4)
    trained = runs["trained"][0].student
    names = _row_names(researcher_client.get(f"/runs/?model={trained.pk}").content.decode())
    assert sorted(names) == ["trained seed 0", "trained seed 1", "trained seed 2"]
    html = researcher_client.get("/runs/?q=nothing-like-this").content.decode()
    assert 'id="no-runs"' in html and "No run matches these filters" in html


def test_tagging_selected_runs_then_filtering_by_the_tag(researcher_client) -> None:  # type: ignore[no-untyped-def]
    runs = base_and_trained_seeds(tasks=4)
    chosen = [run.pk for run in runs["base"][:2]]
    response = researcher_client.post("/runs/tag/", {"runs": chosen, "tag": "paper fig 2"})
    assert response.headers["HX-Refresh"] == "true"
    tag = Tag.objects.get(name="paper fig 2")
    names = _row_names(researcher_client.get(f"/runs/?tags={tag.pk}").content.decode())
    assert sorted(names) == ["base seed 0", "base seed 1"]
    researcher_client.post("/runs/tag/", {"runs": chosen, "tag": "bad/tag"})
    assert not Tag.objects.filter(name="bad/tag").exists()


def test_renaming_and_retagging_a_run(researcher_client) -> None:  # type: ignore[no-untyped-def]
    run = base_and_trained_seeds(tasks=2)["base"][0]
    researcher_client.post(f"/runs/{run.pk}/label/", {"name": "baseline A", "tags": "baseline, a"})
    run.refresh_from_db()
    assert run.name == "baseline A"
    assert sorted(run.tags.values_list("name", flat=True)) == ["a", "baseline"]
    researcher_client.post(f"/runs/{run.pk}/label/", {"name": "baseline A", "tags": "baseline"})
    assert list(Tag.objects.values_list("name", flat=True)) == ["baseline"], "unused tags go"
    page = researcher_client.get(f"/runs/{run.pk}/label/")
    assert page.status_code == 405
    refused = researcher_client.post(
        f"/runs/{run.pk}/label/", {"name": "", "tags": ""}, follow=True
    )
    assert "Nothing saved" in refused.content.decode()


def test_grouped_rows_keep_the_sort_within_their_group(researcher_client) -> None:  # type: ignore[no-untyped-def]
    base_and_trained_seeds(tasks=2)
    html = researcher_client.get("/runs/?group=seeds&sort=name").content.decode()
    assert _row_names(html) == [
        "base seed 0", "base seed 1", "base seed 2",
        "trained seed 0", "trained seed 1", "trained seed 2",
    ]  # fmt: skip


def test_a_figure_that_does_not_apply_reads_a_dash_and_one_not_known_yet_an_ellipsis(
    researcher_client,
) -> None:  # type: ignore[no-untyped-def]
    """A run played out with no teacher turn has no leak rate ("—"); a run in its first batch
    does not know its rates until the batch ends ("…", said in the tooltip)."""
    from tests.factories import TaskFactory
    from tests.transcript_builders import attempt, make_run, store
    from webapp.metrics.partial import BatchInPlay
    from webapp.runs.models import Run

    task = TaskFactory()
    done = make_run("played out", task.task_set)
    store(done, task.pk, 0, "a_first", [attempt("3", "3", True)])
    playing = make_run("first batch", task.task_set)
    store(playing, task.pk, 0, "a_first", [attempt("3", "3", True)])
    Run.objects.filter(pk=done.pk).update(status=Run.Status.SUCCEEDED)
    Run.objects.filter(pk=playing.pk).update(
        status=Run.Status.RUNNING,
        progress_total=4,
        batch_in_play=BatchInPlay(round=1, going=3, ended=1).to_json(),
    )
    html = researcher_client.get("/runs/").content.decode()
    rows = dict(re.findall(r'<tr data-run="(\d+)">(.*?)</tr>', html, re.S))
    leaks_done = re.findall(r'<td class="num">(.*?)</td>', rows[str(done.pk)], re.S)[3]
    leaks_playing = re.findall(r'<td class="num">(.*?)</td>', rows[str(playing.pk)], re.S)[3]
    assert "—" in leaks_done and "…" not in leaks_done
    assert "…" in leaks_playing and "not known yet" in leaks_playing
