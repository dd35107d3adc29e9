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
any checkpoint and prints the reward curve; the test suite checks the environment
(tests/models_gpu/training/test_credit_check.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from models_gpu.backends import load_generator
from models_gpu.spec.miniature import MINIATURE_ONLINE
from models_gpu.spec.online import OnlineConfig
from models_gpu.spec.protocol import ProtocolSpec
from models_gpu.spec.run import RoleSpec
from models_gpu.spec.training import TrainingConfig
from models_gpu.training.miniature import dialogue_jobs, solved_by_turn, split_tasks

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
    report: Callable[[str], None] = lambda line: None,
) -> CreditCheckResult:
    """Train ``base_model`` by online SML against the answer-revealing teacher; evaluate both."""
    import time

    from models_gpu.training.online import play, train_online

    train_tasks, heldout_tasks = split_tasks(seed, settings.heldout_tasks)
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
