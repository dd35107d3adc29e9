"""models_gpu.spec.training_run: the training run's frozen configuration (JSON, schemas read
back) and its question writer's checks."""

from __future__ import annotations

import json
from dataclasses import replace

from models_gpu.spec.run import RoleSpec
from models_gpu.spec.training import TrainingConfig
from models_gpu.spec.training_run import (
    DatasetRef,
    TrainingRunConfig,
    question_writer_problems,
)

WRITER = RoleSpec("openai", "http://127.0.0.1:8000/v1", {"model": "teacher"}, 4, "teacher")
CONFIG = TrainingRunConfig(
    base=RoleSpec("transformers", "/models/base", {}, 1, "base"),
    dataset=DatasetRef(id=2, name="solved", dialogues=3, sha256="a" * 64, path="/d/a.jsonl"),
    training=TrainingConfig(method="qpriming"),
    question_writer=WRITER,
)


def test_the_configuration_round_trips_with_its_question_writer() -> None:
    again = TrainingRunConfig.from_json(json.loads(json.dumps(CONFIG.to_json())))
    assert again == CONFIG and again.config_hash() == CONFIG.config_hash()
    assert replace(CONFIG, question_writer=None).config_hash() != CONFIG.config_hash()


def test_a_run_frozen_before_question_writers_existed_reads_as_the_template() -> None:
    data = replace(CONFIG, question_writer=None).to_json()
    del data["question_writer"]
    data["schema"] = 1
    assert TrainingRunConfig.from_json(data) == replace(CONFIG, question_writer=None)


def test_a_question_writer_is_a_text_model_and_only_for_q_priming() -> None:
    assert question_writer_problems(None, "sft") == []
    assert question_writer_problems(WRITER, "qpriming") == []
    (only,) = question_writer_problems(WRITER, "sft")
    assert only.field == "question_writer" and "Only Q-priming" in only.message
    scripted = RoleSpec("scripted", "feedback-teacher", {}, 5, "scripted teacher")
    (backend,) = question_writer_problems(scripted, "qpriming")
    assert "scripted teacher uses the scripted backend" in backend.message
    bad = replace(WRITER, params={"temperature": 9})
    assert [p.field for p in question_writer_problems(bad, "qpriming")] == ["question_writer"]
