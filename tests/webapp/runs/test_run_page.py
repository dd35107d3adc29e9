"""The run page: metric cards and tables, the live fragment, overlays of other runs, access."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests.factories import TaskFactory, TaskSetFactory
from tests.transcript_builders import (
    attempt,
    feedback,
    make_run,
    sharded_run,
    store,
    store_sharded_pair,
)
from webapp.runs.models import Run

pytestmark = pytest.mark.django_db


def page(client: Any, run: Run, query: str = "") -> Any:
    response = client.get(reverse("run_detail", args=[run.pk]) + query)
    assert response.status_code == 200
    return response


def test_run_page_shows_the_metrics(researcher_client, corpus) -> None:  # type: ignore[no-untyped-def]
    response = page(researcher_client, corpus["run_a"])
    html = response.content.decode()
    # One of three solved at turn 1, two by turn 5.
    assert "Single-turn accuracy" in html and "33.3%" in html and "1/3" in html
    assert "Accuracy after turn 5" in html and "66.7%" in html
    assert "Mean turns to solve" in html and "over 2 solved" in html
    assert 'id="pass-at-k"' in html and "pass@k" in html
    assert "Leak rate" in html and "teacher turns stated the answer" in html
    assert "Question rate" in html and "Dialogues with a question" in html
    assert "Premature attempts" not in html, "sharded metrics are hidden on a didactic run"
    assert 'id="breakdown-domain"' in html and "arithmetic" in html
    assert reverse("run_metrics_csv", args=[corpus["run_a"].pk]) in html
    assert "So far, counted from stored turns" in html


def test_a_run_without_dialogues_says_so(researcher_client) -> None:  # type: ignore[no-untyped-def]
    run = make_run("empty", TaskSetFactory())
    html = page(researcher_client, run).content.decode()
    assert "No dialogues stored yet" in html
    assert 'id="pass-at-k"' not in html and 'id="breakdown-domain"' not in html
    assert 'id="accuracy-figure"' in html, "the chart still has its (empty) figure"


def test_a_run_of_some_of_a_set_s_tasks_names_them(researcher_client) -> None:  # type: ignore[no-untyped-def]
    task_set = TaskSetFactory()
    first, second, _ = TaskFactory.create_batch(3, task_set=task_set)
    run = make_run("two tasks", task_set)
    Run.objects.filter(pk=run.pk).update(config={**run.config, "task_ids": [first.pk, second.pk]})
    html = page(researcher_client, Run.objects.get(pk=run.pk)).content.decode()
    assert f"2 of its 3 tasks: #{first.pk}, #{second.pk}" in html
    whole = make_run("every task", task_set)
    assert "(3 tasks, fingerprint" in page(researcher_client, whole).content.decode()


def test_one_sample_per_task_shows_pass_at_1_only(researcher_client) -> None:  # type: ignore[no-untyped-def]
    task_set = TaskSetFactory()
    run = make_run("k=1", task_set)
    for task in TaskFactory.create_batch(2, task_set=task_set):
        store(run, task.pk, 0, "a_first", [attempt("3", "3", True)])
    response = page(researcher_client, run)
    assert [point.k for point in response.context["metrics"].pass_at_k] == [1]
    table = response.content.decode().split('id="pass-at-k"')[1].split("</table>")[0]
    assert "<th>1</th>" in table and "<th>2</th>" not in table


def test_a_sharded_run_shows_premature_attempts(researcher_client) -> None:  # type: ignore[no-untyped-def]
    task = TaskFactory()
    run = sharded_run(task.task_set)
    store_sharded_pair(run, task.pk)
    html = page(researcher_client, run).content.decode()
    assert "Premature attempts" in html and "attempts before the last shard" in html
    assert "2/4" in html
    assert "Question rate" in html and "1/5" in html


def test_recorded_accounting_is_shown(researcher_client, corpus) -> None:  # type: ignore[no-untyped-def]
    Run.objects.filter(pk=corpus["run_a"].pk).update(
        status=Run.Status.SUCCEEDED,
        accounting={"student_generations": 17, "teacher_calls": 11, "prompt_tokens": 4321,
                    "completion_tokens": 987, "wall_seconds": 12.5},
    )  # fmt: skip
    html = page(researcher_client, corpus["run_a"]).content.decode()
    accounting = html.split('id="accounting"')[1].split("</dl>")[0]
    for text in ("Student generations</dt><dd>17", "Teacher calls</dt><dd>11", "4321", "987",
                 "12.5 s"):  # fmt: skip
        assert text in accounting
    assert "Recorded by the worker" in html


def test_other_runs_on_the_task_set_overlay_the_chart(researcher_client, corpus) -> None:  # type: ignore[no-untyped-def]
    run_a, run_b = corpus["run_a"], corpus["run_b"]
    elsewhere = make_run("other task set", corpus["second_set"])
    plain = page(researcher_client, run_a)
    assert len(plain.context["figure"]["data"]) == 1
    assert [run.pk for run in plain.context["candidates"]] == [run_b.pk]
    html = plain.content.decode()
    assert f'name="compare" value="{run_b.pk}"' in html
    assert "other task set" not in html, "only runs on the same task set are offered"

    query = f"?compare={run_b.pk}&compare={elsewhere.pk}&compare=nonsense"
    compared = page(researcher_client, run_a, query)
    traces = compared.context["figure"]["data"]
    # The corpus runs have not succeeded (they are queued), so their curves say partial.
    assert [trace["name"] for trace in traces] == [
        f"#{run_a.pk} run A (n=3, partial)", f"#{run_b.pk} run B (n=2, partial)",
    ]  # fmt: skip
    # run B: b_same unsolved, b_solved at turn 2.
    assert traces[1]["y"] == [0.0, 0.5, 0.5, 0.5, 0.5]
    assert "error_y" in traces[1]
    shapes = compared.context["figure"]["layout"]["shapes"]
    assert [shape["x0"] for shape in shapes] == [5], "one max-turns marker for T=5"
    assert f'value="{run_b.pk}" checked' in compared.content.decode()


def test_the_live_fragment_keeps_the_overlay_and_stops_when_finished(
    researcher_client, corpus
) -> None:  # type: ignore[no-untyped-def]
    run_a, run_b = corpus["run_a"], corpus["run_b"]
    Run.objects.filter(pk=run_a.pk).update(status=Run.Status.RUNNING)
    detail = page(researcher_client, Run.objects.get(pk=run_a.pk), f"?compare={run_b.pk}")
    live_url = reverse("run_live", args=[run_a.pk])
    assert f'hx-get="{live_url}?compare={run_b.pk}"' in detail.content.decode()
    running = researcher_client.get(f"{live_url}?compare={run_b.pk}")
    assert running.status_code == 200
    assert len(running.context["figure"]["data"]) == 2
    Run.objects.filter(pk=run_a.pk).update(status=Run.Status.SUCCEEDED)
    finished = researcher_client.get(f"{live_url}?compare={run_b.pk}")
    assert finished.status_code == 286
    assert "hx-trigger" not in finished.content.decode()
    assert "Single-turn accuracy" in finished.content.decode()


def grow(run: Run, task_ids: list[int], dialogues: int) -> None:
    """Store more dialogues until the run has ``dialogues`` of them."""
    for number in range(run.dialogues.count(), dialogues):
        store(run, task_ids[number % len(task_ids)], number // len(task_ids), "a_late", [
            attempt("4", "4", False), feedback("no", leak=True), attempt("3", "3", True),
        ])  # fmt: skip


def test_page_queries_do_not_grow_with_dialogues(researcher_client) -> None:  # type: ignore[no-untyped-def]
    task_set = TaskSetFactory()
    tasks = [task.pk for task in TaskFactory.create_batch(3, task_set=task_set)]
    run, other = make_run("big", task_set), make_run("other", task_set)
    url = reverse("run_detail", args=[run.pk]) + f"?compare={other.pk}"
    counts = []
    for size in (1, 24):
        grow(run, tasks, size)
        grow(other, tasks, size)
        with CaptureQueriesContext(connection) as queries:
            assert researcher_client.get(url).status_code == 200
        counts.append(len(queries))
    assert Run.objects.get(pk=run.pk).dialogues.count() == 24
    assert counts[0] == counts[1], counts


@pytest.mark.parametrize("name", ["run_detail", "run_live", "run_metrics_csv"])
def test_annotators_cannot_see_run_metrics(annotator_client, client, corpus, name: str) -> None:  # type: ignore[no-untyped-def]
    url = reverse(name, args=[corpus["run_a"].pk])
    assert annotator_client.get(url).status_code == 403
    client.logout()
    anonymous = client.get(url)
    assert anonymous.status_code == 302 and anonymous["Location"].startswith(reverse("login"))


def test_run_page_names_every_role_and_the_batching(researcher_client) -> None:  # type: ignore[no-untyped-def]
    from tests.factories import StudentFactory, frozen_run
    from webapp.models_registry.models import ModelSpec

    run = make_run("roles", TaskSetFactory())
    html = page(researcher_client, run).content.decode()
    facts = html[html.index('id="run-config"') : html.index("</dl>", html.index('id="run-config"'))]
    assert "User simulator" not in facts and "Judge" not in facts and "Worker claims" not in facts
    simulator = StudentFactory(name="the simulator")
    run = frozen_run(
        name="roles", user_simulator=simulator, judge=StudentFactory(name="the judge"),
        batch_size=16, attempts=2,
    )  # fmt: skip
    # The page shows what the run was frozen with, not today's rows.
    ModelSpec.objects.filter(pk=simulator.pk).update(name="renamed since")
    html = page(researcher_client, run).content.decode()
    assert '<dd id="run-user-simulator">the simulator <span' in html
    assert '<dd id="run-judge">the judge <span' in html
    assert "batches of 16 dialogues" in html
    assert '<dd id="run-attempts">2 (resumed after a worker stopped)</dd>' in html
    assert 'id="frozen-config"' in html and "student_system" in html
    # The frozen configuration reads as settings by section, each template in its own box.
    assert "<h3>Protocol</h3>" in html and "<th>Max turns</th><td>" in html
    assert "Template <code>student_system</code>" in html
    assert "<h3>User simulator</h3>" in html and "the simulator" in html


def test_the_status_bar_comes_first_and_each_poll_brings_it_out_of_band(
    researcher_client, corpus
) -> None:  # type: ignore[no-untyped-def]
    """Status, progress and Cancel sat ~1,350 px down, under the charts (issue 33): they come
    before the settings and the charts, and the polled fragment updates them out of band."""
    run = corpus["run_a"]
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    html = page(researcher_client, Run.objects.get(pk=run.pk)).content.decode()
    assert html.count('id="run-status-bar"') == 1 and "hx-swap-oob" not in html
    bar = html.index('id="run-status-bar"')
    assert bar < html.index('id="run-config"') < html.index('id="accuracy-chart"')
    assert bar < html.index('id="cancel-run"') < html.index('id="run-config"')
    live = researcher_client.get(reverse("run_live", args=[run.pk])).content.decode()
    assert 'id="run-status-bar" hx-swap-oob="true"' in live and 'id="cancel-run"' in live
    Run.objects.filter(pk=run.pk).update(status=Run.Status.SUCCEEDED)
    finished = researcher_client.get(reverse("run_live", args=[run.pk])).content.decode()
    assert 'id="run-status">Succeeded' in finished and 'id="cancel-run"' not in finished
