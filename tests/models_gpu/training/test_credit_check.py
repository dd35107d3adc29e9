"""The credit-assignment check's environment: a student that reads the feedback solves every
dialogue at turn 2, and nothing it learns can help at turn 1. (The training itself is
``benchmarks/credit_assignment.py``: it takes minutes, and whether it passes depends on the base
build, docs/miniature-log.md.)"""

from __future__ import annotations

import re

from models_gpu.backends import load_generator
from models_gpu.spec.generators import stated_range
from models_gpu.spec.protocol import ProtocolSpec
from models_gpu.spec.run import RoleSpec
from models_gpu.training.credit_check import TURNS
from models_gpu.training.miniature import RANGE_SIZE, dialogue_jobs, solved_by_turn, split_tasks
from models_gpu.training.online import play
from models_gpu.types import GenerationRequest
from tests.models_gpu.engine_doubles import Replying


def _reader(request: GenerationRequest) -> str:
    """Guesses the bottom of the range, then whatever number the teacher said."""
    said = re.search(r"The number is (\d+)", request.messages[-1].content)
    if said:
        return f"The answer is {said[1]}."
    return f"The answer is {_low(request.messages[-1].content)}."


def _low(prompt: str) -> int:
    stated = stated_range(prompt)
    assert stated is not None, prompt
    return stated[0]


def test_a_student_that_reads_the_revealed_answer_solves_at_turn_two_and_not_before() -> None:
    _, heldout = split_tasks(0, 40)
    jobs = dialogue_jobs(heldout, 1, "test")
    teacher = load_generator(RoleSpec("scripted", "answer-revealer"))
    results = play(Replying(_reader), jobs, ProtocolSpec("didactic", TURNS), teacher)
    by_turn = solved_by_turn(results, TURNS)
    at_bottom = sum(_low(t.prompt) == int(t.reference["answer"]) for t in heldout)
    assert by_turn == (at_bottom, len(jobs))
    assert at_bottom < len(jobs) / RANGE_SIZE * 3  # turn 1 stays near chance
