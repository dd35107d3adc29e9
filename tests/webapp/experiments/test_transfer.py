"""The transfer matrix from two training runs (scripted fixtures: a model trained online on
arithmetic, one trained on a dataset of logic dialogues), and the training horizon marker."""

from __future__ import annotations

import pytest

from tests.webapp.experiments.builders import base_and_two_trained_models
from webapp.dialogues.models import Dialogue
from webapp.experiments.comparison import compare
from webapp.experiments.transfer import transfer_matrix
from webapp.runs.models import Run
from webapp.tasks.models import Task

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_trained_models() -> dict[str, Run]:
    return base_and_two_trained_models()


def test_each_trained_model_gains_on_its_own_domain_and_not_on_the_other(
    two_trained_models,
) -> None:  # type: ignore[no-untyped-def]
    matrix = transfer_matrix()
    assert matrix.domains == ["arithmetic", "logic"]
    rows = {row.model.name: row for row in matrix.rows}
    arithmetic_row, logic_row = rows["trained on arithmetic"], rows["trained on logic"]
    assert arithmetic_row.label == "arithmetic" and logic_row.label == "logic"
    on_arithmetic, on_logic = (cell.gap for cell in arithmetic_row.cells)
    assert on_arithmetic.low > 0.2 and on_arithmetic.p_value < 0.01 and on_arithmetic.tasks == 20
    assert on_logic.low < 0 < on_logic.high
    logic_on_arithmetic, logic_on_logic = (cell.gap for cell in logic_row.cells)
    assert logic_on_logic.low > 0.3 and logic_on_arithmetic.low < 0 < logic_on_arithmetic.high
    assert all(cell.held_out for row in matrix.rows for cell in row.cells)
    assert len(matrix.pairs) == 2 and {p.base_run for p in matrix.pairs} == {
        two_trained_models["base"]
    }


def test_the_page_and_its_csv(researcher_client, two_trained_models) -> None:  # type: ignore[no-untyped-def]
    page = researcher_client.get("/experiments/transfer/").content.decode()
    assert 'id="transfer-matrix"' in page and "trained on arithmetic" in page and "pts" in page
    csv_text = researcher_client.get("/experiments/transfer/?download=csv").content.decode()
    lines = csv_text.strip().splitlines()
    assert lines[0].startswith("trained_model,base_model,training_domains,evaluation_domain,gain")
    assert len(lines) == 1 + 4


def test_without_trained_models_the_page_says_how_to_get_one(researcher_client) -> None:  # type: ignore[no-untyped-def]
    assert 'id="no-transfer"' in researcher_client.get("/experiments/transfer/").content.decode()


def test_the_comparison_marks_an_online_trained_students_training_horizon(
    two_trained_models,
) -> None:  # type: ignore[no-untyped-def]
    runs = [
        two_trained_models["base"],
        two_trained_models["arithmetic"],
        two_trained_models["logic"],
    ]
    lines = compare(runs, baseline_run_id=None, by_seed=True).lines
    assert [line.training_horizon for line in lines] == [None, 2, None]


def test_a_cell_gives_the_numbers_the_comparison_of_the_same_two_runs_gives(
    two_trained_models,
) -> None:  # type: ignore[no-untyped-def]
    Dialogue.objects.filter(task__domain="logic").delete()  # one domain: the same tasks both ways
    base, trained = two_trained_models["base"], two_trained_models["arithmetic"]
    rows = {row.model.name: row for row in transfer_matrix().rows}
    (cell,) = rows["trained on arithmetic"].cells
    (gap,) = compare([base, trained], baseline_run_id=base.pk, by_seed=True).gaps
    assert cell.gap == gap.final and cell.gap.method == "paired"


def test_results_on_tasks_the_model_trained_on_say_not_held_out(
    researcher_client, two_trained_models
) -> None:  # type: ignore[no-untyped-def]
    """The arithmetic model trained online on one task; the held-out set gets a copy of it (the
    same prompt and reference): its arithmetic cell, and its line on the comparison page, are
    marked not held out. Before, such a cell read like a transfer result."""
    trained = two_trained_models["arithmetic"]
    training_task = Task.objects.get(task_set__name="arithmetic training")
    copy = Dialogue.objects.filter(run=trained, task__domain="arithmetic").first().task
    Task.objects.filter(pk=copy.pk).update(
        prompt=training_task.prompt, reference=training_task.reference
    )
    rows = {row.model.name: row for row in transfer_matrix().rows}
    on_arithmetic, on_logic = rows["trained on arithmetic"].cells
    assert (on_arithmetic.trained_on, on_arithmetic.held_out) == (1, False) and on_logic.held_out
    page = researcher_client.get("/experiments/transfer/").content.decode()
    assert "not held out (1 trained on)" in page
    csv_text = researcher_client.get("/experiments/transfer/?download=csv").content.decode()
    assert csv_text.splitlines()[0].endswith(",tasks_trained_on")
    lines = compare([two_trained_models["base"], trained], baseline_run_id=None, by_seed=True).lines
    assert [line.held_out for line in lines] == [True, False]
    assert lines[1].trained_on.description == "not held out: 1 of its 40 tasks were trained on"
