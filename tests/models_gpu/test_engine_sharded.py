from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from models_gpu.backends import load_generator
from models_gpu.backends.shard_revealer import NOTHING_TO_ADD
from models_gpu.backends.sharded_student import arithmetic_shards
from models_gpu.spec.protocol import ProtocolSpec
from models_gpu.spec.run import RoleSpec
from models_gpu.spec.templates import DEFAULT_TEMPLATES
from models_gpu.types import DialogueJob, DialogueResult, GenerationRequest, Generator, TurnRecord
from tests.models_gpu.engine_doubles import Recording, Replying, arithmetic_job, run, transcript

SHARDED = ProtocolSpec(mode="sharded", max_turns=6)


def sharded_jobs(n: int, *, samples: int = 1) -> list[DialogueJob]:
    jobs = []
    for task_id in range(n):
        left, right = 11 + (task_id * 7) % 80, 12 + (task_id * 13) % 80
        base = arithmetic_job(
            task_id, left, right, seed=0, shards=arithmetic_shards(left, "+", right)
        )
        jobs += [replace(base, sample_index=k, seed=1000 * task_id + k) for k in range(samples)]
    return jobs


def sharded_student(**params: float) -> Generator:
    return load_generator(RoleSpec("scripted", "sharded-student", params))


def revealer() -> Generator:
    return load_generator(RoleSpec("scripted", "shard-revealer"))


def shard_numbers(result: DialogueResult) -> list[int]:
    return [t.private_context["shard"] for t in result.turns if t.kind == "shard"]


def is_premature(result: DialogueResult, attempt: TurnRecord) -> bool:
    """The web side's definition: the last shard turn before the attempt is not the last shard."""
    shards = [t for t in result.turns[: attempt.index] if t.kind == "shard"]
    return bool(shards[-1].private_context["shard"] < shards[-1].private_context["shards_total"])


def test_turn_layout() -> None:
    jobs = sharded_jobs(60)
    results, stats = run(jobs, sharded_student(), None, SHARDED, user_simulator=revealer())
    assert sorted(r.task_id for r in results) == list(range(60))
    for result in results:
        job = jobs[result.task_id]
        first = result.turns[0]
        assert (first.index, first.role, first.kind, first.round) == (0, "user", "shard", 1)
        assert first.text == job.task.shards[0]
        assert first.private_context == {"shard": 1, "shards_total": 3}
        assert shard_numbers(result) == list(range(1, len(shard_numbers(result)) + 1))
        assert [t.index for t in result.turns] == list(range(len(result.turns)))
        students = [t for t in result.turns if t.role == "student"]
        assert [t.round for t in students] == list(range(1, len(students) + 1))
        for turn in result.turns[1:]:
            if turn.role == "student":
                assert turn.kind in ("attempt", "question", "other")
                assert (turn.verdict is not None) == (turn.kind == "attempt")
            else:  # the simulator answers the student's reply of the same round
                assert turn.role == "user" and turn.kind in ("shard", "other")
                assert result.turns[turn.index - 1].role == "student"
                assert result.turns[turn.index - 1].round == turn.round
                if turn.kind == "shard":
                    shard = turn.private_context["shard"]
                    assert turn.private_context == {"shard": shard, "shards_total": 3}
                    assert turn.text == job.task.shards[shard - 1]
                else:
                    assert turn.text == NOTHING_TO_ADD
        assert result.turns[-1].role == "student"  # a dialogue ends on the student's reply
        last = result.turns[-1]
        if result.end_reason == "solved":
            assert last.verdict is not None and last.verdict.correct and last.kind == "attempt"
            assert result.first_correct_turn == last.round and result.solved
        elif result.end_reason == "shards_exhausted":
            assert last.kind == "attempt" and not last.verdict.correct  # type: ignore[union-attr]
            assert max(shard_numbers(result)) == 3 and not is_premature(result, last)
        else:
            assert result.end_reason == "max_turns" and last.round == SHARDED.max_turns
    assert stats.dialogues_finished == 60 and stats.teacher_calls == 0


def test_the_student_asks_guesses_early_and_solves_once_it_knows_everything() -> None:
    results, _ = run(sharded_jobs(100), sharded_student(), None, SHARDED)
    attempts = [(r, t) for r in results for t in r.turns if t.kind == "attempt"]
    kinds = Counter(t.kind for r in results for t in r.turns if t.role == "student")
    premature = [t for r, t in attempts if is_premature(r, t)]
    assert kinds["question"] > 20 and 20 < len(premature) < len(attempts)
    assert {r.end_reason for r in results} == {"solved"}
    # A full-information attempt by this student (final_accuracy 1) is always right.
    assert all(t.verdict and t.verdict.correct for r, t in attempts if not is_premature(r, t))
    sloppy, _ = run(sharded_jobs(100), sharded_student(final_accuracy=0.7), None, SHARDED)
    assert {r.end_reason for r in sloppy} == {"solved", "shards_exhausted"}


def test_a_student_that_always_asks_is_solved_after_the_last_shard() -> None:
    results, stats = run(sharded_jobs(10), sharded_student(ask_probability=1), None, SHARDED)
    for result in results:
        assert [(t.role, t.kind) for t in result.turns] == [
            ("user", "shard"), ("student", "question"), ("user", "shard"),
            ("student", "question"), ("user", "shard"), ("student", "attempt"),
        ]  # fmt: skip
        assert result.end_reason == "solved" and result.first_correct_turn == 3
    assert stats.student_generations == 30 and stats.user_simulator_calls == 20


def test_a_student_that_never_asks_attempts_prematurely_every_round() -> None:
    results, _ = run(sharded_jobs(10), sharded_student(ask_probability=0), None, SHARDED)
    for result in results:
        attempts = [t for t in result.turns if t.kind == "attempt"]
        assert [is_premature(result, t) for t in attempts][: len(attempts) - 1] == [True] * (
            len(attempts) - 1
        )
        assert result.end_reason == "solved"  # the early guesses here are never right


def test_one_batched_call_per_role_per_round_with_dropouts() -> None:
    student, simulator = Recording(sharded_student()), Recording(revealer())
    results, stats = run(sharded_jobs(40), student, None, SHARDED, user_simulator=simulator)
    ended_in_round = Counter(r.turns[-1].round for r in results)
    open_before = [40]
    for k in range(1, len(student.batches) + 1):
        open_before.append(open_before[-1] - ended_in_round[k])
    assert student.batch_sizes == open_before[: len(student.batches)]
    assert simulator.batch_sizes == [n for n in open_before[1:] if n > 0]
    assert stats.student_generations == sum(student.batch_sizes)
    assert stats.user_simulator_calls == sum(simulator.batch_sizes)
    all_turns = [t for r in results for t in r.turns]
    assert stats.prompt_tokens == sum(t.prompt_tokens for t in all_turns)
    assert stats.completion_tokens == sum(t.completion_tokens for t in all_turns)


def test_what_the_student_and_the_simulator_see() -> None:
    student, simulator = Recording(sharded_student(ask_probability=1)), Recording(revealer())
    [job] = sharded_jobs(1)
    [result], _ = run([job], student, None, SHARDED, user_simulator=simulator)
    last_student = student.batches[-1][0]
    assert last_student.private_context == {} and last_student.seed == job.seed
    seen = [(m.role, m.content) for m in last_student.messages]
    assert seen[0] == ("system", DEFAULT_TEMPLATES["student_system"])
    assert job.task.prompt not in [content for _, content in seen]  # only the shards
    public = [("assistant" if t.role == "student" else "user", t.text) for t in result.turns]
    assert seen[1:] == public[:-1]

    first, second = (batch[0] for batch in simulator.batches)
    assert first.private_context == {
        "unrevealed_shards": list(job.task.shards[1:]),
        "next_shard": job.task.shards[1],
    }
    assert second.private_context == {
        "unrevealed_shards": [job.task.shards[2]],
        "next_shard": job.task.shards[2],
    }
    assert first.messages[0] == replace(first.messages[0], role="system")
    assert first.messages[0].content == DEFAULT_TEMPLATES["user_simulator_system"]
    # From the simulator's side its own (user) turns are "assistant" and the student is "user".
    assert [m.role for m in second.messages[1:]] == ["assistant", "user", "assistant", "user"]


def test_the_default_simulator_is_the_shard_revealer() -> None:
    jobs = sharded_jobs(20)
    with_default, stats = run(jobs, sharded_student(), None, SHARDED)
    explicit, _ = run(jobs, sharded_student(), None, SHARDED, user_simulator=revealer())
    assert sorted(map(transcript, with_default)) == sorted(map(transcript, explicit))
    assert stats.user_simulator_calls > 0


def test_a_model_simulator_speaks_in_its_own_words() -> None:
    def paraphrase(request: GenerationRequest) -> str:
        shard = request.private_context["next_shard"]
        return f"Oh, and: {shard.lower()}" if shard else "Nothing more, sorry."

    results, stats = run(
        sharded_jobs(5), sharded_student(ask_probability=1), None, SHARDED,
        user_simulator=Replying(paraphrase),
    )  # fmt: skip
    for result in results:
        shards = [t for t in result.turns if t.kind == "shard"]
        assert [t.private_context["shard"] for t in shards] == [1, 2, 3]
        assert shards[1].text.startswith("Oh, and: the first number")
        assert shards[1].prompt_tokens == 2  # the simulator's generation is accounted
    assert stats.user_simulator_calls == 10


def test_after_the_last_shard_questions_get_a_brief_answer_until_an_attempt() -> None:
    def asks_three_times_then_answers(request: GenerationRequest) -> str:
        replies = sum(m.role == "assistant" for m in request.messages)
        return "What else is there?" if replies < 5 else "The answer is 1."

    protocol = replace(SHARDED, max_turns=8)
    [result], stats = run(sharded_jobs(1), Replying(asks_three_times_then_answers), None, protocol)
    layout = [(t.role, t.kind, t.private_context.get("shard")) for t in result.turns]
    assert layout == [
        ("user", "shard", 1), ("student", "question", None), ("user", "shard", 2),
        ("student", "question", None), ("user", "shard", 3), ("student", "question", None),
        ("user", "other", None), ("student", "question", None), ("user", "other", None),
        ("student", "question", None), ("user", "other", None), ("student", "attempt", None),
    ]  # fmt: skip
    assert result.turns[6].private_context == {"shards_total": 3}
    assert result.end_reason == "shards_exhausted" and not result.solved
    assert stats.user_simulator_calls == 5


def test_questions_forever_end_at_max_turns() -> None:
    results, _ = run(sharded_jobs(2), Replying(lambda _: "Why?"), None, SHARDED)
    assert {r.end_reason for r in results} == {"max_turns"}
    assert all(len([t for t in r.turns if t.role == "student"]) == 6 for r in results)


def test_a_single_shard_task_ends_at_the_first_attempt() -> None:
    job = arithmetic_job(7, 2, 3, seed=1, shards=("What is 2 + 3?",))
    [solved], _ = run([job], sharded_student(), None, SHARDED)
    assert solved.end_reason == "solved" and len(solved.turns) == 2
    [wrong], _ = run([job], Replying(lambda _: "The answer is 6."), None, SHARDED)
    assert wrong.end_reason == "shards_exhausted" and len(wrong.turns) == 2


def test_k_samples_per_task_keep_their_seeds_and_are_reproducible() -> None:
    jobs = sharded_jobs(5, samples=4)
    results, _ = run(jobs, sharded_student(), None, SHARDED, batch_size=7)
    assert sorted((r.task_id, r.sample_index, r.seed) for r in results) == sorted(
        (j.task.task_id, j.sample_index, j.seed) for j in jobs
    )
    again, _ = run(list(reversed(jobs)), sharded_student(), None, SHARDED, batch_size=64)
    assert sorted(map(transcript, results)) == sorted(map(transcript, again))
    # Samples of one task differ: the seed, not the task, drives the student's choices.
    by_task = Counter(repr(transcript(r)[6]) for r in results if r.task_id == 0)
    assert len(by_task) > 1


def test_the_teacher_is_never_called() -> None:
    teacher = Recording(load_generator(RoleSpec("scripted", "feedback-teacher")))
    results, stats = run(sharded_jobs(5), sharded_student(), teacher, SHARDED)
    assert teacher.batches == [] and stats.teacher_calls == 0
    assert all(t.role != "teacher" for r in results for t in r.turns)


def test_tasks_without_shards_are_refused_by_id_before_any_generation() -> None:
    student = Recording(sharded_student())
    jobs = [*sharded_jobs(2), arithmetic_job(41, 1, 2, seed=0), arithmetic_job(42, 1, 2, seed=0)]
    with pytest.raises(ValueError, match=r"2 task\(s\) have none: 41, 42"):
        run(jobs, student, None, SHARDED)
    assert student.batches == []


def test_stop_and_resume_gives_the_same_dialogues() -> None:
    jobs = sharded_jobs(30)
    whole, _ = run(jobs, sharded_student(), None, SHARDED)
    student = Recording(sharded_student())
    first, stats = run(
        jobs, student, None, SHARDED, batch_size=10, should_stop=lambda: len(student.batches) >= 4
    )
    assert stats.stopped_early and 0 < len(first) < 30
    done = {r.task_id for r in first}
    rest, _ = run([j for j in jobs if j.task.task_id not in done], sharded_student(), None, SHARDED)
    assert sorted(map(transcript, first + rest)) == sorted(map(transcript, whole))
