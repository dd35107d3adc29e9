"""The miniature reproduction of online SML (``manage.py sml_miniature``): the house model,
trained by multi-turn GRPO to learn from a teacher's feedback, against the base model and two
baselines on the same generation budget, on held-out tasks, per seed.

The task family is guess-the-number (``generators.families.guess_number``) over a range of
``RANGE_SIZE`` whole numbers whose lower end varies, with the scripted feedback teacher saying
"too high" or "too low". Chosen because it separates the two things training can improve: the
first guess is right one time in ``RANGE_SIZE`` whatever the student knows, so accuracy after
turn 1 is capped near that, and everything gained after turn 1 comes from using the feedback. A
model that learned from feedback shows a gain that grows with k; a model that only answers
better the first time cannot (arithmetic, the house model's home ground, mixes both).

Held out: tasks whose range starts at a ``lower`` with ``lower % HELD_OUT_EVERY == 0`` are never
trained on, so the evaluation is on ranges the policy never played. Outside: ranges starting at
``OUTSIDE_LOWERS``, whose numbers all lie above every training range's, evaluated the same way.
Every evaluation plays ``eval_turns`` turns, beyond the training horizon, and records beside
accuracy how the moves used the feedback (``verifiers.feedback_use``): the share of valid
guesses, and of later guesses inside the interval "too high" / "too low" left.

Conditions (each from the same base checkpoint, the same seed):
    base        the house model as it is.
    online      online SML: GRPO, ``group_size`` dialogues per task, ``horizon`` turns,
                conversation reward gamma^(t-1).
    single_turn single-turn RL on the same generation budget: one turn, ``group_size *
                horizon`` dialogues per task (``spec.online.single_turn_baseline``).
    sft         offline SML on the same budget: the base model plays ``group_size`` dialogues
                of every training task the online run saw, and SFT trains on the solved ones.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from models_gpu.backends import load_generator
from models_gpu.generators.families import guess_number, task_spec
from models_gpu.results import turn_row
from models_gpu.spec.miniature import MiniatureSettings
from models_gpu.spec.online import single_turn_baseline
from models_gpu.spec.protocol import ProtocolSpec
from models_gpu.spec.reports import MoveCounts, SolvedByTurn
from models_gpu.spec.run import RoleSpec
from models_gpu.spec.templates import DEFAULT_TEMPLATES, render_for_dialogue
from models_gpu.spec.training import TrainingConfig, TrainingDialogue
from models_gpu.training.online import rollout_seed
from models_gpu.types import DialogueJob, DialogueResult, Generator, TaskSpec
from models_gpu.verifiers.feedback_use import move_counts

RANGE_SIZE = 8
LOWEST, HIGHEST_LOWER = 1, 20
HELD_OUT_EVERY = 5
OUTSIDE_LOWERS = range(30, 41)  # numbers 30..47: above every training range (at most 27)
CONDITIONS = ("base", "online", "single_turn", "sft")
REPORTED = MiniatureSettings()  # what ``sml_miniature`` runs by default


@dataclass(frozen=True)
class ConditionResult:
    """One condition of one seed: dialogues solved by turn k (k = 1..eval_turns) out of
    ``dialogues``, the wall time its training took (0 for the base), and the same counts per
    held-out task (``per_task``: each task's dialogues solved by turn k, over its
    ``samples_per_task`` samples, in the held-out tasks' order), which the report pairs across
    conditions; the feedback use of its moves per turn; the same on the outside ranges; and the
    training's mean reward by step. Results written by an older Dialab lack the later fields."""

    condition: str
    solved_by_turn: tuple[int, ...]
    dialogues: int
    train_seconds: float
    per_task: tuple[tuple[int, ...], ...] = ()
    samples_per_task: int = 0
    feedback_use: tuple[MoveCounts, ...] = ()  # per turn k = 1..eval_turns, held out
    outside_solved_by_turn: tuple[int, ...] = ()
    outside_dialogues: int = 0
    outside_feedback_use: tuple[MoveCounts, ...] = ()
    reward_history: tuple[tuple[int, float], ...] = ()  # (step, mean reward) while training


def task(lower: int, hidden: int, task_id: int, *, size: int = RANGE_SIZE) -> TaskSpec:
    """Guess the number in ``lower``..``lower + size - 1``, the hidden number being ``hidden``."""
    knobs = {"low": lower, "high": lower + size - 1}
    return task_spec(guess_number(_Fixed(hidden), knobs), task_id)


class _Fixed(random.Random):
    """A random source whose ``randint`` returns the hidden number chosen by the caller."""

    def __init__(self, hidden: int) -> None:
        super().__init__(0)
        self.hidden = hidden

    def randint(self, a: int, b: int) -> int:
        return self.hidden


def outside_tasks(seed: int, count: int) -> list[TaskSpec]:
    """``count`` tasks drawn by ``seed`` from the ranges starting at ``OUTSIDE_LOWERS``."""
    every = [(low, hidden) for low in OUTSIDE_LOWERS for hidden in range(low, low + RANGE_SIZE)]
    chosen = random.Random(f"miniature-outside:{seed}").sample(every, min(count, len(every)))
    return [task(lower, hidden, 200_000 + i) for i, (lower, hidden) in enumerate(chosen)]


def split_tasks(seed: int, heldout_count: int) -> tuple[list[TaskSpec], list[TaskSpec]]:
    """Every training task (each lower end not held out, each hidden number), shuffled by
    ``seed``, and ``heldout_count`` held-out tasks drawn by ``seed``."""
    train: list[tuple[int, int]] = []
    heldout: list[tuple[int, int]] = []
    for lower in range(LOWEST, HIGHEST_LOWER + 1):
        for hidden in range(lower, lower + RANGE_SIZE):
            (heldout if lower % HELD_OUT_EVERY == 0 else train).append((lower, hidden))
    rng = random.Random(f"miniature:{seed}")
    rng.shuffle(train)
    chosen = rng.sample(heldout, min(heldout_count, len(heldout)))
    return (
        [task(lower, hidden, i) for i, (lower, hidden) in enumerate(train)],
        [task(lower, hidden, 100_000 + i) for i, (lower, hidden) in enumerate(chosen)],
    )


def run_seed(
    house_model: Path,
    work_dir: Path,
    seed: int,
    settings: MiniatureSettings = REPORTED,
    *,
    report: Callable[[str], None] = lambda line: None,
    conditions: Sequence[str] = CONDITIONS,
) -> list[ConditionResult]:
    """Train and evaluate every condition for ``seed``; the results in ``CONDITIONS`` order."""
    from models_gpu.training.online import play, train_online

    train_tasks, heldout_tasks = split_tasks(seed, settings.heldout_tasks)
    teacher = _teacher()
    protocol = ProtocolSpec(mode="didactic", max_turns=settings.eval_turns)
    samples = settings.heldout_samples
    heldout_jobs = dialogue_jobs(heldout_tasks, samples, f"{seed}:held-out")
    outside = outside_tasks(seed, settings.outside_tasks)
    outside_jobs = dialogue_jobs(outside, samples, f"{seed}:outside")
    training = settings.training(seed)
    online = settings.online
    # The task draws the online run made (its epochs over the training tasks): the SFT baseline
    # plays as many dialogues.
    draws = settings.steps * online.tasks_per_step
    used_tasks = [train_tasks[i % len(train_tasks)] for i in range(draws)]
    results = []
    for condition in conditions:
        started = time.perf_counter()
        rewards: tuple[tuple[int, float], ...] = ()
        if condition == "base":
            model_dir = house_model
        elif condition in ("online", "single_turn"):
            config = online if condition == "online" else single_turn_baseline(online)
            outcome = train_online(
                training,
                config,
                base_model=house_model,
                tasks=train_tasks,
                protocol=replace(protocol, max_turns=config.horizon),
                teacher=teacher,
                output_dir=work_dir / run_dir_name(condition, seed, config.rollout_backend),
            )
            assert outcome.final_dir is not None
            model_dir = Path(outcome.final_dir)
            rewards = tuple((step, round(reward, 4)) for step, reward in outcome.reward_history)
        else:
            model_dir = _sft(house_model, work_dir, seed, used_tasks, settings, training, teacher)
        trained_seconds = time.perf_counter() - started if condition != "base" else 0.0
        params = {**dict(settings.eval_params), "device": "cpu"}
        student = load_generator(RoleSpec("transformers", str(model_dir), params))
        heldout = play(student, heldout_jobs, protocol, teacher)
        outside_played = play(student, outside_jobs, protocol, teacher)
        per_task = tuple(
            solved_by_turn(heldout[start : start + samples], settings.eval_turns)
            for start in range(0, len(heldout), samples)
        )
        result = ConditionResult(
            condition,
            solved_by_turn(heldout, settings.eval_turns),
            len(heldout),
            round(trained_seconds, 1),
            per_task,
            samples,
            feedback_use=feedback_use_by_turn(heldout, settings.eval_turns),
            outside_solved_by_turn=solved_by_turn(outside_played, settings.eval_turns),
            outside_dialogues=len(outside_played),
            outside_feedback_use=feedback_use_by_turn(outside_played, settings.eval_turns),
            reward_history=rewards,
        )
        report(
            f"seed {seed} {condition}: trained in {result.train_seconds:.0f} s; solved by turn "
            + ", ".join(str(s) for s in result.solved_by_turn)
            + f" of {len(heldout)}"
        )
        results.append(result)
    return results


def run_dir_name(condition: str, seed: int, rollout_backend: str) -> str:
    """Where a trained condition's checkpoints go in the work dir. Each rollout path has its own
    (the transformers path keeps the name it always had), so that both paths can run in one work
    dir: in a shared one, the second would be refused as another run's configuration."""
    path = "" if rollout_backend == "transformers" else f"-{rollout_backend}"
    return f"{condition}{path}-seed{seed}"


def feedback_use_by_turn(results: Sequence[DialogueResult], turns: int) -> tuple[MoveCounts, ...]:
    """The feedback use of ``results``' moves at each turn k = 1..``turns``."""
    _, by_turn = move_counts(turn for result in results for turn in result.turns)
    return tuple(by_turn.get(k, MoveCounts()) for k in range(1, turns + 1))


def solved_by_turn(results: Sequence[DialogueResult], turns: int) -> tuple[int, ...]:
    """How many of ``results`` were solved by turn k, for k = 1..``turns``."""
    return SolvedByTurn.of((r.first_correct_turn for r in results), turns).solved


def dialogue_jobs(tasks: Sequence[TaskSpec], samples: int, stream: str) -> list[DialogueJob]:
    """``samples`` dialogues of each task, each with a seed of its own from ``stream``."""
    return [
        DialogueJob(task=t, sample_index=position, seed=rollout_seed(0, stream, position))
        for position, t in enumerate(t for t in tasks for _ in range(samples))
    ]


def _teacher() -> Generator:
    return load_generator(RoleSpec("scripted", "feedback-teacher"))


def _sft(
    house_model: Path,
    work_dir: Path,
    seed: int,
    tasks: Sequence[TaskSpec],
    settings: MiniatureSettings,
    training: TrainingConfig,
    teacher: Generator,
) -> Path:
    """Offline SML on the online run's generation budget: the base model plays ``group_size``
    dialogues of each task draw the online run made; SFT on the solved ones, one epoch."""
    from models_gpu.training.online import play
    from models_gpu.training.trainer import train

    online = settings.online
    params: dict[str, Any] = {
        "temperature": online.temperature,
        "max_new_tokens": online.max_new_tokens,
        "device": "cpu",
    }
    student = load_generator(RoleSpec("transformers", str(house_model), params))
    protocol = ProtocolSpec(mode="didactic", max_turns=online.horizon)
    jobs = dialogue_jobs(tasks, online.group_size, f"{seed}:sft")
    solved = [r for r in play(student, jobs, protocol, teacher) if r.solved]
    system = render_for_dialogue(
        DEFAULT_TEMPLATES, "student_system", max_turns=online.horizon, shards_total=0
    )
    by_id = {t.task_id: t for t in tasks}
    dialogues = [
        TrainingDialogue(
            dialogue_id=i,
            student_system=system,
            task_prompt=by_id[r.task_id].prompt,
            sharded=False,
            reference=by_id[r.task_id].reference,
            turns=tuple(turn_row(turn) for turn in r.turns),
        )
        for i, r in enumerate(solved)
    ]
    sft = replace(
        training, method="sft", learning_rate=settings.sft_learning_rate, max_steps=0, epochs=1,
        batch_size=8, save_steps=10_000,
    )  # fmt: skip
    outcome = train(
        sft, base_model=house_model, examples=dialogues, output_dir=work_dir / f"sft-seed{seed}"
    )
    assert outcome.final_dir is not None
    return Path(outcome.final_dir)
