"""The training page shows its held-out evaluations' feedback use beside their accuracy: the
base's and the trained model's share of moves consistent with the feedback so far, per turn."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from models_gpu.spec.training import TrainingConfig
from models_gpu.spec.training_run import DatasetRef, TrainingRunConfig
from tests.factories import ProtocolFactory, StudentFactory, TaskFactory, frozen_run
from tests.transcript_builders import NAMES, attempt, feedback, move, store
from webapp.runs.models import Run
from webapp.runs.services import evaluation_config, role_spec
from webapp.training.models import DatasetSnapshot

pytestmark = pytest.mark.django_db


def _play(run: Run, task_id: int, consistent: list[bool]) -> None:
    """A first guess, "too high", then a guess that agrees with it or not, per dialogue."""
    for sample, agrees in enumerate(consistent):
        store(run, task_id, sample, NAMES[sample], [
            move("50", valid=True), feedback("Too high."),
            move("20" if agrees else "70", valid=True, consistent=agrees, chance=0.5),
        ])  # fmt: skip
    Run.objects.filter(pk=run.pk).update(status=Run.Status.SUCCEEDED)


def _training_with_evaluations(*, checked: bool) -> Run:
    """A finished training run (nothing trained) whose base and trained model were evaluated on
    a guessing task: the base reads the feedback in 1 of 4 dialogues, the trained model in 3
    (``checked=False``: dialogues stored before moves were checked)."""
    task = TaskFactory(domain="guess_number")
    base, protocol = StudentFactory(name="base"), ProtocolFactory(max_turns=3)
    snapshot = DatasetSnapshot.objects.create(
        name="guesses", dialogue_count=1, turn_count=2, student_turn_count=1, source_runs=[],
        sha256="a" * 64, path="/d/guesses.jsonl",
    )  # fmt: skip
    config = TrainingRunConfig(
        base=role_spec(base),  # type: ignore[arg-type]
        dataset=DatasetRef(snapshot.pk, "guesses", 1, "a" * 64, "/d/guesses.jsonl"),
        training=TrainingConfig(method="sft"),
        evaluation=evaluation_config(
            task_set=task.task_set, protocol=protocol, student=base, check=False
        ),
    )
    training = Run.objects.create(
        name="training", kind=Run.Kind.TRAIN, student=base, protocol=protocol,
        status=Run.Status.SUCCEEDED, config=config.to_json(), config_hash=config.config_hash(),
    )  # fmt: skip
    trained = StudentFactory(name="trained", base_model=base, trained_by_run=training)
    reads = {base: [True, False, False, False], trained: [True, True, True, False]}
    for student, consistent in reads.items():
        evaluation = frozen_run(
            name=f"{student.name} held out", task_set=task.task_set, student=student,
            protocol=protocol,
        )  # fmt: skip
        if checked:
            _play(evaluation, task.pk, consistent)
        else:
            store(evaluation, task.pk, 0, "a_first", [attempt("50", "50", False)])
    return training


def _page(client: Any, training: Run) -> str:
    return client.get(reverse("training_run_detail", args=[training.pk])).content.decode()


def test_the_training_page_shows_base_and_trained_feedback_use(researcher_client: Any) -> None:
    page = _page(researcher_client, _training_with_evaluations(checked=True))
    table = page.split('id="evaluation-feedback-use"')[1].split("</table>")[0]
    assert "<th>turn 2</th>" in table and "<th>turn 1</th>" not in table
    base, trained = table.split("<tr><th>")[2:]
    assert base.startswith("base") and "25.0%" in base and "1/4" in base
    assert trained.startswith("trained") and "75.0%" in trained and "3/4" in trained
    assert "chance 50.0%" in trained


def test_no_feedback_use_table_without_checked_moves(researcher_client: Any) -> None:
    page = _page(researcher_client, _training_with_evaluations(checked=False))
    assert 'id="base-run"' in page and 'id="trained-run"' in page
    assert 'id="evaluation-feedback-use"' not in page
