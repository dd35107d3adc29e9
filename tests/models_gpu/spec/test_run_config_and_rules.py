"""models_gpu.spec: the run configuration's serialisation and hash, and the shared rules."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from models_gpu.spec.backends import backend_problems, read_backend_params
from models_gpu.spec.protocol import ProtocolSpec, protocol_problems, role_problems
from models_gpu.spec.run import (
    RoleSpec,
    RunConfig,
    TaskSetRef,
    frozen_protocol,
    run_config_problems,
)
from models_gpu.spec.settings import Setting, read_settings
from models_gpu.spec.templates import DEFAULT_TEMPLATES

CONFIG = RunConfig(
    task_set=TaskSetRef(id=1, name="sums", version=1, task_count=3, fingerprint="f" * 64),
    protocol=frozen_protocol(ProtocolSpec("didactic", 4, name="p")),
    student=RoleSpec("scripted", "arithmetic-student", {"first_try_accuracy": 0.2}, 1, "s"),
    teacher=RoleSpec("scripted", "feedback-teacher", {}, 2, "t"),
    samples_per_task=2,
    seed=5,
)


def test_the_configuration_round_trips_through_json_with_a_stable_hash() -> None:
    data = json.loads(json.dumps(CONFIG.to_json()))
    again = RunConfig.from_json(data)
    assert again == CONFIG
    assert again.config_hash() == CONFIG.config_hash()
    assert replace(CONFIG, seed=6).config_hash() != CONFIG.config_hash()
    assert again.protocol.templates == DEFAULT_TEMPLATES


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.pop("seed"), r"missing keys \['seed'\]"),
        (lambda d: d.update(stop_rules={}), r"unknown keys \['stop_rules'\]"),
        (lambda d: d["protocol"].pop("templates"), r"protocol: missing keys \['templates'\]"),
        (lambda d: d.pop("schema"), "schema None"),
    ],
)
def test_reading_a_configuration_is_strict(edit, message: str) -> None:  # type: ignore[no-untyped-def]
    data = CONFIG.to_json()
    edit(data)
    with pytest.raises(ValueError, match=message):
        RunConfig.from_json(data)


def test_a_valid_configuration_has_no_problems_and_each_rule_names_its_field() -> None:
    assert run_config_problems(CONFIG) == []
    broken = replace(
        CONFIG,
        teacher=None,
        judge=RoleSpec("openai", "http://h/v1", {}),
        batch_size=0,
        student=replace(CONFIG.student, params={"temprature": 1}),
    )
    fields = {problem.field for problem in run_config_problems(broken)}
    assert fields == {"teacher", "judge", "batch_size", "student"}


def test_protocol_and_role_rules() -> None:
    assert protocol_problems(ProtocolSpec("single_turn", 2))[0].field == "max_turns"
    assert protocol_problems(ProtocolSpec("sharded", 3, regenerate_leaks=1))[0].field == (
        "regenerate_leaks"
    )
    sharded = ProtocolSpec("sharded", 3)
    assert [p.field for p in role_problems(sharded, ["student"])] == ["user_simulator"]
    assert [p.field for p in role_problems(sharded, ["student", "user_simulator", "teacher"])] == [
        "teacher"
    ]


def test_backend_parameters_are_read_with_their_defaults_and_checked() -> None:
    params = read_backend_params("vllm", "", {"temperature": 0})
    assert params["temperature"] == 0.0 and isinstance(params["temperature"], float)
    assert params["max_new_tokens"] == 256 and params["max_model_len"] is None
    assert backend_problems("scripted", "nope", {})[0].field == "location"
    assert backend_problems("human", "", {}) == []  # a person takes no parameters


def test_settings_refuse_unknown_names_wrong_types_and_out_of_range_values() -> None:
    schema = (Setting("n", "int", "", 1, low=1, high=3), Setting("on", "bool", "", False))
    assert read_settings({"n": 2}, schema, owner="x") == {"n": 2, "on": False}
    for values, message in [
        ({"m": 1}, r"unknown setting\(s\) m"),
        ({"n": 1.5}, "n must be a whole number"),
        ({"n": 4}, "n must be at least 1 and at most 3"),
        ({"on": 1}, "on must be true or false"),
    ]:
        with pytest.raises(ValueError, match=message):
            read_settings(values, schema, owner="x")
