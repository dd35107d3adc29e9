"""Turn classification, the judge, and the leak check inside the engine (didactic runs)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from models_gpu.engine import derive_seed
from models_gpu.spec.protocol import ProtocolSpec
from models_gpu.spec.templates import DEFAULT_TEMPLATES
from models_gpu.types import DialogueJob, GenerationRequest, Generator
from tests.models_gpu.engine_doubles import Recording, Replying, arithmetic_job, run

MakeJobs = Callable[..., list[DialogueJob]]
DIDACTIC = ProtocolSpec(mode="didactic", max_turns=4)


def replies_in_order(*texts: str) -> Generator:
    """A student whose n-th reply in a dialogue is ``texts[n]`` (the last one repeats)."""

    def reply(request: GenerationRequest) -> str:
        replied = sum(m.role == "assistant" for m in request.messages)
        return texts[min(replied, len(texts) - 1)]

    return Replying(reply)


def polite_teacher() -> Generator:
    return Replying(lambda _: "Look again at the tens.")


def jobs(n: int) -> list[DialogueJob]:
    return [arithmetic_job(i, 40 + i, 45, seed=100 + i) for i in range(n)]  # answer 85 + i


# --- Turn kinds ----------------------------------------------------------------------------------


def test_didactic_classifies_every_reply_and_verifies_every_reply() -> None:
    student = replies_in_order("Do you mean 40 + 45?", "Let me think.", "The answer is 84.", "85")
    [result], _ = run(jobs(1), student, polite_teacher(), DIDACTIC)
    students = [t for t in result.turns if t.role == "student"]
    assert [t.kind for t in students] == ["question", "other", "attempt", "attempt"]
    assert all(t.verdict is not None for t in students)
    assert [t.verdict.correct for t in students] == [False, False, False, True]  # type: ignore[union-attr]
    assert result.first_correct_turn == 4 and result.end_reason == "solved"
    teacher_turns = [t for t in result.turns if t.role == "teacher"]
    assert len(teacher_turns) == 3  # the teacher answers questions and other replies too
    # The verifier read 45 in the question (wrong value) and nothing in "Let me think.".
    reasons = [t.private_context["verdict_details"]["reason"] for t in teacher_turns]
    assert reasons == ["wrong_value", "not_a_number", "wrong_value"]


def test_a_reply_the_verifier_accepts_is_an_attempt() -> None:
    [result], _ = run(jobs(1), replies_in_order("Is it 85?"), polite_teacher(), DIDACTIC)
    [turn] = result.turns
    assert turn.kind == "attempt" and result.solved


def judge_saying(label: str) -> Recording:
    return Recording(Replying(lambda _: label))


def test_ambiguous_replies_go_to_the_judge_in_one_call_per_round() -> None:
    # Dialogue i: an ambiguous wrong guess first ("Is it 84?"), then clear replies.
    student = replies_in_order("Is it 1?", "The answer is 2.", "Is it 3?", "What is a sum?")
    judge = judge_saying("attempt")
    protocol = replace(DIDACTIC, judge_turn_kinds=True)
    results, stats = run(jobs(6), student, polite_teacher(), protocol, judge=judge)
    # Rounds 1 and 3 hold ambiguous replies: one batched call each, all six dialogues in it.
    assert judge.batch_sizes == [6, 6] and stats.judge_calls == 12
    for result in results:
        students = [t for t in result.turns if t.role == "student"]
        assert [t.kind for t in students] == ["attempt", "attempt", "attempt", "question"]
        judged = students[0].private_context["turn_kind_judge"]
        assert judged == {"reply": "attempt", "label": "attempt"}
        assert students[1].private_context == {} and students[3].private_context == {}
    request = judge.batches[0][0]
    assert request.messages[0].content == DEFAULT_TEMPLATES["judge_turn_kind"]
    assert "Is it 1?" in request.messages[1].content
    assert "What is 40 + 45?" in request.messages[1].content  # what the reply answered
    # The judge's tokens are accounted in the run, not on any turn.
    turn_tokens = sum(t.prompt_tokens for r in results for t in r.turns)
    assert stats.prompt_tokens == turn_tokens + 2 * stats.judge_calls


def test_an_unparseable_judge_reply_leaves_the_rule() -> None:
    protocol = replace(DIDACTIC, judge_turn_kinds=True, max_turns=1)
    judge = judge_saying("It is probably an attempt.")
    [result], _ = run(
        jobs(1), replies_in_order("Is it 1?"), replies_in_order("unused"), protocol, judge=judge
    )
    [turn] = result.turns
    assert turn.kind == "question"  # the rule's fallback for an implicit answer with a "?"
    assert turn.private_context == {
        "turn_kind_judge": {"reply": "It is probably an attempt.", "label": None}
    }


def test_no_judge_call_without_the_option_or_without_a_judge() -> None:
    student = replies_in_order("Is it 1?")
    judge = judge_saying("attempt")
    run(jobs(3), student, polite_teacher(), DIDACTIC, judge=judge)
    assert judge.batches == []
    [result, *_], stats = run(
        jobs(3), student, polite_teacher(), replace(DIDACTIC, judge_turn_kinds=True)
    )
    assert stats.judge_calls == 0 and result.turns[0].kind == "question"


def test_clear_replies_never_reach_the_judge() -> None:
    judge = judge_saying("question")
    protocol = replace(DIDACTIC, judge_turn_kinds=True)
    run(jobs(4), replies_in_order("The answer is 3."), polite_teacher(), protocol, judge=judge)
    assert judge.batches == []


# --- Leaks ------------------------------------------------------------------------------------


def leaky_on_first_seed(request: GenerationRequest) -> str:
    """States the answer unless asked again with a regeneration seed."""
    answer = request.private_context["reference"]["answer"]
    if request.seed < 1000:
        return f"It is {answer}, obviously."
    return "Check the units column."


def always_leaky(request: GenerationRequest) -> str:
    return f"Just write {request.private_context['reference']['answer']}."


def test_leaking_teacher_turns_are_flagged() -> None:
    student = replies_in_order("The answer is 1.")
    results, stats = run(jobs(3), student, Replying(leaky_on_first_seed), DIDACTIC)
    teacher_turns = [t for r in results for t in r.turns if t.role == "teacher"]
    assert len(teacher_turns) == 9 and all(t.leak_flag for t in teacher_turns)
    assert all("leak_regenerations" not in t.private_context for t in teacher_turns)
    assert stats.teacher_calls == 9


def test_clean_teacher_turns_are_not_flagged(
    make_jobs: MakeJobs, scripted_student: Generator, scripted_teacher: Generator
) -> None:
    results, _ = run(make_jobs(50), scripted_student, scripted_teacher, DIDACTIC)
    teacher_turns = [t for r in results for t in r.turns if t.role == "teacher"]
    assert teacher_turns and not any(t.leak_flag for t in teacher_turns)


def test_flagged_turns_are_regenerated_in_one_batch_with_new_seeds() -> None:
    def leaky_for_even_tasks(request: GenerationRequest) -> str:
        task_seed = request.seed if request.seed < 1000 else None
        if task_seed is not None and task_seed % 2 == 0:
            return leaky_on_first_seed(request)
        return "Check the units column."

    teacher = Recording(Replying(leaky_for_even_tasks))
    protocol = replace(DIDACTIC, regenerate_leaks=2, max_turns=2)
    results, stats = run(jobs(6), replies_in_order("The answer is 1."), teacher, protocol)
    # Per round: the feedback for all six, then one retry for the three that leaked.
    assert teacher.batch_sizes == [6, 3]
    retried = teacher.batches[1]
    assert [r.seed for r in retried] == [derive_seed(s, 1) for s in (100, 102, 104)]
    assert [r.private_context for r in retried] == [
        r.private_context for r in teacher.batches[0][0::2]
    ]
    for result in results:
        [feedback] = [t for t in result.turns if t.role == "teacher"]
        assert not feedback.leak_flag and feedback.text == "Check the units column."
        if result.seed % 2 == 0:
            assert feedback.private_context["leak_regenerations"] == 1
            assert feedback.prompt_tokens == 4  # both generations of the turn are accounted
        else:
            assert "leak_regenerations" not in feedback.private_context
            assert feedback.prompt_tokens == 2
    assert stats.teacher_calls == 9


def test_a_turn_that_keeps_leaking_keeps_its_flag() -> None:
    teacher = Recording(Replying(always_leaky))
    protocol = replace(DIDACTIC, regenerate_leaks=3, max_turns=2)
    [result], stats = run(jobs(1), replies_in_order("The answer is 1."), teacher, protocol)
    [feedback] = [t for t in result.turns if t.role == "teacher"]
    assert feedback.leak_flag and feedback.private_context["leak_regenerations"] == 3
    assert teacher.batch_sizes == [1, 1, 1, 1] and stats.teacher_calls == 4
    assert len({r.seed for r in teacher.requests}) == 4


def test_the_leak_judge_sees_the_turns_the_rules_let_through() -> None:
    def teacher_reply(request: GenerationRequest) -> str:
        return "It is 85." if request.seed == 100 else "Think of eighty-six."

    judge = Recording(Replying(lambda r: "yes" if "eighty" in r.messages[1].content else "no"))
    protocol = replace(DIDACTIC, judge_leaks=True, max_turns=2)
    results, stats = run(
        jobs(3), replies_in_order("The answer is 1."), Replying(teacher_reply), protocol,
        judge=judge,
    )  # fmt: skip
    assert judge.batch_sizes == [2]  # task 0's leak was caught by the rules
    request = judge.batches[0][0]
    assert request.messages[0].content == DEFAULT_TEMPLATES["judge_leak"]
    assert "86" in request.messages[1].content and "eighty-six" in request.messages[1].content
    flagged = {r.task_id: next(t for t in r.turns if t.role == "teacher") for r in results}
    assert all(turn.leak_flag for turn in flagged.values())
    assert "leak_judge" not in flagged[0].private_context
    assert flagged[1].private_context["leak_judge"] == "yes"
    assert stats.judge_calls == 2


def test_the_leak_judge_is_asked_again_after_each_regeneration() -> None:
    judge = Recording(Replying(lambda _: "yes"))
    protocol = replace(DIDACTIC, judge_leaks=True, regenerate_leaks=2, max_turns=2)
    teacher = Recording(Replying(lambda _: "Think about it."))
    [result], stats = run(
        jobs(1), replies_in_order("The answer is 1."), teacher, protocol, judge=judge
    )
    [feedback] = [t for t in result.turns if t.role == "teacher"]
    assert feedback.leak_flag and feedback.private_context["leak_regenerations"] == 2
    assert judge.batch_sizes == [1, 1, 1] and teacher.batch_sizes == [1, 1, 1]
    assert stats.judge_calls == 3 and stats.teacher_calls == 3


def test_templates_reach_each_speaker(make_jobs: MakeJobs, scripted_student: Generator) -> None:
    teacher = Recording(Replying(lambda _: "Hmm."))
    student = Recording(replies_in_order("The answer is 1."))
    templates = {
        "teacher_system": "Teach, {max_turns} rounds. \\boxed{x} stays.",
        "student_system": "",
    }
    run(make_jobs(1), student, teacher, replace(DIDACTIC, templates=templates))
    assert teacher.batches[0][0].messages[0].content == "Teach, 4 rounds. \\boxed{x} stays."
    assert [m.role for m in student.batches[0][0].messages] == ["user"]  # "" = no system prompt
