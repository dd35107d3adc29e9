"""The credit-assignment check: its environment (a student that reads the feedback solves every
dialogue at turn 2, and nothing it learns can help at turn 1), and the quick check's training
(online SML must make the student read it). The full check, from the miniature's base, is
``benchmarks/credit_assignment.py``: it takes minutes, and whether it passes depends on the base
build (docs/miniature-log.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from models_gpu.backends import load_generator
from models_gpu.spec.generators import stated_range
from models_gpu.spec.protocol import ProtocolSpec
from models_gpu.spec.run import RoleSpec
from models_gpu.training.credit_check import (
    QUICK,
    TURNS,
    build_quick_base,
    quick_tasks,
    run_credit_check,
)
from models_gpu.training.miniature import RANGE_SIZE, dialogue_jobs, solved_by_turn, split_tasks
from models_gpu.training.online import play
from models_gpu.types import GenerationRequest
from tests.models_gpu.engine_doubles import Replying
from webapp.metrics.stats import wilson_interval


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


@pytest.mark.slow
def test_online_sml_learns_to_use_the_revealed_answer_at_turn_two_and_not_at_turn_one(
    tmp_path: Path,
) -> None:
    """The quick check (``credit_check.QUICK``, about two minutes): from a base that copies the
    stated number now and then, online SML must raise accuracy after turn 2 clear of the base's
    95% interval, while accuracy after turn 1 (chance: the prompt says nothing of the number)
    does not rise clear of it. A wrong layout, mask, reward or advantage fails it: the copy is
    rewarded only through turn-2 tokens read in their turn-1 context."""
    base = build_quick_base(tmp_path / "base")
    result = run_credit_check(base, tmp_path, QUICK, tasks=quick_tasks())

    def interval(which: str, turn: int) -> tuple[float, float]:
        solved = result.base if which == "base" else result.trained
        p = wilson_interval(solved[turn - 1], result.dialogues)
        return p.low, p.high

    summary = f"solved by turns 1, 2 of {result.dialogues}: {result.base} -> {result.trained}"
    assert interval("trained", 2)[0] > interval("base", 2)[1], summary
    assert interval("trained", 1)[0] <= interval("base", 1)[1], summary
