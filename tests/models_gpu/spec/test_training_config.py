"""models_gpu.spec.training: the training configuration's settings, checks, JSON and hash, and
the input rows."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, fields, replace

import pytest

from models_gpu.spec.results import TurnRow
from models_gpu.spec.training import (
    METHODS,
    SETTING_APPLIES,
    TRAINING_SETTINGS,
    TrainingConfig,
    TrainingConfigError,
    TrainingDialogue,
    render_question,
    training_config_problems,
)

DEFAULTS = TrainingConfig()


def test_every_field_is_a_setting_whose_default_is_valid() -> None:
    assert [s.name for s in TRAINING_SETTINGS] == [f.name for f in fields(TrainingConfig)]
    for setting in TRAINING_SETTINGS:
        assert setting.default == getattr(DEFAULTS, setting.name)
        assert setting.problem(setting.default) is None, setting.name
        assert setting.help
    assert DEFAULTS.problems() == [] and training_config_problems({}) == []
    assert set(METHODS) == {"sft", "critique", "qpriming"}
    assert all(method.label and method.help for method in METHODS.values())
    assert all(name in asdict(DEFAULTS) for name in SETTING_APPLIES)
    assert (DEFAULTS.method, DEFAULTS.qpriming_decay, DEFAULTS.finetuning) == ("sft", 0.75, "full")


@pytest.mark.parametrize(
    ("values", "field", "message"),
    [
        ({"learning_rate": 0}, "learning_rate", "more than 0"),
        ({"batch_size": 0}, "batch_size", "at least 1"),
        ({"epochs": 1.5}, "epochs", "whole number"),
        ({"max_steps": -1}, "max_steps", "at least 0"),
        ({"method": "dpo"}, "method", "one of sft, critique, qpriming"),
        ({"finetuning": "qlora"}, "finetuning", "one of full, lora"),
        ({"lr_scheduler": "step"}, "lr_scheduler", "one of linear, cosine, constant"),
        ({"device": "tpu"}, "device", "auto, cpu, cuda or cuda:N"),
        ({"precision": "float16"}, "precision", "one of auto, float32, bfloat16"),
        ({"qpriming_decay": 1.5}, "qpriming_decay", "at most 1"),
        ({"warmup_ratio": 0.95}, "warmup_ratio", "at most 0.9"),
        ({"gradient_checkpointing": "yes"}, "gradient_checkpointing", "true or false"),
        ({"qpriming_question_template": ""}, "qpriming_question_template", "length"),
        ({"qpriming_question_template": "Is it {answer}?"}, "qpriming_question_template",
         r"unknown placeholder\(s\) \{answer\}"),
        ({"learnig_rate": 0.1}, "learnig_rate", "unknown training setting"),
    ],
)  # fmt: skip
def test_each_problem_names_its_field(values: dict, field: str, message: str) -> None:  # type: ignore[type-arg]
    problems = training_config_problems(values)
    assert [p.field for p in problems] == [field]
    assert re.search(message, problems[0].message), problems[0].message
    with pytest.raises(TrainingConfigError) as raised:
        TrainingConfig.from_json(values, strict=False)
    assert raised.value.problems == problems


def test_the_configuration_round_trips_through_json_with_a_stable_hash() -> None:
    config = TrainingConfig(method="critique", finetuning="lora", learning_rate=2e-4, seed=3)
    data = json.loads(json.dumps(config.to_json()))
    again = TrainingConfig.from_json(data)
    assert again == config and again.config_hash() == config.config_hash()
    assert config.config_hash() == TrainingConfig.from_json(config.to_json()).config_hash()
    assert replace(config, seed=4).config_hash() != config.config_hash()
    # A float setting given as a whole number hashes like the float.
    assert (
        TrainingConfig(weight_decay=1).config_hash()
        == TrainingConfig(weight_decay=1.0).config_hash()
    )
    assert isinstance(TrainingConfig(weight_decay=1).weight_decay, float)


def test_reading_is_strict_unless_asked_otherwise() -> None:
    data = DEFAULTS.to_json()
    del data["seed"]
    with pytest.raises(TrainingConfigError, match="seed: seed is missing"):
        TrainingConfig.from_json(data)
    assert TrainingConfig.from_json(data, strict=False) == DEFAULTS
    with pytest.raises(TrainingConfigError, match="unknown training setting 'sead'"):
        TrainingConfig.from_json({**DEFAULTS.to_json(), "sead": 1}, strict=False)
    with pytest.raises(ValueError, match="schema 2"):
        TrainingConfig.from_json({**DEFAULTS.to_json(), "schema": 2})
    with pytest.raises(ValueError, match="schema None"):
        TrainingConfig.from_json({k: v for k, v in DEFAULTS.to_json().items() if k != "schema"})


def test_a_configuration_built_in_code_is_checked_on_demand() -> None:
    assert [p.field for p in TrainingConfig(batch_size=0, lora_r=0).problems()] == [
        "batch_size", "lora_r"
    ]  # fmt: skip


def test_the_question_template_fills_its_placeholders() -> None:
    fill = {"task_prompt": "Add.", "round_number": 2}
    assert render_question("{reference}", reference={"answer": 7}, **fill) == "7"
    assert render_question("{reference}", reference={"a": 1, "b": "x"}, **fill) == (
        '{"a": 1, "b": "x"}'
    )
    assert render_question(
        "{task_prompt} r{round} {reference.b} \\boxed{x}", reference={"b": "x"}, **fill
    ) == "Add. r2 x \\boxed{x}"  # fmt: skip


def test_a_training_dialogue_reads_from_plain_data() -> None:
    dialogue = TrainingDialogue(
        dialogue_id=5,
        student_system="",
        task_prompt="What is 1 + 1?",
        sharded=False,
        reference={"answer": "2"},
        turns=(TurnRow(0, 1, "student", "attempt", "2", is_correct=True),),
    )
    data = json.loads(json.dumps(dialogue.to_json()))
    assert TrainingDialogue.from_json(data) == dialogue
    with pytest.raises(ValueError, match=r"missing keys \['sharded'\]"):
        TrainingDialogue.from_json({k: v for k, v in data.items() if k != "sharded"})
    data["turns"][0]["colour"] = "red"
    with pytest.raises(ValueError, match=r"turn 0: unknown keys \['colour'\]"):
        TrainingDialogue.from_json(data)
