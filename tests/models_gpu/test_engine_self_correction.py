from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from models_gpu.backends import load_generator
from models_gpu.spec.protocol import ProtocolSpec
from models_gpu.spec.run import RoleSpec
from models_gpu.spec.templates import DEFAULT_TEMPLATES
from models_gpu.spec.turns import CRITIQUE_INSTRUCTION_KEY
from models_gpu.types import DialogueJob, GenerationRequest, Generator
from tests.models_gpu.engine_doubles import Recording, Replying, run

MakeJobs = Callable[..., list[DialogueJob]]
NUDGE = ProtocolSpec(mode="self_correction", max_turns=4)
CRITIQUE = replace(NUDGE, self_correction="critique")


def student_with(**params: float) -> Generator:
    return load_generator(RoleSpec("scripted", "arithmetic-student", params))


def test_nudge_layout_and_no_teacher(make_jobs: MakeJobs, scripted_teacher: Generator) -> None:
    teacher = Recording(scripted_teacher)
    student = Recording(student_with(first_try_accuracy=0.3, feedback_gain=0.3))
    results, stats = run(make_jobs(40), student, teacher, NUDGE)
    assert teacher.batches == [] and stats.teacher_calls == 0
    assert {r.end_reason for r in results} == {"solved", "max_turns"}
    for result in results:
        attempts = len(result.turns) // 2 + 1
        expected = [
            ("student", "attempt", k // 2 + 1) if k % 2 == 0 else ("user", "feedback", k // 2 + 1)
            for k in range(2 * attempts - 1)
        ]
        assert [(t.role, t.kind, t.round) for t in result.turns] == expected
        for turn in result.turns:
            if turn.role == "user":
                assert turn.text == DEFAULT_TEMPLATES["nudge"]
                assert turn.private_context == {} and turn.verdict is None
                assert turn.prompt_tokens == turn.completion_tokens == 0  # no generation
            else:
                assert turn.verdict is not None
    # One student call per round, none for the nudges.
    assert stats.student_generations == sum(student.batch_sizes)
    assert len(student.batches) == max(r.turns[-1].round for r in results)


def test_the_nudge_is_the_template_and_reaches_the_student(make_jobs: MakeJobs) -> None:
    protocol = replace(NUDGE, templates={"nudge": "No. Again ({max_turns} tries)."})
    student = Recording(student_with(first_try_accuracy=0, feedback_gain=0))
    [result], _ = run(make_jobs(1), student, None, protocol)
    assert result.turns[1].text == "No. Again (4 tries)."
    last_request = student.batches[-1][0]
    assert last_request.messages[-1].content == "No. Again (4 tries)."
    assert last_request.private_context == {}
    assert all(
        m.role != "system" or m.content == DEFAULT_TEMPLATES["student_system"]
        for m in last_request.messages
    )


def test_nudges_help_a_student_that_learns_from_any_feedback(make_jobs: MakeJobs) -> None:
    jobs = make_jobs(200, seed=3)
    learner, _ = run(jobs, student_with(first_try_accuracy=0.3, feedback_gain=0.5), None, NUDGE)
    stubborn, _ = run(jobs, student_with(first_try_accuracy=0.3, feedback_gain=0.0), None, NUDGE)
    assert sum(r.solved for r in learner) > sum(r.solved for r in stubborn) + 20


def test_critique_layout_and_what_the_student_sees(make_jobs: MakeJobs) -> None:
    def reply(request: GenerationRequest) -> str:
        if request.messages[-1].content == DEFAULT_TEMPLATES["self_critique"]:
            return "I added the tens wrong."
        return "The answer is 1."

    student = Recording(Replying(reply))
    [job] = make_jobs(1)
    [result], stats = run([job], student, None, CRITIQUE)
    assert [(t.role, t.kind, t.round) for t in result.turns] == [
        ("student", "attempt", 1), ("student", "other", 1),
        ("student", "attempt", 2), ("student", "other", 2),
        ("student", "attempt", 3), ("student", "other", 3),
        ("student", "attempt", 4),
    ]  # fmt: skip
    critiques = [t for t in result.turns if t.kind == "other"]
    assert all(t.text == "I added the tens wrong." and t.verdict is None for t in critiques)
    assert all(
        t.private_context == {CRITIQUE_INSTRUCTION_KEY: DEFAULT_TEMPLATES["self_critique"]}
        for t in critiques
    )
    assert result.end_reason == "max_turns"
    # Two student calls per round but the last: the attempt, then the critique.
    assert student.batch_sizes == [1] * 7 and stats.student_generations == 7
    critique_request, next_attempt = student.batches[1][0], student.batches[2][0]
    assert [(m.role, m.content) for m in critique_request.messages[1:]] == [
        ("user", job.task.prompt),
        ("assistant", "The answer is 1."),
        ("user", DEFAULT_TEMPLATES["self_critique"]),
    ]
    # Later the critique stands where feedback would; the instruction is gone.
    assert [(m.role, m.content) for m in next_attempt.messages[1:]] == [
        ("user", job.task.prompt),
        ("assistant", "The answer is 1."),
        ("user", "I added the tens wrong."),
    ]
    assert all(request.private_context == {} for request in student.requests)


def test_critique_batches_shrink_as_dialogues_are_solved(make_jobs: MakeJobs) -> None:
    student = Recording(student_with(first_try_accuracy=0.4, feedback_gain=0.4))
    results, stats = run(make_jobs(30), student, None, CRITIQUE)
    attempt_batches, critique_batches = student.batch_sizes[0::2], student.batch_sizes[1::2]
    assert attempt_batches[0] == 30
    solved_in = [sum(r.first_correct_turn == k for r in results) for k in range(1, 5)]
    for k, critiques in enumerate(critique_batches):
        assert critiques == attempt_batches[k] - solved_in[k]
        if k + 1 < len(attempt_batches):
            assert attempt_batches[k + 1] == critiques
    assert stats.student_generations == sum(student.batch_sizes)
    for result in results:
        kinds = [t.kind for t in result.turns]
        assert kinds[0::2] == ["attempt"] * len(kinds[0::2])
        assert kinds[1::2] == ["other"] * len(kinds[1::2])


@pytest.mark.parametrize("protocol", [NUDGE, CRITIQUE])
def test_a_correct_first_attempt_needs_no_correction(
    make_jobs: MakeJobs, protocol: ProtocolSpec
) -> None:
    student = Recording(student_with(first_try_accuracy=1.0))
    results, stats = run(make_jobs(5), student, None, protocol)
    assert all(len(r.turns) == 1 and r.first_correct_turn == 1 for r in results)
    assert student.batch_sizes == [5] and stats.student_generations == 5
