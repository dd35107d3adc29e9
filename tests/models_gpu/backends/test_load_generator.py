from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from models_gpu.backends import load_generator
from models_gpu.spec.run import RoleSpec
from models_gpu.types import GenerationRequest, Message

REPO_ROOT = Path(__file__).resolve().parents[3]


def test_scripted_generator_answers_a_batch_in_order() -> None:
    student = load_generator(
        RoleSpec("scripted", "arithmetic-student", {"first_try_accuracy": 1.0})
    )
    requests = [
        GenerationRequest((Message("system", "Be brief."), Message("user", "What is 2 + 3?")), 0),
        GenerationRequest((Message("user", "What is 10 * 10?"),), 1),
    ]
    generations = student.generate(requests)
    assert [g.text for g in generations] == ["The answer is 5.", "The answer is 100."]
    assert [g.prompt_tokens for g in generations] == [2 + 5, 5]
    assert [g.completion_tokens for g in generations] == [4, 4]
    assert all(g.latency_ms >= 0 for g in generations)


def test_a_person_is_never_called_the_engine_parks_for_them() -> None:
    person = load_generator(RoleSpec("human", ""))
    with pytest.raises(TypeError, match="parks"):
        person.generate([])


def test_unknown_backend_is_a_value_error_listing_known_ones() -> None:
    with pytest.raises(
        ValueError, match=r"'nope' is unknown; available backends: scripted, transformers"
    ):
        load_generator(RoleSpec("nope", ""))


def test_unknown_scripted_policy_lists_the_policies() -> None:
    with pytest.raises(ValueError, match="arithmetic-student, feedback-teacher"):
        load_generator(RoleSpec("scripted", "chess-student"))


def test_policy_params_are_checked() -> None:
    with pytest.raises(ValueError, match="temperature"):
        load_generator(RoleSpec("scripted", "feedback-teacher", {"temperature": 0.7}))


def test_models_gpu_imports_nothing_heavy_or_web_side() -> None:
    script = (
        "import sys\n"
        "import models_gpu.engine, models_gpu.generators.arithmetic\n"
        "from models_gpu.backends import load_generator\n"
        "from models_gpu.spec.run import RoleSpec\n"
        "load_generator(RoleSpec('scripted', 'arithmetic-student'))\n"
        "roots = {name.split('.')[0] for name in sys.modules}\n"
        "print(sorted(roots & {'torch', 'transformers', 'vllm', 'django', 'celery', 'webapp',"
        " 'workers'}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=REPO_ROOT
    )
    assert result.stdout.strip() == "[]"


def test_every_backend_of_the_spec_has_a_loader() -> None:
    from models_gpu.backends import BACKENDS as LOADED
    from models_gpu.spec.backends import BACKENDS as SPECIFIED

    assert set(LOADED) == set(SPECIFIED)
