"""models_gpu.spec.training_run: the training run's frozen configuration (JSON, schemas read
back), its question writer's checks and an online run's priming stage."""

from __future__ import annotations

import json
from dataclasses import replace

from models_gpu.spec.online import OnlineConfig
from models_gpu.spec.run import RoleSpec
from models_gpu.spec.training import TrainingConfig
from models_gpu.spec.training_run import (
    DatasetRef,
    TrainingRunConfig,
    question_writer_problems,
    training_run_problems,
)
from tests.models_gpu.spec.test_run_config_and_rules import CONFIG as RUN_CONFIG

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


PRIMED = replace(
    CONFIG,
    training=TrainingConfig(max_steps=10),
    online=OnlineConfig(),
    rollouts=RUN_CONFIG,
    priming=TrainingConfig(method="qpriming", epochs=2),
)


def _data_problems(config: TrainingRunConfig) -> dict[str, str]:
    """The problems with what ``config`` trains on (its base checkpoint is not on this disk)."""
    return {p.field: p.message for p in training_run_problems(config) if p.field != "base_model"}


def test_a_priming_stage_round_trips_and_older_schemas_read_without_one() -> None:
    again = TrainingRunConfig.from_json(json.loads(json.dumps(PRIMED.to_json())))
    assert again == PRIMED and again.dataset_training == PRIMED.priming
    assert _data_problems(PRIMED) == {}, "the writer writes Q-priming's questions"
    unprimed = replace(PRIMED, priming=None, dataset=None, question_writer=None)
    data = unprimed.to_json()
    del data["priming"]
    data["schema"] = 3
    assert TrainingRunConfig.from_json(data) == unprimed


def test_a_priming_stage_is_for_online_runs_with_a_dataset_and_a_priming_method() -> None:
    offline = replace(CONFIG, priming=TrainingConfig())
    assert "Only online training" in _data_problems(offline)["priming"]
    assert (
        "a dataset is for a priming stage"
        in _data_problems(replace(PRIMED, priming=None))["dataset"]
    )
    no_data = _data_problems(replace(PRIMED, dataset=None))
    assert "nothing to train on" in no_data["priming_dataset"]
    critique = _data_problems(replace(PRIMED, priming=TrainingConfig(method="critique")))
    assert "sft or qpriming, not critique" in critique["priming_method"]
    assert "Only Q-priming" in critique["question_writer"], "the writer follows the priming"
    bad = _data_problems(replace(PRIMED, priming=TrainingConfig(learning_rate=-1)))
    assert "priming_learning_rate" in bad
