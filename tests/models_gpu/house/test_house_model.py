"""The house model: its corpus reads as Dialab's dialogues do, a short build learns and saves a
checkpoint that loads like any other, and builds are deterministic for a seed.

The builds here are tiny (1 layer of 64, a few dozen steps: seconds). The real build
(``python -m models_gpu.house``) takes minutes and is measured by hand; its figures are in
docs/explanation/built-in-models.md.
"""

from __future__ import annotations

import itertools
import json
import random
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from models_gpu.backends import load_generator  # noqa: E402
from models_gpu.backends.feedback_teacher import (  # noqa: E402
    answer_revealer_reply,
    feedback_teacher_reply,
)
from models_gpu.house import build_house_model  # noqa: E402
from models_gpu.house.__main__ import main  # noqa: E402
from models_gpu.house.build import HOUSE_MODEL, HOUSE_TRAINING  # noqa: E402
from models_gpu.house.corpus import (  # noqa: E402
    GUESS_RANGE_SIZE,
    GUESS_TURNS,
    NUDGE,
    REVEALED_HIGH,
    REVEALED_LOW,
    STUDENT_SYSTEM,
    CorpusMix,
    examples,
    held_out_tasks,
    is_held_out,
    make_example,
    teacher_feedback,
)
from models_gpu.house.model import METADATA_FILE, HouseConfig  # noqa: E402
from models_gpu.house.tokenizer import train_tokenizer  # noqa: E402
from models_gpu.house.train import (  # noqa: E402
    IGNORE_INDEX,
    TrainConfig,
    encode_example,
    learning_rate,
)
from models_gpu.spec.generators import stated_range  # noqa: E402
from models_gpu.spec.run import RoleSpec  # noqa: E402
from models_gpu.types import GenerationRequest, Message, TaskSpec  # noqa: E402
from models_gpu.verifiers.numeric import verify_numeric  # noqa: E402

TINY = HouseConfig(hidden_size=64, num_layers=1, num_heads=1, intermediate_size=128, vocab_size=512)
TINY_TRAINING = replace(HOUSE_TRAINING, batch_size=16, learning_rate=3e-3, warmup_steps=5)
FEEDBACK_ONLY = CorpusMix(feedback=1.0)


def tiny_build(out: Path, *, steps: int, seed: int = 0, evaluate_tasks: int = 0) -> Path:
    return build_house_model(
        out,
        steps=steps,
        seed=seed,
        model_config=TINY,
        train_config=TINY_TRAINING,
        evaluate_tasks=evaluate_tasks,
    )


def test_feedback_in_the_corpus_is_what_the_scripted_teacher_says() -> None:
    rng = random.Random(0)
    task = {"prompt": "What is 47 + 38?", "reference": {"answer": "85"}}
    spec = TaskSpec(task_id=0, prompt=task["prompt"], reference=task["reference"],
                    verifier_kind="numeric")  # fmt: skip
    seen_feedback = 0
    for _ in range(40):
        example = make_example(task, rng, FEEDBACK_ONLY)
        assert example[-1].role == "assistant" and example[-1].trained
        assert example[-1].content == "The answer is 85."
        # Only the right answer is trained; the wrong attempts before it are context.
        assert [turn.trained for turn in example].count(True) == 1
        for attempt, reply in itertools.pairwise(example[:-1]):
            if attempt.role != "assistant":
                continue
            assert not verify_numeric(spec, attempt.content).correct
            verdict = verify_numeric(spec, attempt.content)
            context = {"extracted": verdict.extracted, "reference": {"answer": "85"},
                       "verdict_details": dict(verdict.details)}  # fmt: skip
            teacher = feedback_teacher_reply(
                GenerationRequest(messages=(), seed=0, private_context=context)
            )
            assert reply.role == "user" and reply.content in (teacher, NUDGE)
            seen_feedback += reply.content == teacher
    assert seen_feedback > 20


def test_a_second_wrong_attempt_heeds_the_first_feedback() -> None:
    rng = random.Random(1)
    task = {"prompt": "What is 61 - 27?", "reference": {"answer": "34"}}
    checked = 0
    for _ in range(200):
        example = make_example(task, rng, replace(FEEDBACK_ONLY, second_mistake=1.0, no_answer=0))
        first, feedback, second = example[-5], example[-4], example[-3]
        if "too high" in feedback.content or "too low" in feedback.content:
            direction = -1 if "too high" in feedback.content else 1
            moved = Fraction(second.content.split()[-1][:-1]) - Fraction(
                first.content.split()[-1][:-1]
            )
            assert moved * direction > 0
            checked += 1
    assert checked > 100


def test_guessing_games_are_played_with_valid_moves_and_no_strategy() -> None:
    """Every guess is inside the stated range and trained; each wrong one gets the scripted
    teacher's real feedback; and the guesses ignore it (as often outside the interval it left
    as a random guesser would be)."""
    games = list(itertools.islice(examples(0, CorpusMix(guess_number=1.0)), 400))
    inconsistent = later = 0
    for game in games:
        prompt = next(turn.content for turn in game if turn.role == "user")
        low, high = stated_range(prompt) or (None, None)
        assert low is not None and high is not None
        hidden = next(n for n in range(low, high + 1) if not _guessing_misses(game, n))
        spec = TaskSpec(0, prompt, {"answer": str(hidden)}, "numeric", domain="guess_number")
        guesses = [turn for turn in game if turn.role == "assistant"]
        assert 1 <= len(guesses) <= GUESS_TURNS and all(turn.trained for turn in guesses)
        bounds = [low - 1, high + 1]
        for guess, reply in itertools.zip_longest(guesses, game[game.index(guesses[0]) + 1 :: 2]):
            value = int(guess.content.split()[-1].rstrip("."))
            assert low <= value <= high
            if guess is not guesses[0]:
                later += 1
                inconsistent += not bounds[0] < value < bounds[1]
            if reply is not None:
                assert reply.content == teacher_feedback(spec, guess.content)
                # Told as the engine tells it (the domain in the teacher's context): higher or
                # lower, never the sums' "carrying".
                verdict = verify_numeric(spec, guess.content)
                context = {"extracted": verdict.extracted, "domain": "guess_number",
                           "reference": {"answer": str(hidden)},
                           "verdict_details": dict(verdict.details)}  # fmt: skip
                assert reply.content == feedback_teacher_reply(
                    GenerationRequest(messages=(), seed=0, private_context=context)
                )
                assert reply.content.endswith(
                    "The hidden number is lower."
                    if value > hidden
                    else "The hidden number is higher."
                )
                bounds[0 if value < hidden else 1] = value
    assert later > 300 and inconsistent / later > 0.25


def test_narrowing_games_guess_inside_what_the_feedback_left_and_are_always_solved() -> None:
    """The capacity probe's player (``guess_narrowing``) never guesses outside the interval the
    feedback left, so with as many guesses as numbers in the range it always finds the number."""
    mix = CorpusMix(guess_number=1.0, guess_narrowing=True, guess_turns=GUESS_RANGE_SIZE)
    for game in itertools.islice(examples(0, mix), 200):
        prompt = next(turn.content for turn in game if turn.role == "user")
        low, high = stated_range(prompt) or (None, None)
        assert low is not None and high is not None
        guesses = [int(t.content.split()[-1].rstrip(".")) for t in game if t.role == "assistant"]
        hidden = guesses[-1]
        assert not _guessing_misses(game, hidden), "the last guess is the number"
        for value in guesses:
            assert low <= value <= high
            low, high = (low, value - 1) if value > hidden else (value + 1, high)


@pytest.mark.parametrize("copy", [0.0, 0.25, 1.0])
def test_revealed_answer_games_repeat_the_stated_number_as_often_as_asked(copy: float) -> None:
    """The quick credit check's base corpus: two guesses in the one range, the teacher's line is
    the answer-revealer's, and the second guess repeats the stated number ``copy`` of the time
    (or by chance, one in eight, when it guesses at random)."""
    mix = CorpusMix(revealed_answer=1.0, revealed_copy=copy)
    copies = seconds = 0
    for game in itertools.islice(examples(0, mix), 800):
        assert [turn.role for turn in game][:3] == ["system", "user", "assistant"]
        assert stated_range(game[1].content) == (REVEALED_LOW, REVEALED_HIGH)
        guesses = [int(t.content.split()[-1].rstrip(".")) for t in game if t.role == "assistant"]
        assert all(turn.trained for turn in game if turn.role == "assistant")
        assert all(REVEALED_LOW <= guess <= REVEALED_HIGH for guess in guesses)
        if len(guesses) == 1:  # right the first time: the game ends
            continue
        stated = int(game[3].content.removeprefix("Not quite. The number is ").rstrip("."))
        assert game[3].content == answer_revealer_reply(
            GenerationRequest(
                messages=(), seed=0, private_context={"reference": {"answer": str(stated)}}
            )
        )
        assert guesses[0] != stated and len(guesses) == 2
        seconds += 1
        copies += guesses[1] == stated
    expected = copy + (1 - copy) / (REVEALED_HIGH - REVEALED_LOW + 1)
    assert seconds > 600 and abs(copies / seconds - expected) < 0.05


def _guessing_misses(game: tuple[Any, ...], hidden: int) -> bool:
    """Whether some feedback of ``game`` would be wrong if the hidden number were ``hidden``."""
    for guess, reply in itertools.pairwise(game):
        if guess.role == "assistant" and reply.role == "user":
            value = int(guess.content.split()[-1].rstrip("."))
            if ("too high" in reply.content) != (value > hidden) or value == hidden:
                return True
    return False


def test_held_out_tasks_never_appear_in_the_corpus() -> None:
    held_out = held_out_tasks(50, seed=0, digits=2, operations="+-")
    assert len(held_out) == 50 and all(is_held_out(task["prompt"]) for task in held_out)
    prompts = {task["prompt"] for task in held_out}
    for example in itertools.islice(examples(0), 3000):
        user = next(turn.content for turn in example if turn.role == "user")
        question = user.split("?")[0] + "?"  # without any "End your reply with ..."
        assert question not in prompts and not is_held_out(question)


def test_examples_use_the_engines_default_student_system_prompt() -> None:
    systems = [
        example[0].content
        for example in itertools.islice(examples(0), 500)
        if example[0].role == "system"
    ]
    assert systems.count(STUDENT_SYSTEM) > 100


def test_encoding_follows_the_chat_template_and_trains_only_right_answers() -> None:
    stream = examples(3, FEEDBACK_ONLY)
    sample = list(itertools.islice(stream, 20))
    tokenizer = train_tokenizer(
        [turn.content for example in sample for turn in example], vocab_size=400
    )
    for example in sample:
        ids, labels = encode_example(tokenizer, example)
        messages = [{"role": turn.role, "content": turn.content} for turn in example]
        rendered = tokenizer.apply_chat_template(messages, tokenize=False)
        assert ids == tokenizer(rendered, add_special_tokens=False).input_ids
        trained = [token for token in labels if token != IGNORE_INDEX]
        answer = tokenizer.decode(trained[:-1])
        assert answer == example[-1].content and trained[-1] == tokenizer.eos_token_id


def test_learning_rate_warms_up_then_decays_to_its_floor() -> None:
    config = TrainConfig(steps=100, learning_rate=1e-3, warmup_steps=10, min_lr_ratio=0.1)
    rates = [learning_rate(step, config) for step in range(100)]
    assert rates[0] == pytest.approx(1e-4) and rates[9] == pytest.approx(1e-3)
    assert all(a >= b for a, b in itertools.pairwise(rates[10:]))
    assert rates[-1] == pytest.approx(1e-4, rel=0.01)


def test_a_short_build_learns_and_saves_a_checkpoint_that_loads(tmp_path: Path) -> None:
    out = tiny_build(tmp_path / "house", steps=60, evaluate_tasks=3)
    notes = json.loads((out / METADATA_FILE).read_text())
    assert notes["trained"] and notes["training"]["steps"] == 60
    assert notes["loss_last"] < 0.8 * notes["loss_first"]
    assert 0.0 <= notes["one_turn_accuracy"] <= 1.0
    assert set(notes["one_turn_accuracy_by_kind"]) == {
        "1-digit +-", "2-digit +-", "2-digit *", "3-digit +-"
    }  # fmt: skip
    assert len(notes["didactic_2_digit_accuracy_by_turn"]) == 3
    assert notes["build_seconds"] > 0

    model = transformers.AutoModelForCausalLM.from_pretrained(out)
    tokenizer = transformers.AutoTokenizer.from_pretrained(out)
    assert model.config.head_dim == 64  # what vLLM's CPU attention accepts
    prompt = tokenizer.apply_chat_template(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2 + 3?"}],
        tokenize=False,
        add_generation_prompt=True,
    )
    assert (
        prompt
        == "<|bos|><|system|>\nBe brief.<|end|>\n<|user|>\nWhat is 2 + 3?<|end|>\n<|assistant|>\n"
    )
    assert tokenizer.convert_ids_to_tokens(tokenizer(prompt).input_ids)[:3] == [
        "<|bos|>", "<|system|>", "Ċ"
    ]  # fmt: skip

    # Sixty steps teach the format: the reply is an answer and ends with the end token.
    student = load_generator(RoleSpec("transformers", str(out), {"temperature": 0.0}))
    reply = student.generate([GenerationRequest((Message("user", "What is 12 + 30?"),), seed=0)])
    assert reply[0].text.startswith("The answer is ")
    assert reply[0].completion_tokens < 64  # stopped at the end token, not at the cap


def test_a_build_takes_its_steps_from_its_training_settings(tmp_path: Path) -> None:
    """The miniature's games-only base (GAME_TRAINING) sets its own number of steps."""
    games = replace(TINY_TRAINING, steps=3, first_share=0.0, mix=CorpusMix(guess_number=1.0))
    out = build_house_model(
        tmp_path / "games", model_config=TINY, train_config=games, evaluate_tasks=0
    )
    assert json.loads((out / METADATA_FILE).read_text())["training"]["steps"] == 3


def test_builds_are_deterministic_for_a_seed(tmp_path: Path) -> None:
    from safetensors.torch import load_file

    def weights(out: Path) -> dict[str, torch.Tensor]:
        return load_file(out / "model.safetensors")

    first = weights(tiny_build(tmp_path / "a", steps=4, seed=3))
    again = weights(tiny_build(tmp_path / "b", steps=4, seed=3))
    other = weights(tiny_build(tmp_path / "c", steps=4, seed=4))
    assert first.keys() == again.keys()
    assert all(torch.equal(first[name], again[name]) for name in first)
    assert not all(
        first[name].shape == other[name].shape and torch.equal(first[name], other[name])
        for name in first
    )


def test_the_command_line_builds_and_reports_accuracy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--out", str(tmp_path / "cli"), "--steps", "3", "--eval-tasks", "2"]) == 0
    printed = capsys.readouterr().out
    assert "Saved the house model in" in printed
    assert "One-turn accuracy on" in printed and "held-out" in printed
    notes = json.loads((tmp_path / "cli" / METADATA_FILE).read_text())
    assert notes["config"]["hidden_size"] == HOUSE_MODEL.hidden_size
    assert notes["training"]["steps"] == 3
    with pytest.raises(SystemExit):
        main(["--out", str(tmp_path / "bad"), "--steps", "0"])
