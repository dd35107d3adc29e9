"""Dataset snapshots: a transcript filter frozen into a file that outlives its runs."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from models_gpu.spec.training import TrainingDialogue
from tests.factories import ProtocolFactory, TaskFactory, TaskSetFactory, frozen_run
from tests.transcript_builders import attempt, feedback, store
from webapp.dialogues.models import Dialogue
from webapp.training.models import DatasetSnapshot
from webapp.training.services import EmptySelection, snapshot_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def stored(settings: Any, tmp_path: Path) -> dict[str, Any]:
    settings.DIALAB_DATASETS_DIR = tmp_path / "datasets"
    task_set = TaskSetFactory()
    task = TaskFactory(task_set=task_set, prompt="What is 1 + 2?", reference={"answer": "3"})
    protocol = ProtocolFactory(
        max_turns=3, prompt_templates={"student_system": "You have {max_turns} tries."}
    )
    run = frozen_run(name="source", task_set=task_set, protocol=protocol)
    store(run, task.pk, 0, "a_first", [attempt("3", "3", True)])
    store(run, task.pk, 1, "a_late", [
        attempt("4", "4", False), feedback("Too high."), attempt("3", "3", True),
    ])  # fmt: skip
    store(run, task.pk, 2, "b_same", [attempt("5", "5", False), feedback("No.")])
    return {"run": run, "task": task, "protocol": protocol}


def read_lines(snapshot: DatasetSnapshot) -> list[TrainingDialogue]:
    text = Path(snapshot.path).read_text(encoding="utf-8")
    return [TrainingDialogue.from_json(json.loads(line)) for line in text.splitlines()]


def test_a_filter_freezes_what_the_student_saw_into_a_hashed_file(
    stored: dict[str, Any], researcher: Any
) -> None:
    run = stored["run"]
    snapshot = snapshot_create(
        name="solved", filter_query=f"run={run.pk}&outcome=solved", reader=researcher
    )
    assert (snapshot.dialogue_count, snapshot.turn_count, snapshot.student_turn_count) == (2, 4, 3)
    assert snapshot.source_runs == [{"id": run.pk, "name": "source", "dialogues": 2}]
    data = Path(snapshot.path).read_bytes()
    assert hashlib.sha256(data).hexdigest() == snapshot.sha256
    assert Path(snapshot.path).name == f"{snapshot.sha256}.jsonl"

    first, late = read_lines(snapshot)
    assert first.dialogue_id < late.dialogue_id  # in id order
    assert late.student_system == "You have 3 tries."  # as the run's frozen protocol said
    assert late.task_prompt == "What is 1 + 2?" and late.reference == {"answer": "3"}
    assert [(t.role, t.text) for t in late.turns] == [
        ("student", "4"), ("teacher", "Too high."), ("student", "3"),
    ]  # fmt: skip
    assert late.turns[0].is_correct is False and late.turns[1].private_context


def test_the_snapshot_outlives_the_runs_it_came_from(
    stored: dict[str, Any], researcher: Any
) -> None:
    snapshot = snapshot_create(name="all", filter_query="", reader=researcher)
    before = Path(snapshot.path).read_bytes()
    Dialogue.objects.filter(run=stored["run"]).delete()
    stored["run"].delete()
    snapshot.refresh_from_db()
    assert Path(snapshot.path).read_bytes() == before
    assert len(read_lines(snapshot)) == 3


def test_an_empty_selection_is_refused_and_writes_nothing(
    stored: dict[str, Any], researcher: Any, settings: Any
) -> None:
    with pytest.raises(EmptySelection, match="nothing to train on"):
        snapshot_create(name="none", filter_query="outcome=solved&turns=9", reader=researcher)
    assert not DatasetSnapshot.objects.exists()
    assert list(Path(settings.DIALAB_DATASETS_DIR).glob("*")) == []


def test_an_annotator_freezes_only_what_their_queues_show(
    stored: dict[str, Any], annotator: Any
) -> None:
    with pytest.raises(EmptySelection):
        snapshot_create(name="theirs", filter_query="", reader=annotator)
