from __future__ import annotations

import json
from typing import Any

import pytest

from models_gpu.generators import GENERATORS, generate
from models_gpu.spec.generators import FAMILIES
from models_gpu.types import TaskSpec
from models_gpu.verifiers import verify
from models_gpu.verifiers.maze import shortest_path

KNOB_SETS: dict[str, list[dict[str, Any]]] = {
    "arithmetic": [{}, {"digits": 4, "operations": "*"}],
    "guess_number": [{}, {"low": -50, "high": 50}],
    "maze": [{}, {"rows": 12, "cols": 9, "wall_density": 0.6}],
    "code_guess": [{}, {"length": 6, "allow_repeats": True}],
}


def spec(task: dict[str, Any]) -> TaskSpec:
    return TaskSpec(
        0, task["prompt"], task["reference"], task["verifier_kind"], task["verifier_config"]
    )


def perturbed(task: dict[str, Any]) -> str:
    answer = task["reference"]["answer"]
    if task["verifier_kind"] == "maze":
        return "The answer is " + " ".join(answer.split()[:-1])  # one move short
    if task["verifier_kind"] == "code_guess":
        return (
            f"The answer is {answer[1:]}{answer[0]}."
            if len(set(answer)) > 1
            else "The answer is " + "9" * len(answer)
        )
    return f"The answer is {int(answer) + 1}."


def test_every_described_family_has_a_generator() -> None:
    assert set(FAMILIES) == set(GENERATORS)


@pytest.mark.parametrize("family", sorted(GENERATORS))
def test_deterministic_per_seed(family: str) -> None:
    assert generate(family, 10, seed=3) == generate(family, 10, seed=3)
    assert generate(family, 10, seed=3) != generate(family, 10, seed=4)
    assert generate(family, 5, seed=3) == generate(family, 10, seed=3)[:5]
    json.dumps(generate(family, 3, seed=3))


@pytest.mark.parametrize(("family", "knobs"), [(f, k) for f, ks in KNOB_SETS.items() for k in ks])
def test_reference_is_correct_and_perturbation_is_not(family: str, knobs: dict[str, Any]) -> None:
    for task in generate(family, 40, seed=7, **knobs):
        assert set(task) == {
            "prompt",
            "reference",
            "verifier_kind",
            "verifier_config",
            "domain",
            "difficulty",
            "metadata",
        }
        right = verify(spec(task), f"The answer is {task['reference']['answer']}.")
        assert right.correct, (task, right)
        wrong = verify(spec(task), perturbed(task))
        assert not wrong.correct, (task, wrong)


def test_mazes_are_solvable_and_shown_in_the_prompt() -> None:
    for task in generate("maze", 100, seed=1, rows=15, cols=15, wall_density=0.7):
        grid = task["reference"]["grid"]
        assert shortest_path(grid) is not None
        assert "\n".join(grid) in task["prompt"]
        assert task["difficulty"] == len(task["reference"]["answer"].split())


def test_guess_number_needs_feedback() -> None:
    tasks = generate("guess_number", 400, seed=0, low=1, high=100)
    hits = sum(verify(spec(t), "The answer is 50.").correct for t in tasks)
    assert hits <= 15  # about 1 in 100
    assert "higher or lower" in tasks[0]["prompt"]
    direction = verify(spec(tasks[0]), "The answer is 0.").details["direction"]
    assert direction == "too_low"


@pytest.mark.parametrize(
    ("family", "knobs", "message"),
    [
        ("nope", {}, "unknown task family"),
        ("arithmetic", {"digit": 2}, "digit"),
        ("arithmetic", {"digits": 0}, "digits"),
        ("arithmetic", {"digits": "2"}, "whole number"),
        ("arithmetic", {"operations": "/"}, "operations"),
        ("guess_number", {"low": 5, "high": 5}, "high"),
        ("maze", {"wall_density": 0.9}, "wall_density"),
        ("code_guess", {"allow_repeats": 1}, "true or false"),
    ],
)
def test_bad_knobs(family: str, knobs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        generate(family, 1, seed=0, **knobs)


def test_bad_n() -> None:
    with pytest.raises(ValueError, match="n must"):
        generate("arithmetic", -1, seed=0)
