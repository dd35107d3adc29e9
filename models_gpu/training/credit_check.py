"""The credit-assignment check: does online SML learn to use feedback at all?

The environment is the miniature's guess the number, with a teacher that states the answer after
the first wrong guess (the scripted ``answer-revealer``: "Not quite. The number is 17."). Whatever
a student learns, its first guess stays right one time in ``RANGE_SIZE``; a student that reads
the feedback solves every dialogue at turn 2. So online SML over two-turn dialogues must raise
accuracy after turn 2 toward 100% and leave accuracy after turn 1 at chance: the reward of a
right second guess has to reach the tokens of that guess, which depend on the turn-1 context. If
it does not, the rollout layout, the masks, the rewards or the advantages are wrong.

``run_credit_check`` trains from a base checkpoint that can play the game (the house model) and
evaluates base and trained on held-out ranges. ``benchmarks/credit_assignment.py`` runs it from
any checkpoint and prints the reward curve.

The quick check (the test suite's, tests/models_gpu/training/test_credit_check.py, and the
benchmark's ``--quick``) asks the same of a base that makes it quick: ``build_quick_base``
pre-trains the house architecture in about a minute on two-guess games in the one range 1..8
(``house.corpus.revealed_answer_game``), first on games whose second guess always repeats the
stated number, so that the model learns to copy it (one token, from a fixed distance back), then
on games where it does so a quarter of the time. The base therefore copies now and then and
guesses at random otherwise; online SML over ``QUICK`` must make it copy, which it can only do by
rewarding the turn-2 tokens in their turn-1 context. The tasks are that range's eight, trained
on and evaluated (their prompts are all the same, so only the feedback tells them apart). Built
this way because learning to copy from scratch by reward alone is slow and luck-dependent at
this size: docs/miniature-log.md has the runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from models_gpu.backends import load_generator
from models_gpu.house.corpus import REVEALED_HIGH, REVEALED_LOW, CorpusMix
from models_gpu.house.train import TrainConfig
from models_gpu.spec.miniature import MINIATURE_ONLINE
from models_gpu.spec.online import OnlineConfig
from models_gpu.spec.protocol import ProtocolSpec
from models_gpu.spec.run import RoleSpec
from models_gpu.spec.training import TrainingConfig
from models_gpu.training.miniature import dialogue_jobs, solved_by_turn, split_tasks, task
from models_gpu.types import TaskSpec

TURNS = 2


@dataclass(frozen=True)
class CreditCheckSettings:
    """What one check runs: ``steps`` GRPO steps of two-turn dialogues, then ``heldout_tasks``
    held-out tasks, ``heldout_samples`` dialogues each, played at ``temperature``. The defaults
    are the recipe of docs/miniature-log.md's passing run (turn 2: 17% -> 71% from a base of
    games of up to 4 guesses; from the miniature's own base, seed 0, it did not pass)."""

    steps: int = 150
    learning_rate: float = 3e-4
    heldout_tasks: int = 32
    heldout_samples: int = 4
    temperature: float = 1.0
    online: OnlineConfig = field(
        default_factory=lambda: replace(MINIATURE_ONLINE, horizon=TURNS, gamma=1.0)
    )


# The quick check's base (see the module docstring): 300 steps of games that always copy, then
# 150 that copy a quarter of the time, at TrainConfig's learning-rate schedule.
QUICK_BASE_TRAINING = TrainConfig(
    steps=450, batch_size=16, warmup_steps=20, first_share=2 / 3, replay=0.0,
    first_mix=CorpusMix(revealed_answer=1.0, revealed_copy=1.0),
    mix=CorpusMix(revealed_answer=1.0, revealed_copy=0.25),
)  # fmt: skip
QUICK = CreditCheckSettings(steps=30, heldout_samples=16)  # 8 tasks x 16: 128 dialogues


def quick_tasks() -> list[TaskSpec]:
    """The quick check's tasks: one for each hidden number of the range 1..8."""
    size = REVEALED_HIGH - REVEALED_LOW + 1
    hidden = range(REVEALED_LOW, REVEALED_HIGH + 1)
    return [task(REVEALED_LOW, number, i, size=size) for i, number in enumerate(hidden)]


def build_quick_base(out_dir: Path, *, seed: int = 0) -> Path:
    """The quick check's base checkpoint in ``out_dir`` (about a minute on 2 cores)."""
    from models_gpu.house.build import build_house_model

    return build_house_model(out_dir, seed=seed, train_config=QUICK_BASE_TRAINING, evaluate_tasks=0)


@dataclass(frozen=True)
class CreditCheckResult:
    """Held-out dialogues solved by turn 1 and turn 2, for the base and the trained model."""

    dialogues: int
    base: tuple[int, ...]
    trained: tuple[int, ...]
    train_seconds: float

    def accuracy(self, which: str, turn: int) -> float:
        solved = self.base if which == "base" else self.trained
        return solved[turn - 1] / self.dialogues


def run_credit_check(
    base_model: Path,
    work_dir: Path,
    settings: CreditCheckSettings = CreditCheckSettings(),
    *,
    seed: int = 0,
    tasks: Sequence[TaskSpec] | None = None,
    report: Callable[[str], None] = lambda line: None,
) -> CreditCheckResult:
    """Train ``base_model`` by online SML against the answer-revealing teacher; evaluate both.
    ``tasks``: train and evaluate on these (the quick check's); by default, the miniature's
    training ranges and ``settings.heldout_tasks`` of its held-out ones."""
    import time

    from models_gpu.training.online import play, train_online

    if tasks is None:
        train_tasks, heldout_tasks = split_tasks(seed, settings.heldout_tasks)
    else:
        train_tasks, heldout_tasks = list(tasks), list(tasks)
    teacher = load_generator(RoleSpec("scripted", "answer-revealer"))
    protocol = ProtocolSpec(mode="didactic", max_turns=TURNS)
    jobs = dialogue_jobs(heldout_tasks, settings.heldout_samples, f"{seed}:credit-check")
    params = {"temperature": settings.temperature, "max_new_tokens": 12, "device": "cpu"}

    def evaluate(model_dir: Path) -> tuple[int, ...]:
        student = load_generator(RoleSpec("transformers", str(model_dir), params))
        return solved_by_turn(play(student, jobs, protocol, teacher), TURNS)

    base = evaluate(base_model)
    report(f"base: solved by turn 1, 2: {base} of {len(jobs)}")
    started = time.perf_counter()
    outcome = train_online(
        _training(settings, seed),
        settings.online,
        base_model=base_model,
        tasks=train_tasks,
        protocol=protocol,
        teacher=teacher,
        output_dir=work_dir / f"credit-check-seed{seed}",
    )
    train_seconds = time.perf_counter() - started
    assert outcome.final_dir is not None
    trained = evaluate(Path(outcome.final_dir))
    report(f"trained in {train_seconds:.0f} s: solved by turn 1, 2: {trained} of {len(jobs)}")
    return CreditCheckResult(len(jobs), base, trained, round(train_seconds, 1))


def _training(settings: CreditCheckSettings, seed: int) -> TrainingConfig:
    return TrainingConfig(
        learning_rate=settings.learning_rate, max_steps=settings.steps, seed=seed, device="cpu",
        precision="float32", gradient_checkpointing=False, logging_steps=10,
        save_steps=settings.steps, keep_checkpoints=1, max_length=512, lr_scheduler="constant",
    )  # fmt: skip
