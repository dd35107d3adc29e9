"""A Lost-in-Conversation experiment: its launch (three runs, the CONCAT copy of the set), its
form's checks, and its metrics from scripted dialogues with known answers."""

from __future__ import annotations

import pytest

from tests.factories import StudentFactory, TaskFactory, TaskSetFactory
from tests.transcript_builders import attempt, store, turn
from webapp.core.figure_export import render
from webapp.experiments.charts import lic_conditions_figure
from webapp.experiments.lic import lic_metrics
from webapp.experiments.models import LostInConversation
from webapp.experiments.services import lic_experiment_create
from webapp.runs.models import Run

pytestmark = pytest.mark.django_db

SHARDS = ["I need a sum of two numbers.", "The first number is 1.", "The second number is 2."]


@pytest.fixture
def experiment() -> LostInConversation:
    task_set = TaskSetFactory(name="sharded sums")
    for _ in range(4):
        TaskFactory(task_set=task_set, prompt="What is 1 + 2?", shards=SHARDS)
    return lic_experiment_create(
        name="LiC", task_set=task_set, student=StudentFactory(name="student"),
        user_simulator=StudentFactory(name="revealer", location="shard-revealer"),
        repeats=3, max_turns=4, seed=0, created_by=None,
    )  # fmt: skip


def test_the_launch_makes_three_runs_and_a_concat_copy_of_the_set(experiment) -> None:  # type: ignore[no-untyped-def]
    full, concat, sharded = experiment.runs.values()
    assert [run.frozen_config.protocol.mode for run in (full, concat, sharded)] == [
        "single_turn", "single_turn", "sharded",
    ]  # fmt: skip
    assert sharded.frozen_config.protocol.max_turns == 4 and sharded.user_simulator is not None
    assert all(run.frozen_config.samples_per_task == 3 for run in (full, concat, sharded))
    assert full.task_set == sharded.task_set != concat.task_set
    assert set(concat.task_set.tasks.values_list("prompt", flat=True)) == {" ".join(SHARDS)}
    assert concat.task_set.name == "sharded sums (CONCAT)"


def _solved(run: Run, task: int, sample: int) -> None:
    store(run, task, sample, "a_first", [
        turn("student", "question", "Which numbers?"), turn("student", "question", "And?"),
        attempt("3", "3", True),
    ])  # fmt: skip


def _failed(run: Run, task: int, sample: int) -> None:
    store(run, task, sample, "a_late", [attempt("1", "1", False)])


def test_mean_aptitude_unreliability_drop_and_premature_answering(experiment) -> None:  # type: ignore[no-untyped-def]
    tasks = list(experiment.task_set.tasks.order_by("pk").values_list("pk", flat=True))
    for task in tasks:
        for sample in range(3):
            store(experiment.full_run, task, sample, "a_first", [attempt("3", "3", True)])
    # SHARDED: per task, which of the 3 repeats are solved.
    for task, outcomes in zip(tasks, ([1, 0, 0], [1, 1, 0], [0, 0, 0], [1, 1, 1]), strict=True):
        for sample, solved in enumerate(outcomes):
            (_solved if solved else _failed)(experiment.sharded_run, task, sample)
    metrics = lic_metrics(experiment)
    full, concat, sharded = metrics.conditions
    assert (full.mean, full.aptitude, full.unreliability, full.dialogues) == (1.0, 1.0, 0.0, 12)
    assert concat.mean is None and concat.dialogues == 0
    assert sharded.mean == pytest.approx(0.5) and sharded.instructions == 4
    # Per task P90 (linear interpolation): 0.8, 1, 0, 1; P10: 0, 0.2, 0, 1.
    assert sharded.aptitude == pytest.approx(0.7)
    assert sharded.unreliability == pytest.approx(0.4)
    assert sharded.mean_low < 0.5 < sharded.mean_high
    assert metrics.drop.value == pytest.approx(-0.5) and metrics.drop.tasks == 4
    assert metrics.relative_drop == pytest.approx(0.5)
    early, late = metrics.premature
    assert (early.turn, early.score.mean, early.score.count) == (1, 0.0, 6)
    assert (late.turn, late.score.mean, late.score.count) == (3, 1.0, 6)
    # FULL's mean and aptitude are both 100%: the mean's marker is drawn last, on top (issue 33),
    # and is still first in the legend.
    figure = lic_conditions_figure(metrics)
    assert [trace["name"] for trace in figure["data"]] == [
        "aptitude (90th percentile)",
        "mean score",
    ]
    assert [trace["legendrank"] for trace in figure["data"]] == [2, 1]
    assert render(figure, "svg").startswith(b"<?xml")


def test_the_page_its_figures_and_the_form_checks(researcher_client, experiment) -> None:  # type: ignore[no-untyped-def]
    page = researcher_client.get(f"/experiments/lost-in-conversation/{experiment.pk}/")
    html = page.content.decode()
    assert 'id="lic-conditions"' in html and "no dialogue has ended yet" in html
    assert 'id="lic-partial"' in html
    svg = researcher_client.get(
        f"/experiments/lost-in-conversation/{experiment.pk}/?figure=premature&download=svg"
    )
    assert svg.status_code == 200 and b"<svg" in svg.content
    unsharded = TaskSetFactory(name="plain")
    TaskFactory(task_set=unsharded)
    refused = researcher_client.post(
        "/experiments/lost-in-conversation/new/",
        {"name": "x", "task_set": unsharded.pk, "student": experiment.student_id,
         "user_simulator": experiment.user_simulator_id, "repeats": 3, "max_turns": 4, "seed": 0},
    )  # fmt: skip
    assert "1 of its tasks have no shards" in refused.content.decode()
    too_short = researcher_client.post(
        "/experiments/lost-in-conversation/new/",
        {"name": "x", "task_set": experiment.task_set_id, "student": experiment.student_id,
         "user_simulator": experiment.user_simulator_id, "repeats": 3, "max_turns": 2, "seed": 0},
    )  # fmt: skip
    assert "A task has 3 shards" in too_short.content.decode()
    assert LostInConversation.objects.count() == 1
    index = researcher_client.get("/experiments/").content.decode()
    assert 'id="lic-list"' in index and "LiC" in index
