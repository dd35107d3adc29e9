from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import replace
from itertools import pairwise
from typing import Any

import pytest

from models_gpu.backends import load_generator
from models_gpu.engine import EngineStats, run_dialogues
from models_gpu.spec.protocol import ProtocolSpec
from models_gpu.spec.run import RoleSpec
from models_gpu.types import DialogueJob, DialogueResult, Generation, GenerationRequest, Generator
from tests.models_gpu.engine_doubles import Collector, Recording, transcript
from tests.models_gpu.engine_doubles import run as run_protocol

DIDACTIC = ProtocolSpec(mode="didactic", max_turns=5)
MakeJobs = Callable[..., list[DialogueJob]]  # the make_jobs fixture


def run(
    jobs: Sequence[DialogueJob],
    student: Generator,
    teacher: Generator | None,
    protocol: ProtocolSpec = DIDACTIC,
    **options: Any,
) -> tuple[list[DialogueResult], EngineStats]:
    return run_protocol(jobs, student, teacher, protocol, **options)


def student_with(**params: float) -> Generator:
    return load_generator(RoleSpec("scripted", "arithmetic-student", params))


def test_one_call_per_role_per_round_with_shrinking_batches(
    make_jobs: MakeJobs, scripted_student: Generator, scripted_teacher: Generator
) -> None:
    student, teacher = Recording(scripted_student), Recording(scripted_teacher)
    results, stats = run(make_jobs(10), student, teacher)

    assert 1 <= len(student.batches) <= 5
    assert student.batch_sizes[0] == 10
    assert student.batch_sizes == sorted(student.batch_sizes, reverse=True)
    # The teacher answers exactly the dialogues still open after each student round.
    attempts_per_round = student.batch_sizes
    finished_per_round = [
        sum(r.turns[-1].round == k for r in results) for k in range(1, len(attempts_per_round) + 1)
    ]
    open_after = [a - f for a, f in zip(attempts_per_round, finished_per_round, strict=True)]
    assert teacher.batch_sizes == [n for n in open_after if n > 0]
    assert stats.student_generations == sum(student.batch_sizes)
    assert stats.teacher_calls == sum(teacher.batch_sizes)


def test_each_dialogue_reported_once_and_consistent(
    make_jobs: MakeJobs, scripted_teacher: Generator
) -> None:
    jobs = make_jobs(40)
    collector = Collector()
    weak_student = student_with(first_try_accuracy=0.2, feedback_gain=0.1)
    stats = run_dialogues(
        jobs, DIDACTIC, student=weak_student, teacher=scripted_teacher, on_finished=collector
    )
    results = collector.results
    assert sorted(r.task_id for r in results) == [job.task.task_id for job in jobs]
    assert {r.end_reason for r in results} == {"solved", "max_turns"}  # both occur here
    for call in collector.calls:  # one call per round: everyone in it finished together
        assert len({len(result.turns) for result in call}) == 1
    for result in results:
        attempts = [turn for turn in result.turns if turn.role == "student"]
        correct_rounds = [turn.round for turn in attempts if turn.verdict and turn.verdict.correct]
        assert result.first_correct_turn == (correct_rounds[0] if correct_rounds else None)
        assert correct_rounds in ([], [attempts[-1].round])  # it stops at the first correct
        assert result.solved == (result.end_reason == "solved") == bool(correct_rounds)
        assert len(attempts) == (result.first_correct_turn or DIDACTIC.max_turns)
        assert [turn.index for turn in result.turns] == list(range(len(result.turns)))
        expected_shape = [
            ("student", "attempt", k // 2 + 1)
            if k % 2 == 0
            else ("teacher", "feedback", k // 2 + 1)
            for k in range(2 * len(attempts) - 1)
        ]
        assert [(t.role, t.kind, t.round) for t in result.turns] == expected_shape
    all_turns = [turn for result in results for turn in result.turns]
    assert stats.dialogues_finished == len(jobs)
    assert stats.prompt_tokens == sum(turn.prompt_tokens for turn in all_turns)
    assert stats.completion_tokens == sum(turn.completion_tokens for turn in all_turns)
    assert not stats.stopped_early


def test_what_each_side_sees(make_jobs: MakeJobs, scripted_teacher: Generator) -> None:
    protocol = replace(
        DIDACTIC, templates={"student_system": "Solve it.", "teacher_system": "Guide them."}
    )
    student = Recording(student_with(first_try_accuracy=0.0, feedback_gain=0.0))
    teacher = Recording(scripted_teacher)
    [job] = make_jobs(1)
    [result], _ = run([job], student, teacher, protocol)

    last_student_request = student.batches[-1][0]
    assert last_student_request.private_context == {}
    assert last_student_request.seed == job.seed
    student_view = [(m.role, m.content) for m in last_student_request.messages]
    assert student_view[:2] == [("system", "Solve it."), ("user", job.task.prompt)]
    public_turns = [
        ("assistant" if turn.role == "student" else "user", turn.text) for turn in result.turns
    ]
    assert student_view[2:] == public_turns[:-1]

    last_teacher_request = teacher.batches[-1][0]
    assert last_teacher_request.seed == job.seed
    teacher_view = [(m.role, m.content) for m in last_teacher_request.messages]
    assert teacher_view[:2] == [("system", "Guide them."), ("assistant", job.task.prompt)]
    swapped = [
        ("user" if role == "assistant" else "assistant", text) for role, text in public_turns
    ]
    assert teacher_view[2:] == swapped[:-2]
    last_attempt, last_feedback = result.turns[-3], result.turns[-2]
    assert last_attempt.verdict is not None
    assert last_feedback.private_context == {
        "extracted": last_attempt.verdict.extracted,
        "reference": {"answer": job.task.reference["answer"]},
        "verdict_details": dict(last_attempt.verdict.details),
    }
    assert last_teacher_request.private_context == last_feedback.private_context


@pytest.mark.parametrize(
    ("sees_reference", "sees_details", "keys"),
    [
        (False, True, {"extracted", "verdict_details"}),
        (True, False, {"extracted", "reference"}),
        (False, False, {"extracted"}),
    ],
)
def test_teacher_private_context_follows_the_protocol(
    make_jobs: MakeJobs,
    scripted_teacher: Generator,
    sees_reference: bool,
    sees_details: bool,
    keys: set[str],
) -> None:
    protocol = replace(
        DIDACTIC, teacher_sees_reference=sees_reference, teacher_sees_verifier_details=sees_details
    )
    student = student_with(first_try_accuracy=0.0, feedback_gain=0.0)
    results, _ = run(make_jobs(3), student, scripted_teacher, protocol)
    feedback_turns = [t for r in results for t in r.turns if t.role == "teacher"]
    assert feedback_turns
    assert all(set(turn.private_context) == keys for turn in feedback_turns)


def test_single_turn_has_one_round_and_no_teacher(
    make_jobs: MakeJobs, scripted_student: Generator, scripted_teacher: Generator
) -> None:
    teacher = Recording(scripted_teacher)
    protocol = ProtocolSpec(mode="single_turn", max_turns=1)
    results, stats = run(make_jobs(30), scripted_student, teacher, protocol)
    assert len(results) == 30
    assert all(len(result.turns) == 1 for result in results)
    assert {r.end_reason for r in results} == {"solved", "max_turns"}
    assert teacher.batches == [] and stats.teacher_calls == 0
    assert run(make_jobs(3), scripted_student, None, protocol)[1].dialogues_finished == 3
    with pytest.raises(ValueError, match="A single-turn protocol has exactly 1 turn"):
        run(make_jobs(1), scripted_student, None, replace(protocol, max_turns=5))


def test_batch_size_chunks_jobs_without_changing_results(
    make_jobs: MakeJobs, scripted_student: Generator, scripted_teacher: Generator
) -> None:
    jobs = make_jobs(10)
    student = Recording(scripted_student)
    chunked, _ = run(jobs, student, scripted_teacher, batch_size=4)
    whole, _ = run(jobs, scripted_student, scripted_teacher, batch_size=64)
    assert max(student.batch_sizes) == 4
    assert student.batch_sizes[0] == 4
    assert sorted(map(transcript, chunked)) == sorted(map(transcript, whole))


def test_should_stop_halts_and_the_rest_resumes_identically(
    make_jobs: MakeJobs, scripted_student: Generator, scripted_teacher: Generator
) -> None:
    jobs = make_jobs(20)
    uninterrupted, _ = run(jobs, scripted_student, scripted_teacher)

    student, teacher = Recording(scripted_student), Recording(scripted_teacher)
    calls_when_stopped: list[int] = []

    def stop_after_three_generation_calls() -> bool:
        calls = len(student.batches) + len(teacher.batches)
        if calls >= 3:
            calls_when_stopped.append(calls)
            return True
        return False

    first_part, stats = run(
        jobs, student, teacher, should_stop=stop_after_three_generation_calls, batch_size=8
    )
    assert stats.stopped_early
    assert calls_when_stopped == [3]  # asked once more, then no further generation
    assert len(student.batches) + len(teacher.batches) == 3
    assert 0 < len(first_part) < len(jobs)
    assert stats.dialogues_finished == len(first_part)
    assert len({r.task_id for r in first_part}) == len(first_part)

    reported = {result.task_id for result in first_part}
    unreported = [job for job in jobs if job.task.task_id not in reported]
    rest, _ = run(unreported, scripted_student, scripted_teacher)
    assert sorted(map(transcript, first_part + rest)) == sorted(map(transcript, uninterrupted))


def test_on_round_follows_each_round_with_the_dialogues_going_on(
    make_jobs: MakeJobs, scripted_teacher: Generator
) -> None:
    events: list[tuple[str, int, int]] = []  # ("finished", dialogues, 0), ("round", going, k)
    run_dialogues(
        make_jobs(10),
        DIDACTIC,
        student=student_with(first_try_accuracy=0.3, feedback_gain=0.2),
        teacher=scripted_teacher,
        batch_size=6,
        on_finished=lambda results: events.append(("finished", len(results), 0)),
        on_round=lambda k, going: events.append(("round", going, k)),
    )
    chunk_sizes = iter((6, 4))
    going, rounds = next(chunk_sizes), []
    for kind, count, k in events:
        if kind == "finished":
            going -= count
            continue
        # Reported after the round's finished dialogues, so the count is of those left.
        assert count == going
        rounds.append(k)
        if going == 0:
            going = next(chunk_sizes, 0)
    assert going == 0, "both chunks were played to their end"
    assert rounds.count(1) == 2, "each chunk starts again at round 1"
    assert all(k == 1 or k == previous + 1 for previous, k in pairwise(rounds))


def test_stop_before_anything_reports_nothing(
    make_jobs: MakeJobs, scripted_student: Generator, scripted_teacher: Generator
) -> None:
    results, stats = run(make_jobs(5), scripted_student, scripted_teacher, should_stop=lambda: True)
    assert results == [] and stats.stopped_early and stats.student_generations == 0


def test_feedback_raises_cumulative_accuracy(
    make_jobs: MakeJobs, scripted_teacher: Generator
) -> None:
    jobs = make_jobs(200, seed=7)

    def cumulative_accuracy(student: Generator) -> list[float]:
        results, _ = run(jobs, student, scripted_teacher)
        solved_by = [
            min((t.round for t in r.turns if t.verdict and t.verdict.correct), default=None)
            for r in results
        ]
        return [
            sum(k is not None and k <= turn for k in solved_by) / len(results)
            for turn in range(1, DIDACTIC.max_turns + 1)
        ]

    with_feedback = cumulative_accuracy(student_with(first_try_accuracy=0.35, feedback_gain=0.45))
    ignoring_feedback = cumulative_accuracy(student_with(first_try_accuracy=0.35, feedback_gain=0))
    assert with_feedback == sorted(with_feedback)
    assert with_feedback[0] == pytest.approx(0.35, abs=0.1)
    assert with_feedback[-1] > with_feedback[0] + 0.4
    assert with_feedback[-1] > ignoring_feedback[-1]  # 1 - 0.65**5 = 0.88 without the gain


def test_rejects_what_it_cannot_run(
    make_jobs: MakeJobs, scripted_student: Generator, scripted_teacher: Generator
) -> None:
    jobs = make_jobs(1)
    with pytest.raises(ValueError, match="needs a teacher"):
        run(jobs, scripted_student, None)
    with pytest.raises(ValueError, match="unknown mode 'socratic'"):
        run(jobs, scripted_student, scripted_teacher, ProtocolSpec("socratic", 3))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"needs tasks with shards; 1 task\(s\) have none: 0"):
        run(jobs, scripted_student, scripted_teacher, ProtocolSpec("sharded", max_turns=3))
    with pytest.raises(ValueError, match="self_correction must be one of nudge, critique"):
        protocol = ProtocolSpec("self_correction", 3, self_correction="praise")  # type: ignore[arg-type]
        run(jobs, scripted_student, None, protocol)
    with pytest.raises(ValueError, match="regenerate_leaks"):
        run(jobs, scripted_student, scripted_teacher, replace(DIDACTIC, regenerate_leaks=-1))
    with pytest.raises(ValueError, match="unknown prompt template 'studnet_system'"):
        run(
            jobs,
            scripted_student,
            scripted_teacher,
            replace(DIDACTIC, templates={"studnet_system": ""}),
        )
    with pytest.raises(ValueError, match="max_turns"):
        run(jobs, scripted_student, scripted_teacher, ProtocolSpec("didactic", max_turns=0))
    with pytest.raises(ValueError, match="batch_size"):
        run(jobs, scripted_student, scripted_teacher, batch_size=0)


def test_a_backend_returning_the_wrong_count_fails_loudly(make_jobs: MakeJobs) -> None:
    class DropsOne:
        def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
            return [Generation("The answer is 1.", 1, 1, 0.0) for _ in requests][1:]

    with pytest.raises(RuntimeError, match="returned 1 generations for 2 requests"):
        run(make_jobs(2), DropsOne(), None, ProtocolSpec("single_turn", max_turns=1))


def test_each_judged_move_of_a_guessing_game_carries_its_feedback_use() -> None:
    """The engine checks every judged move against the verdicts before it in its dialogue."""
    from models_gpu.generators.families import guess_number
    from models_gpu.types import MoveCheck, TaskSpec
    from tests.models_gpu.engine_doubles import Replying

    generated = guess_number(random.Random(0), {"low": 1, "high": 8})
    hidden = int(generated["reference"]["answer"])
    task = TaskSpec(1, generated["prompt"], generated["reference"], "numeric",
                    domain="guess_number")  # fmt: skip
    # 9 (outside the range, too high), the same 9 again, then the answer.
    replies = ["The answer is 9.", "The answer is 9.", f"The answer is {hidden}."]
    student = Replying(
        lambda request: replies[sum(m.role == "assistant" for m in request.messages)]
    )
    teacher = load_generator(RoleSpec("scripted", "feedback-teacher"))
    results, _ = run_protocol(
        [DialogueJob(task, 0, seed=1)], student, teacher, ProtocolSpec("didactic", 3)
    )
    moves = [turn.move for turn in results[0].turns if turn.role == "student"]
    # "9 is too high" rules out nothing inside 1..8: every valid guess is still consistent.
    assert moves == [MoveCheck(False), MoveCheck(False, False, 1.0), MoveCheck(True, True, 1.0)]


def test_jobs_taken_up_between_chunks_play_next_before_the_jobs_still_waiting(
    make_jobs: MakeJobs, scripted_student: Generator, scripted_teacher: Generator
) -> None:
    """A person's answer given while a run's job plays joins at the next chunk, ahead of the
    fresh dialogues still waiting, and is played once."""
    jobs = make_jobs(7)
    first, late = jobs[:6], jobs[6:]
    offers: list[list[DialogueJob]] = [[], late]  # none before chunk 1; one arrives during it
    results, stats = run(
        first, scripted_student, scripted_teacher, batch_size=2,
        take_up=lambda: offers.pop(0) if offers else [],
    )  # fmt: skip
    order = [result.task_id for result in results]
    assert sorted(order) == [0, 1, 2, 3, 4, 5, 6], "every dialogue once, the late one too"
    # Chunks run to their end one after another: [0, 1], then [6, 2], then [3, 4], then [5].
    assert set(order[:2]) == {0, 1} and set(order[2:4]) == {2, 6}
    assert stats.dialogues_finished == 7


def test_the_teacher_knows_the_task_family_so_a_guessing_game_hears_higher_or_lower(
    scripted_teacher: Generator,
) -> None:
    from models_gpu.generators.families import guess_number, task_spec

    task = task_spec(guess_number(random.Random(3), {"low": 1, "high": 64}), task_id=1)
    [result], _ = run(
        [DialogueJob(task=task, sample_index=0, seed=0)],
        student_with(first_try_accuracy=0.0, feedback_gain=0.0),
        scripted_teacher,
    )
    feedback = [turn for turn in result.turns if turn.role == "teacher"]
    assert feedback and all(turn.private_context["domain"] == "guess_number" for turn in feedback)
    for turn in feedback:
        assert turn.text.endswith(("The hidden number is lower.", "The hidden number is higher."))
        assert "carrying" not in turn.text
