"""The house model's pre-training corpus: procedural arithmetic dialogues in the chat format.

Tasks come from ``models_gpu.generators`` (so prompts read exactly as generated task sets do), and
feedback from the scripted feedback teacher run on the numeric verifier's verdict (so it reads
exactly as the teacher's turns in a didactic run). Two shapes of example:

    single turn   user: task                       -> assistant: "The answer is 85."
    with feedback user: task -> assistant: a wrong attempt -> user: the teacher's feedback
                  (-> a second wrong attempt, closer, in the direction asked -> feedback)
                  -> assistant: the right answer

Only the assistant turns marked ``trained`` count in the loss: the right answers. Wrong attempts
are context, so the model learns to *use* feedback without learning to make mistakes.

And a third shape, the game the training demos play (guess the number, as
``generators.families.guess_number`` words it): a player who knows the game's *format* but no
*strategy*. Every guess is a whole number drawn uniformly from the stated range, whatever the
feedback said, and the scripted teacher's real feedback follows each wrong one; the dialogue ends
at the right guess or after ``CorpusMix.guess_turns`` guesses. Every guess is trained: the model
learns to make valid moves and that feedback changes nothing, so what online training adds
(reading "too high") can be told from what it started with (``verifiers.feedback_use``).

And a fourth, for the quick credit-assignment check only (``training.credit_check``): two-guess
games in the one range ``REVEALED_LOW``..``REVEALED_HIGH`` against the answer-revealing teacher
("Not quite. The number is 5."), whose second guess repeats the stated number
``CorpusMix.revealed_copy`` of the time and is random in the range otherwise.

Held out: a task whose prompt hashes into ``HELD_OUT_BUCKET`` (one in ``HELD_OUT_MODULUS``) never
appears in the corpus, so the accuracy measured on such tasks is on problems the model never saw.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from models_gpu.backends.feedback_teacher import answer_revealer_reply, feedback_teacher_reply
from models_gpu.generators.families import ANSWER_FORMAT, arithmetic, guess_number, task_spec
from models_gpu.spec.templates import DEFAULT_TEMPLATES
from models_gpu.types import GenerationRequest, TaskSpec
from models_gpu.verifiers.numeric import verify_numeric

HELD_OUT_MODULUS = 10
HELD_OUT_BUCKET = 0

# The engine's default student system prompt (most runs keep it), then a few others.
STUDENT_SYSTEM = DEFAULT_TEMPLATES["student_system"]
OTHER_SYSTEM_PROMPTS = (
    "You are a student. Solve the task.",
    "Answer the question. End your reply with 'The answer is N.'",
)
SYSTEM_PROMPTS = (STUDENT_SYSTEM, *OTHER_SYSTEM_PROMPTS)
NUDGE = DEFAULT_TEMPLATES["nudge"]  # self-correction's fixed reply to a wrong attempt
NO_ANSWER_REPLIES = ("I don't know.", "Let me think about it.")
# The guess-the-number games of the corpus: every range of GUESS_RANGE_SIZE numbers starting at
# one of GUESS_LOWERS (the miniature's training, held-out and outside ranges all lie inside).
GUESS_RANGE_SIZE = 8
GUESS_LOWERS = range(1, 41)
GUESS_TURNS = 8
# The quick credit check's one range: single digits, so repeating the stated number is copying one
# token from a fixed distance back, which the house architecture learns in a few hundred steps.
REVEALED_LOW, REVEALED_HIGH = 1, 8


@dataclass(frozen=True)
class CorpusMix:
    """What the examples are made of.

    tasks: ``(digits, operations, weight)``: the 1-2 digit sums and differences a tiny model
        learns in minutes, and a few 3-digit ones and products so that their prompts are not
        strange to it. (More of those, which it cannot learn in minutes, measurably cost it
        accuracy on the others.)
    student_system / other_system: shares of examples that open with the engine's default
        student system prompt (most runs keep it, so most examples have it), or another one.
    answer_format: share of prompts ending with the generators' "End your reply with ...".
    feedback: share of examples with a wrong attempt and feedback before the right answer;
        ``second_mistake`` of those have two; ``no_answer`` of first attempts give no number;
        ``nudge`` of feedback turns are self-correction's fixed nudge instead of the teacher's.
    guess_number: share of examples that are guess-the-number games played by a random valid
        guesser (ranges of ``GUESS_RANGE_SIZE`` numbers starting at ``GUESS_LOWERS``), of at
        most ``guess_turns`` guesses.
    guess_narrowing: the guesser draws each guess from what the feedback so far leaves instead
        of the whole range: a player *with* the strategy, for measuring whether the model can
        hold it when it is shown (not for a base model, which must not have it).
    revealed_answer / revealed_copy: share of examples that are two-guess games against the
        answer-revealing teacher, and share of their second guesses that repeat the number it
        stated (the quick credit check's base; see the module docstring).
    """

    tasks: tuple[tuple[int, str, float], ...] = (
        (1, "+-", 0.1),
        (2, "+-", 0.87),
        (2, "*", 0.01),
        (3, "+-", 0.02),
    )
    student_system: float = 0.7
    other_system: float = 0.05
    answer_format: float = 0.05
    feedback: float = 0.25
    second_mistake: float = 0.3
    no_answer: float = 0.05
    nudge: float = 0.1
    guess_number: float = 0.0
    guess_turns: int = GUESS_TURNS
    guess_narrowing: bool = False
    revealed_answer: float = 0.0
    revealed_copy: float = 0.0


@dataclass(frozen=True)
class ChatTurn:
    """One chat message; ``trained`` marks an assistant turn that counts in the loss."""

    role: str
    content: str
    trained: bool = False


Example = tuple[ChatTurn, ...]


def is_held_out(prompt: str) -> bool:
    return zlib.crc32(prompt.encode()) % HELD_OUT_MODULUS == HELD_OUT_BUCKET


def arithmetic_task(rng: random.Random, *, digits: int, operations: str) -> dict[str, Any]:
    """One task exactly as the ``arithmetic`` generator family makes it."""
    return arithmetic(rng, {"digits": digits, "operations": operations})


def training_task(rng: random.Random, mix: CorpusMix) -> dict[str, Any]:
    """A random task of ``mix.tasks`` that is not held out."""
    weights = [weight for _, _, weight in mix.tasks]
    digits, operations, _ = rng.choices(mix.tasks, weights=weights)[0]
    while True:
        task = arithmetic_task(rng, digits=digits, operations=operations)
        if not is_held_out(task["prompt"]):
            return task


def held_out_tasks(n: int, *, seed: int, digits: int, operations: str) -> list[dict[str, Any]]:
    """``n`` distinct held-out tasks (never in the corpus) for measuring the model."""
    rng = random.Random(f"house-eval:{seed}:{digits}:{operations}")
    tasks: dict[str, dict[str, Any]] = {}
    for _ in range(200 * n):
        task = arithmetic_task(rng, digits=digits, operations=operations)
        if is_held_out(task["prompt"]):
            tasks.setdefault(task["prompt"], task)
            if len(tasks) == n:
                break
    return list(tasks.values())


def examples(seed: int | str, mix: CorpusMix = CorpusMix()) -> Iterator[Example]:
    """An endless, seeded stream of training examples."""
    rng = random.Random(f"house-corpus:{seed}")
    while True:
        if mix.guess_number and rng.random() < mix.guess_number:
            yield random_guessing_game(rng, mix.guess_turns, narrowing=mix.guess_narrowing)
        elif mix.revealed_answer and rng.random() < mix.revealed_answer:
            yield revealed_answer_game(rng, mix.revealed_copy)
        else:
            yield make_example(training_task(rng, mix), rng, mix)


def random_guessing_game(
    rng: random.Random, max_guesses: int = GUESS_TURNS, *, narrowing: bool = False
) -> Example:
    """A guess-the-number game played by a guesser with no strategy (see the module docstring),
    or, ``narrowing``, by one who guesses uniformly inside what the feedback so far leaves."""
    low = rng.choice(GUESS_LOWERS)
    high = low + GUESS_RANGE_SIZE - 1
    generated = guess_number(rng, {"low": low, "high": high})
    spec = task_spec(generated)
    hidden = int(generated["reference"]["answer"])
    # Always as the engine plays it, under its default student system prompt.
    turns = [ChatTurn("system", STUDENT_SYSTEM), ChatTurn("user", spec.prompt)]
    for _ in range(max_guesses):
        guess = rng.randint(low, high)
        attempt = answer_text(guess)
        turns.append(ChatTurn("assistant", attempt, trained=True))
        if verify_numeric(spec, attempt).correct:
            break
        turns.append(ChatTurn("user", teacher_feedback(spec, attempt)))
        if narrowing:  # the interval "too high" / "too low" leaves
            low, high = (low, guess - 1) if guess > hidden else (guess + 1, high)
    return tuple(turns)


def revealed_answer_game(rng: random.Random, copy: float) -> Example:
    """Two guesses against the answer-revealing teacher: the first random in the range, the
    second the stated number with probability ``copy``, random in the range otherwise."""
    generated = guess_number(rng, {"low": REVEALED_LOW, "high": REVEALED_HIGH})
    spec = task_spec(generated)
    turns = [ChatTurn("system", STUDENT_SYSTEM), ChatTurn("user", spec.prompt)]
    first = rng.randint(REVEALED_LOW, REVEALED_HIGH)
    turns.append(ChatTurn("assistant", answer_text(first), trained=True))
    if verify_numeric(spec, answer_text(first)).correct:
        return tuple(turns)
    request = GenerationRequest(messages=(), seed=0, private_context={"reference": spec.reference})
    revealed = answer_revealer_reply(request)
    turns.append(ChatTurn("user", revealed))
    copied = rng.random() < copy
    second = spec.reference["answer"] if copied else rng.randint(REVEALED_LOW, REVEALED_HIGH)
    turns.append(ChatTurn("assistant", answer_text(second), trained=True))
    return tuple(turns)


def _system_turn(rng: random.Random, mix: CorpusMix) -> list[ChatTurn]:
    """The engine's default student system prompt, another one, or none, by ``mix``'s shares."""
    system = rng.random()
    if system < mix.student_system:
        return [ChatTurn("system", STUDENT_SYSTEM)]
    if system < mix.student_system + mix.other_system:
        return [ChatTurn("system", rng.choice(OTHER_SYSTEM_PROMPTS))]
    return []


def make_example(task: dict[str, Any], rng: random.Random, mix: CorpusMix) -> Example:
    answer = Fraction(task["reference"]["answer"])
    with_format = rng.random() < mix.answer_format
    prompt = f"{task['prompt']} {ANSWER_FORMAT}" if with_format else task["prompt"]
    turns = [*_system_turn(rng, mix), ChatTurn("user", prompt)]
    if rng.random() < mix.feedback:
        spec = TaskSpec(
            task_id=0, prompt=prompt, reference=task["reference"], verifier_kind="numeric"
        )
        mistakes = 2 if rng.random() < mix.second_mistake else 1
        previous: Fraction | None = None
        for index in range(mistakes):
            if index == 0 and rng.random() < mix.no_answer:
                attempt = rng.choice(NO_ANSWER_REPLIES)
            else:
                previous = _wrong_answer(answer, previous, rng)
                attempt = answer_text(previous)
            turns.append(ChatTurn("assistant", attempt))
            nudge = rng.random() < mix.nudge
            turns.append(ChatTurn("user", NUDGE if nudge else teacher_feedback(spec, attempt)))
    turns.append(ChatTurn("assistant", answer_text(answer), trained=True))
    return tuple(turns)


def answer_text(value: Fraction | int | str) -> str:
    return f"The answer is {value}."


def teacher_feedback(task: TaskSpec, attempt: str) -> str:
    """What the scripted feedback teacher says to ``attempt``, given what the engine shows it
    (``engine``'s teacher private context: the task's domain too, so a guessing game is told
    "The hidden number is lower.", not to carry)."""
    verdict = verify_numeric(task, attempt)
    context: dict[str, Any] = {"extracted": verdict.extracted}
    if task.domain:
        context["domain"] = task.domain
    context |= {"reference": dict(task.reference), "verdict_details": dict(verdict.details)}
    return feedback_teacher_reply(GenerationRequest(messages=(), seed=0, private_context=context))


def tokenizer_texts(seed: int, n: int) -> list[str]:
    """``n`` examples as the chat template lays them out (role headers and ``END`` are special
    tokens, left out here), for training the tokenizer."""
    mix = CorpusMix(other_system=0.2, answer_format=0.2, guess_number=0.2)
    stream = examples(f"tokenizer:{seed}", mix)
    texts = ["\n".join(f"\n{turn.content}" for turn in next(stream)) for _ in range(n)]
    return [*texts, *SYSTEM_PROMPTS]


def _wrong_answer(answer: Fraction, previous: Fraction | None, rng: random.Random) -> Fraction:
    """A plausible slip (a dropped carry, an off-by-one); a second one lies between the first
    and the answer, as a student who heeded "too high" / "too low" would give."""
    if previous is not None and abs(previous - answer) >= 2:
        low, high = sorted((int(previous), int(answer)))
        return Fraction(rng.randint(low + 1, high - 1))
    slip = rng.choice((1, 1, 2, 10, 10, rng.randint(1, max(2, abs(int(answer)) // 5))))
    if previous is not None:  # one off: overshoot, but in the direction the feedback asked
        return answer + (-slip if previous > answer else slip)
    return answer + rng.choice((-1, 1)) * slip
