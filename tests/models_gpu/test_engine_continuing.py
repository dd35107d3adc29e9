"""Dialogues that go on from turns already played: forks, and dialogues parked for a person."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from models_gpu.backends.human import Person
from models_gpu.engine import run_dialogues
from models_gpu.spec.protocol import ProtocolSpec
from models_gpu.types import DialogueJob, Generator, ParkedDialogue, PersonReply
from tests.models_gpu.engine_doubles import Collector, Recording, transcript
from tests.models_gpu.engine_doubles import run as run_protocol

DIDACTIC = ProtocolSpec(mode="didactic", max_turns=5)
MakeJobs = Callable[..., list[DialogueJob]]


def played(jobs: list[DialogueJob], student: Generator, teacher: Generator, **options):  # type: ignore[no-untyped-def]
    return run_protocol(jobs, student, teacher, DIDACTIC, **options)


def unsolved_after_two(make_jobs: MakeJobs, student: Generator, teacher: Generator) -> list:  # type: ignore[type-arg]
    results, _ = played(make_jobs(40), student, teacher)
    return [r for r in results if r.first_correct_turn is None or r.first_correct_turn > 2]


def test_a_fork_that_changes_nothing_plays_its_parent_again(
    make_jobs: MakeJobs, scripted_student: Generator, scripted_teacher: Generator
) -> None:
    """Kept turns plus the parent's seed: the same continuation, whatever the cut."""
    parents = unsolved_after_two(make_jobs, scripted_student, scripted_teacher)
    assert parents, "the scripted student leaves some dialogues unsolved after turn 2"
    jobs_by_key = {(j.task.task_id, j.sample_index): j for j in make_jobs(40)}
    for keep in (1, 2, 3, 4):  # after a student reply, or after the teacher's feedback
        forks = [
            replace(jobs_by_key[(p.task_id, p.sample_index)], prefix=p.turns[:keep])
            for p in parents
        ]
        again, _ = played(forks, scripted_student, scripted_teacher)
        assert sorted(map(transcript, again)) == sorted(map(transcript, parents))


def test_forks_joining_at_different_turns_share_one_call_per_role_per_round(
    make_jobs: MakeJobs, scripted_student: Generator, scripted_teacher: Generator
) -> None:
    parents = unsolved_after_two(make_jobs, scripted_student, scripted_teacher)[:6]
    jobs_by_key = {(j.task.task_id, j.sample_index): j for j in make_jobs(40)}
    forks = [
        replace(jobs_by_key[(p.task_id, p.sample_index)], prefix=p.turns[: 1 + i % 3])
        for i, p in enumerate(parents)
    ]
    student, teacher = Recording(scripted_student), Recording(scripted_teacher)
    rounds: list[tuple[int, int]] = []
    results, _ = played(
        forks, student, teacher, on_round=lambda k, going: rounds.append((k, going))
    )
    assert len(results) == len(forks)
    assert len(student.batches) <= DIDACTIC.max_turns and 0 not in student.batch_sizes
    assert len(teacher.batches) <= DIDACTIC.max_turns and 0 not in teacher.batch_sizes
    # Nothing is asked twice of a kept turn: the first student call is for round 2 at the earliest.
    assert rounds[0] == (1, len(forks))  # every fork is known unsolved through round 1
    # Kept turns are kept as they were.
    by_key = {(r.task_id, r.sample_index): r for r in results}
    for fork in forks:
        assert (
            by_key[(fork.task.task_id, fork.sample_index)].turns[: len(fork.prefix)] == fork.prefix
        )


def test_a_prefix_that_already_solved_the_task_or_runs_out_of_turns_is_refused(
    make_jobs: MakeJobs, scripted_student: Generator, scripted_teacher: Generator
) -> None:
    results, _ = played(make_jobs(40), scripted_student, scripted_teacher)
    solved = next(r for r in results if r.solved)
    job = next(j for j in make_jobs(40) if j.task.task_id == solved.task_id)
    with pytest.raises(ValueError, match="already hold a correct reply"):
        played([replace(job, prefix=solved.turns)], scripted_student, scripted_teacher)
    short = ProtocolSpec(mode="didactic", max_turns=2)
    results, _ = run_protocol(make_jobs(40), scripted_student, scripted_teacher, short)
    ended = next(r for r in results if r.end_reason == "max_turns")
    job = next(j for j in make_jobs(40) if j.task.task_id == ended.task_id)
    with pytest.raises(ValueError, match="past max_turns"):
        run_protocol([replace(job, prefix=ended.turns)], scripted_student, scripted_teacher, short)


def test_a_person_teacher_parks_dialogues_and_their_answers_play_them_on(
    make_jobs: MakeJobs, scripted_student: Generator, scripted_teacher: Generator
) -> None:
    jobs = make_jobs(12)
    parked: list[ParkedDialogue] = []
    collector = Collector()
    student = Recording(scripted_student)
    stats = run_dialogues(
        jobs, DIDACTIC, student=student, teacher=Person(), on_finished=collector,
        on_parked=parked.extend,
    )  # fmt: skip
    # Round 1 was played for all; the unsolved ones wait for the teacher, nothing else ran.
    assert student.batch_sizes == [12]
    assert len(collector.results) + len(parked) == 12 == stats.dialogues_finished + len(parked)
    assert {p.role for p in parked} == {"teacher"} and {p.round for p in parked} == {1}
    assert stats.dialogues_parked == len(parked) and stats.teacher_calls == 0
    first = parked[0]
    # The person sees the teacher's view: the reference and the verifier's details.
    assert first.request.private_context["reference"] == dict(first.job.task.reference)
    assert "verdict_details" in first.request.private_context
    assert first.rounds_played == 1
    # A person answers; the dialogue plays on from its turns with that answer.
    answer = "Check your carrying, then answer again."
    resumed = replace(first.job, prefix=first.turns, person_reply=PersonReply(answer, "alice"))
    again: list[ParkedDialogue] = []
    collector = Collector()
    stats = run_dialogues(
        [resumed], DIDACTIC, student=scripted_student, teacher=Person(), on_finished=collector,
        on_parked=again.extend,
    )  # fmt: skip
    assert stats.person_turns == 1
    turns = collector.results[0].turns if collector.results else again[0].turns
    feedback = turns[len(first.turns)]
    assert (feedback.role, feedback.text, feedback.round) == ("teacher", answer, 1)
    assert feedback.private_context["person"] == "alice"
    assert feedback.prompt_tokens == 0 and feedback.completion_tokens == 0
    assert turns[len(first.turns) + 1].role == "student"
    if again:  # not solved at round 2: waits for the teacher again, at round 2
        assert (again[0].role, again[0].round) == ("teacher", 2)


def test_a_person_student_is_verified_like_a_model(
    make_jobs: MakeJobs, scripted_teacher: Generator
) -> None:
    job = make_jobs(1)[0]
    parked: list[ParkedDialogue] = []
    run_dialogues([job], DIDACTIC, student=Person(), teacher=scripted_teacher,
                  on_finished=Collector(), on_parked=parked.extend)  # fmt: skip
    assert [(p.role, p.round, p.rounds_played) for p in parked] == [("student", 1, 0)]
    assert "reference" not in str(parked[0].request)  # the student sees only the conversation
    wrong = replace(job, person_reply=PersonReply("The answer is -99999.", "bob"))
    again: list[ParkedDialogue] = []
    run_dialogues([wrong], DIDACTIC, student=Person(), teacher=scripted_teacher,
                  on_finished=Collector(), on_parked=again.extend)  # fmt: skip
    reply, feedback = again[0].turns[:2]
    assert reply.verdict is not None and not reply.verdict.correct
    assert feedback.role == "teacher" and again[0].round == 2
    answer = f"The answer is {job.task.reference['answer']}."
    right = replace(job, prefix=again[0].turns, person_reply=PersonReply(answer, "bob"))
    collector = Collector()
    run_dialogues([right], DIDACTIC, student=Person(), teacher=scripted_teacher,
                  on_finished=collector, on_parked=again.extend)  # fmt: skip
    (result,) = collector.results
    assert result.solved and result.first_correct_turn == 2


def test_a_person_without_a_place_to_park_is_refused(
    make_jobs: MakeJobs, scripted_student: Generator
) -> None:
    with pytest.raises(ValueError, match="on_parked"):
        run_dialogues(make_jobs(1), DIDACTIC, student=scripted_student, teacher=Person(),
                      on_finished=Collector())  # fmt: skip
