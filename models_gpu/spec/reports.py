"""What comes back from the model code, typed once for both sides: a training process's progress
(a step, a held-out evaluation), how a training call ended, what a run spent, and a training
preview. Each record has ``to_json`` / ``from_json``; the web side reads these records, never
the keys of their JSON. The names of the curves the training page draws are defined here too
(``Curve``), and so is what "solved by turn k" counts (``solved_by_turn``), which every figure
of accuracy after turn k is built on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from enum import StrEnum
from typing import Any, Self


def solved_by_turn(first_correct: Mapping[int | None, int], turns: int) -> tuple[int, ...]:
    """How many dialogues were solved by turn k, for k = 1..``turns``, from how many were first
    solved at each turn (None: not solved). A first correct turn past ``turns`` is no solve."""
    counts, solved = [], 0
    for turn in range(1, turns + 1):
        solved += first_correct.get(turn, 0)
        counts.append(solved)
    return tuple(counts)


@dataclass(frozen=True)
class SolvedByTurn:
    """``dialogues`` played, and how many of them were solved by turn k (k = 1..T)."""

    dialogues: int
    solved: tuple[int, ...]

    @classmethod
    def of(cls, first_correct_turns: Iterable[int | None], turns: int) -> SolvedByTurn:
        histogram = Counter(first_correct_turns)
        return cls(sum(histogram.values()), solved_by_turn(histogram, turns))

    @property
    def rates(self) -> tuple[float, ...]:
        return tuple(count / self.dialogues if self.dialogues else 0.0 for count in self.solved)

    def to_json(self) -> dict[str, Any]:
        return {"dialogues": self.dialogues, "solved": list(self.solved)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SolvedByTurn:
        return cls(int(data["dialogues"]), tuple(int(count) for count in data["solved"]))


@dataclass(frozen=True)
class MoveCounts:
    """Feedback use summed over judged moves (``verifiers.feedback_use`` checks each one):
    ``moves`` judged moves of checkable tasks, ``valid`` of them valid; ``later`` of them after
    their dialogue's first move, ``consistent`` of those consistent with the feedback so far;
    the chance levels of the ``chance_counted`` later moves that have one sum to
    ``chance_sum``. Subclasses (one turn's counts) keep their own fields through ``plus``."""

    moves: int = 0
    valid: int = 0
    later: int = 0
    consistent: int = 0
    chance_sum: float = 0.0
    chance_counted: int = 0

    @classmethod
    def of_move(cls, valid: bool, consistent: bool | None, chance: float | None) -> MoveCounts:
        later = consistent is not None
        counted = later and chance is not None
        return cls(
            moves=1, valid=int(valid), later=int(later), consistent=int(bool(consistent)),
            chance_sum=chance if counted and chance is not None else 0.0,
            chance_counted=int(counted),
        )  # fmt: skip

    def plus(self, other: MoveCounts) -> Self:
        """These counts and ``other``'s, summed."""
        return replace(
            self, moves=self.moves + other.moves, valid=self.valid + other.valid,
            later=self.later + other.later, consistent=self.consistent + other.consistent,
            chance_sum=self.chance_sum + other.chance_sum,
            chance_counted=self.chance_counted + other.chance_counted,
        )  # fmt: skip

    def __add__(self, other: MoveCounts) -> Self:
        return self.plus(other)

    @property
    def chance(self) -> float | None:
        """The mean chance level of the later moves (None: none of them has one)."""
        return self.chance_sum / self.chance_counted if self.chance_counted else None


class Curve(StrEnum):
    """The curves a training run records (``MetricPoint.name``), by optimizer step. The ones
    that end in "_" are families, one curve per turn k ("heldout_solved_turn_3")."""

    LOSS = "loss"
    LEARNING_RATE = "learning_rate"
    GRAD_NORM = "grad_norm"
    TOKENS_PER_SECOND = "tokens_per_second"
    KL = "kl"
    REWARD = "reward"
    SOLVED = "solved"
    ROLLOUT_ACCURACY_AFTER_TURN_ = "rollout_turn_"
    ZERO_VARIANCE_GROUPS = "zero_variance_groups"
    STUDENT_TOKENS = "student_tokens"
    QUESTION_RATE = "question_rate"
    ROLLOUT_SECONDS = "rollout_seconds"
    UPDATE_SECONDS = "update_seconds"
    # A held-out evaluation's counts: the accuracy and its interval are computed from them.
    HELDOUT_DIALOGUES = "heldout_dialogues"
    HELDOUT_SOLVED_BY_TURN_ = "heldout_solved_turn_"

    def at(self, turn: int) -> str:
        """The name of this family's curve for turn k."""
        if not self.value.endswith("_"):
            raise ValueError(f"{self.value} is not a family of curves by turn")
        return f"{self.value}{turn}"


def _share(part: float, whole: float) -> float:
    return part / whole if whole else 0.0


# The stage before online training (SFT or Q-priming) records its curves with this prefix.
PRIMING_PREFIX = "priming_"


@dataclass(frozen=True)
class RolloutFigures:
    """What one step's dialogues (``tasks_per_step`` tasks x ``group_size``) say: their mean
    reward, how many were solved by turn k, how many groups had rewards all equal (they teach
    nothing: zero advantage), the student's tokens and questions, and the time spent playing
    them (generation, verification, rewards, layout) and, once known, updating."""

    solved: SolvedByTurn
    mean_reward: float
    groups: int
    zero_variance_groups: int
    student_tokens: int
    student_turns: int
    questions: int
    rollout_seconds: float
    update_seconds: float | None = None

    def curves(self) -> dict[str, float]:
        values: dict[str, float] = {
            Curve.REWARD: self.mean_reward,
            Curve.SOLVED: self.solved.rates[-1] if self.solved.solved else 0.0,
            Curve.ZERO_VARIANCE_GROUPS: _share(self.zero_variance_groups, self.groups),
            Curve.STUDENT_TOKENS: _share(self.student_tokens, self.solved.dialogues),
            Curve.QUESTION_RATE: _share(self.questions, self.student_turns),
            Curve.ROLLOUT_SECONDS: self.rollout_seconds,
        }
        if self.update_seconds is not None:
            values[Curve.UPDATE_SECONDS] = self.update_seconds
        for turn, rate in enumerate(self.solved.rates, start=1):
            values[Curve.ROLLOUT_ACCURACY_AFTER_TURN_.at(turn)] = rate
        return {str(name): float(value) for name, value in values.items()}

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "solved": self.solved.to_json()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RolloutFigures:
        return cls(**{**data, "solved": SolvedByTurn.from_json(data["solved"])})


@dataclass(frozen=True)
class StepReport:
    """One logged optimizer step: TRL's loss, learning rate, gradient norm (and KL when beta >
    0), the trainer's throughput (input tokens per second, padding excluded) and, online, the
    step's rollouts."""

    step: int
    total_steps: int
    loss: float
    epoch: float | None = None
    learning_rate: float | None = None
    grad_norm: float | None = None
    kl: float | None = None
    tokens_per_second: float | None = None
    rollouts: RolloutFigures | None = None

    def curves(self) -> dict[str, float]:
        values = {
            Curve.LOSS: self.loss,
            Curve.LEARNING_RATE: self.learning_rate,
            Curve.GRAD_NORM: self.grad_norm,
            Curve.KL: self.kl,
            Curve.TOKENS_PER_SECOND: self.tokens_per_second,
        }
        curves = {str(name): float(value) for name, value in values.items() if value is not None}
        return {**curves, **(self.rollouts.curves() if self.rollouts else {})}

    def to_json(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["rollouts"] = self.rollouts.to_json() if self.rollouts else None
        return {"kind": "step", **data}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StepReport:
        rollouts = data.get("rollouts")
        values = {key: value for key, value in data.items() if key not in ("kind", "rollouts")}
        return cls(**values, rollouts=RolloutFigures.from_json(rollouts) if rollouts else None)


@dataclass(frozen=True)
class HeldOutReport:
    """A held-out evaluation of the policy as it was at ``step`` (0: before training)."""

    step: int
    solved: SolvedByTurn

    def curves(self) -> dict[str, float]:
        values = {Curve.HELDOUT_DIALOGUES.value: float(self.solved.dialogues)}
        for turn, count in enumerate(self.solved.solved, start=1):
            values[Curve.HELDOUT_SOLVED_BY_TURN_.at(turn)] = float(count)
        return values

    def to_json(self) -> dict[str, Any]:
        return {"kind": "heldout", "step": self.step, "solved": self.solved.to_json()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> HeldOutReport:
        return cls(int(data["step"]), SolvedByTurn.from_json(data["solved"]))


Report = StepReport | HeldOutReport


def report_from_json(data: Mapping[str, Any]) -> Report:
    """A line of a training process's progress file."""
    if data.get("kind") == "heldout":
        return HeldOutReport.from_json(data)
    return StepReport.from_json(data)


@dataclass(frozen=True)
class DatasetStats:
    """What the encoded dataset holds: ``dialogues`` read, ``examples`` kept, ``skipped``
    (no trained token left after truncation), ``truncated`` (cut to max_length, kept),
    ``trained_tokens`` and ``tokens`` over the kept examples (one epoch)."""

    dialogues: int = 0
    examples: int = 0
    skipped: int = 0
    truncated: int = 0
    trained_tokens: int = 0
    tokens: int = 0


@dataclass(frozen=True)
class TrainResult:
    """How a training call ended (fine-tuning on a dataset, or online).

    final_dir: the trained model (None when stopped before the end).
    stopped: a stop request cut training short (resume by training again).
    resumed_from: the checkpoint this call started from, or None.
    global_step / total_steps: optimizer steps taken (across resumes) and planned.
    epoch: epochs done (fractional).
    wall_seconds: this call's time, encoding included.
    dataset: the encoded examples (fine-tuning; trained tokens are per epoch).
    loss_history: (step, loss) of every logged step, across resumes; loss_first / loss_last.
    reward_history: online: (step, mean reward) of every logged step.
    heldout: online: every held-out evaluation.
    """

    final_dir: str | None
    stopped: bool
    resumed_from: str | None
    global_step: int
    total_steps: int
    epoch: float
    wall_seconds: float
    dataset: DatasetStats | None = None
    loss_history: tuple[tuple[int, float], ...] = ()
    loss_first: float | None = None
    loss_last: float | None = None
    reward_history: tuple[tuple[int, float], ...] = ()
    heldout: tuple[HeldOutReport, ...] = ()

    def to_json(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["dataset"] = asdict(self.dataset) if self.dataset else None
        data["loss_history"] = [list(point) for point in self.loss_history]
        data["reward_history"] = [list(point) for point in self.reward_history]
        data["heldout"] = [report.to_json() for report in self.heldout]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TrainResult:
        dataset = data.get("dataset")
        return cls(
            **{key: data[key] for key in ("final_dir", "stopped", "resumed_from")},
            **{key: data[key] for key in ("global_step", "total_steps", "epoch", "wall_seconds")},
            dataset=DatasetStats(**dataset) if dataset else None,
            loss_history=tuple((int(s), float(v)) for s, v in data.get("loss_history", ())),
            loss_first=data.get("loss_first"),
            loss_last=data.get("loss_last"),
            reward_history=tuple((int(s), float(v)) for s, v in data.get("reward_history", ())),
            heldout=tuple(HeldOutReport.from_json(item) for item in data.get("heldout", ())),
        )


@dataclass(frozen=True)
class Accounting:
    """What a run spent, as its worker records it when the run ends; a run that several
    workers played (resumed, or waiting for people in between) adds up their records. Only
    what applies is set (None: not this kind of run)."""

    # Evaluations (``models_gpu.engine.EngineStats``).
    dialogues: int | None = None
    student_generations: int | None = None
    teacher_calls: int | None = None
    user_simulator_calls: int | None = None
    judge_calls: int | None = None
    person_turns: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    # Training.
    optimizer_steps: int | None = None
    examples: int | None = None
    trained_tokens_per_epoch: int | None = None
    priming_steps: int | None = None
    priming_examples: int | None = None
    # Both.
    wall_seconds: float | None = None

    def plus(self, other: Accounting) -> Accounting:
        """Both records added up, field by field (a field set in one only keeps its value)."""
        added = {}
        for item in fields(self):
            mine, theirs = getattr(self, item.name), getattr(other, item.name)
            added[item.name] = theirs if mine is None else mine if theirs is None else mine + theirs
        return Accounting(**added)

    def to_json(self) -> dict[str, Any]:
        return {key: value for key, value in asdict(self).items() if value is not None}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Accounting:
        """``{}`` is nothing recorded; an unknown key is an error, never dropped silently."""
        return cls(**data)

    @property
    def recorded(self) -> bool:
        return self != Accounting()


@dataclass(frozen=True)
class PreviewSegment:
    text: str
    trained: bool


@dataclass(frozen=True)
class PreviewExample:
    """One dialogue as a training method trains on it: its text in segments, each trained or
    context; or why the chat template cannot render it (``error``)."""

    method: str
    segments: tuple[PreviewSegment, ...] = ()
    error: str = ""


@dataclass(frozen=True)
class PreviewResult:
    """A training preview: token counts of the selection (from a sample of ``sampled`` of its
    ``dialogues``, scaled), how many of the sample were truncated or had nothing to train, the
    longest, and the sample's first dialogue as each method trains on it."""

    dialogues: int
    sampled: int
    tokens: int
    trained_tokens: int
    truncated: int
    nothing_to_train: int
    longest: int
    example_dialogue: int
    examples: tuple[PreviewExample, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PreviewResult:
        examples = tuple(
            PreviewExample(
                example["method"],
                tuple(PreviewSegment(**segment) for segment in example["segments"]),
                example["error"],
            )
            for example in data.get("examples", ())
        )
        return replace(cls(**{**data, "examples": ()}), examples=examples)

    def error_for(self, method: str) -> str:
        """Why the chat template cannot render ``method`` ("" when it can)."""
        return next((e.error for e in self.examples if e.method == method), "")
