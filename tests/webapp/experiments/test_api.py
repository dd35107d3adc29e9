"""The experiments through the API: a comparison, the transfer matrix and a Lost-in-Conversation
experiment's figures are their pages' numbers (the same computation, returned as data)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from tests.api_world import token_client
from tests.factories import StudentFactory, TaskFactory, TaskSetFactory
from tests.transcript_builders import attempt, store
from tests.webapp.experiments.builders import base_and_trained_seeds, base_and_two_trained_models
from webapp.experiments.comparison import compare
from webapp.experiments.lic import lic_metrics
from webapp.experiments.services import lic_experiment_create
from webapp.experiments.transfer import transfer_matrix

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(researcher: Any) -> Client:
    return token_client(researcher)


def test_a_comparison_is_the_compare_pages(api: Client) -> None:
    runs = base_and_trained_seeds(tasks=12)
    ids = [run.pk for run in runs["base"] + runs["trained"]]
    body = api.get("/api/v1/experiments/compare", {"runs": ids, "baseline": ids[0]}).json()
    page = compare(runs["base"] + runs["trained"], baseline_run_id=ids[0], by_seed=True)
    assert body["baseline"] == page.baseline.key
    base, trained = body["lines"]
    assert base["runs"] == ids[:3] and base["seeds"] == [0, 1, 2] and base["gaps"] == []
    for line, expected in zip(body["lines"], page.lines, strict=True):
        assert [p["value"] for p in line["points"]] == [p.value for p in expected.points]
        assert [p["low"] for p in line["points"]] == [p.low for p in expected.points]
    (expected_gap,) = page.gaps
    assert [g["value"] for g in trained["gaps"]] == [g.value for g in expected_gap.gaps]
    assert trained["gaps"][-1]["method"] == str(expected_gap.final.method)
    assert trained["gaps"][-1]["tasks"] == 12
    assert body["differences"][0]["setting"] == "student.id"
    apart = api.get("/api/v1/experiments/compare", {"runs": ids[:3], "by_seed": False}).json()
    assert len(apart["lines"]) == 3
    assert api.get("/api/v1/experiments/compare", {"runs": [10**6]}).status_code == 404


def test_the_transfer_matrix_is_the_pages(api: Client) -> None:
    base_and_two_trained_models()
    body = api.get("/api/v1/experiments/transfer").json()
    matrix = transfer_matrix()
    assert body["domains"] == matrix.domains == ["arithmetic", "logic"]
    rows = {row["model_name"]: row for row in body["rows"]}
    for row in matrix.rows:
        cells = rows[row.model.name]["cells"]
        assert [c["gap"]["value"] for c in cells] == [c.gap.value for c in row.cells if c]
        assert [c["evaluation_domain"] for c in cells] == matrix.domains


def test_a_lost_in_conversation_experiments_figures_are_its_pages(api: Client) -> None:
    task_set = TaskSetFactory(name="sharded sums")
    for _ in range(3):
        TaskFactory(task_set=task_set, prompt="What is 1 + 2?", shards=["Sum two.", "1 and 2."])
    experiment = lic_experiment_create(
        name="LiC", task_set=task_set, student=StudentFactory(name="student"),
        user_simulator=StudentFactory(name="revealer", location="shard-revealer"),
        repeats=2, max_turns=3, seed=0, created_by=None,
    )  # fmt: skip
    for index, task in enumerate(task_set.tasks.order_by("pk")):
        for sample in range(2):
            store(experiment.full_run, task.pk, sample, "a_first", [attempt("3", "3", True)])
            solved = index > 0
            store(experiment.sharded_run, task.pk, sample, "a_first" if solved else "a_late",
                  [attempt("3" if solved else "1", "3" if solved else "1", solved)])  # fmt: skip
    (listed,) = api.get("/api/v1/experiments/lost-in-conversation").json()
    assert listed["runs"]["SHARDED"] == experiment.sharded_run.pk
    body = api.get(f"/api/v1/experiments/lost-in-conversation/{experiment.pk}").json()
    metrics = lic_metrics(experiment)
    assert [c["mean"] for c in body["conditions"]] == [c.mean for c in metrics.conditions]
    assert body["drop"]["value"] == pytest.approx(metrics.drop.value)  # type: ignore[union-attr]
    assert body["relative_drop"] == pytest.approx(1 / 3)
    assert [p["turn"] for p in body["premature"]] == [p.turn for p in metrics.premature]
