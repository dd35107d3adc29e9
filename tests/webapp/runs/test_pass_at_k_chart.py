"""pass@k on the run page: a curve (one point per k) drawn like the page's other charts, its
numbers one row per k in a collapsed table, so K = 40 fits its card as well as K = 2."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from tests.factories import ProtocolFactory, StudentFactory, TaskFactory, TaskSetFactory
from tests.transcript_builders import attempt, store
from webapp.metrics.figures import PassAtK
from webapp.runs.charts import pass_at_k_figure
from webapp.runs.models import Run
from webapp.runs.services import evaluation_config

pytestmark = pytest.mark.django_db


def run_with_samples(samples_per_task: int, tasks: int = 2) -> Run:
    """A run that asked for ``samples_per_task`` dialogues per task, all stored: on each task the
    first sample is solved and the others are not."""
    task_set = TaskSetFactory()
    task_list = TaskFactory.create_batch(tasks, task_set=task_set)
    student, protocol = StudentFactory(), ProtocolFactory(max_turns=1)
    config = evaluation_config(
        task_set=task_set, protocol=protocol, student=student,
        samples_per_task=samples_per_task, check=False,
    )  # fmt: skip
    run = Run.objects.create(
        name=f"K={samples_per_task}", task_set=task_set, student=student, protocol=protocol,
        config=config.to_json(), config_hash=config.config_hash(),
    )  # fmt: skip
    for task in task_list:
        for sample in range(samples_per_task):
            store(run, task.pk, sample, "a_first", [attempt("3", "3", sample == 0)])
    return run


def test_the_figure_is_one_point_per_k() -> None:
    points = [PassAtK(k, k / 40, 2) for k in range(1, 41)]
    figure = pass_at_k_figure(points, samples_per_task=40)
    (trace,) = figure["data"]
    assert trace["x"] == list(range(1, 41)) and trace["y"][-1] == 1.0
    assert trace["customdata"] == [2] * 40, "the hover says how many tasks each mean is over"
    assert figure["layout"]["xaxis"]["range"] == [0.5, 40.5]
    assert figure["layout"]["yaxis"]["tickformat"] == ".0%"


def test_an_empty_run_draws_an_empty_chart_that_says_so() -> None:
    figure = pass_at_k_figure([], samples_per_task=8)
    assert figure["data"][0]["x"] == []
    assert figure["layout"]["annotations"][0]["text"] == "no dialogues stored yet"


def test_forty_samples_per_task_draw_a_curve_and_keep_the_numbers(researcher_client) -> None:  # type: ignore[no-untyped-def]
    run = run_with_samples(40)
    response = researcher_client.get(reverse("run_detail", args=[run.pk]))
    html = response.content.decode()
    assert 'id="pass-at-k-chart"' in html and 'data-figure="pass-at-k-figure"' in html
    script = html.split('id="pass-at-k-figure" type="application/json">')[1]
    figure = json.loads(script.split("</script>")[0])
    assert figure["data"][0]["x"] == list(range(1, 41))
    # One solved sample in 40: pass@1 = 1/40, pass@40 = 1.
    assert figure["data"][0]["y"][0] == pytest.approx(1 / 40)
    assert figure["data"][0]["y"][-1] == pytest.approx(1.0)
    # The numbers: a three-column table, one row per k, inside a <details> that starts closed.
    numbers = html.split('id="pass-at-k-numbers"')[1].split("</details>")[0]
    assert numbers.startswith(">"), "closed: the curve is the summary"
    assert "pass@40 = 1.000" in numbers
    assert numbers.split("<tbody>")[1].count("<tr><th>") == 40
    assert "<thead><tr><th>k</th><th>pass@k</th><th>tasks</th></tr></thead>" in numbers


def test_the_polled_fragment_carries_the_new_points(researcher_client) -> None:  # type: ignore[no-untyped-def]
    run = run_with_samples(3)
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    fragment = researcher_client.get(reverse("run_live", args=[run.pk]))
    assert fragment.status_code == 200
    assert fragment.context["pass_at_k_figure"]["data"][0]["x"] == [1, 2, 3]
    assert 'id="pass-at-k-figure"' in fragment.content.decode()


def test_one_sample_per_task_draws_no_curve(researcher_client) -> None:  # type: ignore[no-untyped-def]
    run = run_with_samples(1)
    html = researcher_client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert 'id="pass-at-k-chart"' not in html and 'id="pass-at-k-figure"' not in html
    numbers = html.split('id="pass-at-k-numbers"')[1].split("</details>")[0]
    assert numbers.startswith(" open>"), "a single number is shown, not folded away"
