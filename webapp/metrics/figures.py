"""A run's figures, from counts of its dialogues and turns: pure functions and plain records.

The selectors (``webapp.runs.selectors``) count in the database, a fixed number of grouped
queries per run, over the dialogues the figures count (``webapp.metrics.partial``), and hand
the counts to these functions. Definitions (a dialogue is *solved by turn k* when its first
correct attempt is in turn k or earlier; *solved* means solved by the run's max turns T):

- accuracy after turn k: solved by turn k / the counted dialogues, k = 1..T, 95% Wilson
  interval. One denominator for every k, so the curve never decreases.
- single-turn accuracy: accuracy after turn 1.
- pass@k: per task with n counted dialogues of which c are solved, ``1 - C(n-c, k) / C(n, k)``
  (the unbiased estimator of Chen et al., 2021), averaged over the tasks with every one of
  their K samples counted (the same tasks for every k, so it never decreases in k either).
- mean turns to solve: mean first correct turn over solved dialogues (95% percentile bootstrap
  interval, over the dialogues).
- leak rate: teacher turns flagged as stating the answer / teacher turns.
- question rate: student questions / student turns; also the share of dialogues with one.
- premature attempt rate (sharded): attempts made before the last shard was revealed / attempts.
- by domain, by difficulty: each group's accuracy after T and mean turns to solve.
- plasticity: each verified attempt against the student's previous one in its dialogue.
- student turns by kind: per turn k, the share of the student's turns of each kind.
- feedback use (tasks whose feedback can be checked: guess the number, arithmetic, code guess,
  maze; ``models_gpu.verifiers.feedback_use`` checks each judged student move as it is played):
  per turn k, *valid share* = valid moves / judged moves at turn k; *consistent share* = moves
  consistent with every earlier verdict of their dialogue / moves at turn k after the
  dialogue's first (an invalid move counts as not consistent), both 95% Wilson; *chance* = the
  mean, over those later moves where it can be counted, of the share of valid moves that would
  have been consistent there (what a player moving validly at random scores). Each turn's
  moves are those of the dialogues still playing at turn k. A consistent share well above
  chance is feedback used; accuracy alone cannot tell it from a better first guess.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import cast

from models_gpu.spec.reports import Accounting, MoveCounts, solved_by_turn
from webapp.metrics.partial import BatchInPlay, Counted
from webapp.metrics.stats import MeanEstimate, Proportion, wilson_interval


@dataclass(frozen=True)
class TurnAccuracy:
    """Accuracy after turn ``turn``; None when it is not known yet (a batch in play that has
    not played that turn, and no batch finished)."""

    turn: int
    accuracy: Proportion | None


@dataclass(frozen=True)
class AccuracyCurve:
    """Accuracy after turn k for k = 1..T, and which dialogues it is over."""

    points: list[TurnAccuracy]
    counted: Counted

    @property
    def final(self) -> Proportion | None:
        return self.points[-1].accuracy if self.points else None


def accuracy_after_turns(
    *, first_correct_counts: Mapping[int, int], counted: Counted, max_turns: int
) -> list[TurnAccuracy]:
    """Accuracy after turn k for k = 1..``max_turns`` over the ``counted`` dialogues, of which
    ``first_correct_counts[k]`` were first solved at turn k (the others are not solved, or not
    yet: a dialogue of the batch in play that is still going)."""
    # Read at int turns only: Mapping[int, int] will do (a Mapping's key type is invariant).
    solved = solved_by_turn(cast(Mapping[int | None, int], first_correct_counts), max_turns)
    return [
        TurnAccuracy(
            turn,
            wilson_interval(count, counted.dialogues)
            if counted.dialogues and turn <= counted.through_turn
            else None,
        )
        for turn, count in enumerate(solved, start=1)
    ]


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k samples drawn without replacement from n (c of them
    correct) is correct: ``1 - C(n-c, k) / C(n, k)``. Exact integer binomials, so no overflow."""
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got n={n}, k={k}")
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


@dataclass(frozen=True)
class PassAtK:
    k: int
    value: float
    tasks: int  # the tasks the mean is over: those with all their samples counted


def pass_at_k_curve(task_counts: Mapping[tuple[int, int], int], samples: int) -> list[PassAtK]:
    """pass@k for k = 1..``samples`` (the samples per task the run asked for).

    ``task_counts[(n, c)]`` is how many tasks have n counted dialogues of which c are solved.
    The mean is over the tasks with at least ``samples`` of them, the same tasks for every k;
    a partial run's tasks with fewer are left out (``pass_at_k_tasks_left_out``)."""
    eligible = {(n, c): tasks for (n, c), tasks in task_counts.items() if n >= samples}
    tasks = sum(eligible.values())
    if not tasks or samples < 1:
        return []
    return [
        PassAtK(
            k, sum(pass_at_k(n, c, k) * count for (n, c), count in eligible.items()) / tasks, tasks
        )
        for k in range(1, samples + 1)
    ]


def pass_at_k_tasks_left_out(task_counts: Mapping[tuple[int, int], int], samples: int) -> int:
    return sum(tasks for (n, _), tasks in task_counts.items() if n < samples)


@dataclass(frozen=True)
class GroupAccuracy:
    """One row of a breakdown (a task domain or difficulty): accuracy and mean turns to solve."""

    group: str
    accuracy: Proportion
    mean_turns_to_solve: float | None


def group_accuracy(*, group: str, total: int, solved: int, solved_turns_sum: int) -> GroupAccuracy:
    mean_turns = solved_turns_sum / solved if solved else None
    return GroupAccuracy(group, wilson_interval(solved, total), mean_turns)


@dataclass(frozen=True)
class TurnCounts:
    """Counts over the counted dialogues' turns (one aggregate query); the ``stored_`` counts
    and the token sums are over every stored turn: what the run spent, counted or not."""

    student_turns: int = 0
    attempts: int = 0
    questions: int = 0
    dialogues_with_questions: int = 0
    teacher_turns: int = 0
    leaks: int = 0
    premature_attempts: int = 0
    attempts_after_shards: int = 0  # attempts in sharded dialogues (denominator of premature)
    stored_student_turns: int = 0
    stored_teacher_turns: int = 0
    student_prompt_tokens: int = 0
    student_completion_tokens: int = 0
    teacher_prompt_tokens: int = 0
    teacher_completion_tokens: int = 0


@dataclass(frozen=True)
class PlasticityStep:
    """What the student's next attempt did with its previous answer, after teacher turn k (the
    turn between attempt k and attempt k + 1): a correct answer lost, a wrong one fixed."""

    after_turn: int
    previously_correct: int
    lost: int
    previously_wrong: int
    fixed: int

    @property
    def lost_rate(self) -> Proportion:
        return wilson_interval(self.lost, self.previously_correct)

    @property
    def fixed_rate(self) -> Proportion:
        return wilson_interval(self.fixed, self.previously_wrong)


@dataclass(frozen=True)
class TurnKinds:
    """How the student's turns at one turn k split into kinds (attempt, question, other)."""

    turn: int
    counts: Mapping[str, int]

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def share(self, kind: str) -> float:
        return self.counts.get(kind, 0) / self.total if self.total else 0.0

    @property
    def shares(self) -> list[tuple[str, int, float]]:
        """(kind, count, share), most frequent first."""
        ordered = sorted(self.counts.items(), key=lambda item: (-item[1], item[0]))
        return [(kind, count, self.share(kind)) for kind, count in ordered]


@dataclass(frozen=True, kw_only=True)
class FeedbackUseTurn(MoveCounts):
    """Feedback use at turn k (module docstring): the counts of the moves made at that turn."""

    turn: int

    @property
    def valid_share(self) -> Proportion:
        return wilson_interval(self.valid, self.moves)

    @property
    def consistent_share(self) -> Proportion:
        return wilson_interval(self.consistent, self.later)


def pooled_feedback_use(by_run: Sequence[Sequence[FeedbackUseTurn]]) -> list[FeedbackUseTurn]:
    """Several runs' feedback use as one (a line of several seeds): each turn's moves pooled."""
    pooled: dict[int, FeedbackUseTurn] = {}
    for turns in by_run:
        for point in turns:
            before = pooled.get(point.turn)
            pooled[point.turn] = point if before is None else before.plus(point)
    return [pooled[turn] for turn in sorted(pooled)]


@dataclass(frozen=True)
class FeedbackUseRow:
    """One run's (or line's) row of a table of consistent shares: its feedback use at each of
    the table's turns (None: no move after a dialogue's first there); ``recorded``: it has
    checked moves at all."""

    cells: list[FeedbackUseTurn | None]
    recorded: bool


def feedback_use_table(
    rows: Sequence[Sequence[FeedbackUseTurn]],
) -> tuple[list[int], list[FeedbackUseRow]]:
    """Several runs' feedback use side by side, at the turns where some of them has a move
    after a dialogue's first (where consistency is defined); no turns and no rows when none
    has one."""
    turns = sorted({point.turn for points in rows for point in points if point.later})
    if not turns:
        return [], []
    table = []
    for points in rows:
        later = {point.turn: point for point in points if point.later}
        table.append(FeedbackUseRow([later.get(turn) for turn in turns], recorded=bool(points)))
    return turns, table


class HeadlineFigures:
    """The figures the run page and the runs table both show, from a curve and turn counts."""

    accuracy_by_turn: list[TurnAccuracy]
    turn_counts: TurnCounts
    counted: Counted

    @property
    def single_turn_accuracy(self) -> Proportion | None:
        return self.accuracy_by_turn[0].accuracy if self.accuracy_by_turn else None

    @property
    def final_accuracy(self) -> Proportion | None:
        """Accuracy after T; None while the counted dialogues have not played to T."""
        return self.accuracy_by_turn[-1].accuracy if self.accuracy_by_turn else None

    @property
    def partial(self) -> bool:
        return self.counted.partial

    @property
    def leak_rate(self) -> Proportion:
        return wilson_interval(self.turn_counts.leaks, self.turn_counts.teacher_turns)

    @property
    def question_rate(self) -> Proportion:
        """Questions per student turn."""
        return wilson_interval(self.turn_counts.questions, self.turn_counts.student_turns)


@dataclass(frozen=True)
class RunMetrics(HeadlineFigures):
    """Everything the run page shows and the CSV exports, for one run, over its counted
    dialogues (``counted``; the figures needing whole dialogues are empty while only the batch
    in play is counted)."""

    max_turns: int
    sharded: bool
    counted: Counted
    accuracy_by_turn: list[TurnAccuracy]
    turns_to_solve: MeanEstimate
    pass_at_k: list[PassAtK]
    turn_counts: TurnCounts
    pass_at_k_tasks_left_out: int = 0
    by_domain: list[GroupAccuracy] = field(default_factory=list)
    by_difficulty: list[GroupAccuracy] = field(default_factory=list)
    accounting: Accounting = field(default_factory=Accounting)
    batch: BatchInPlay = field(default_factory=BatchInPlay)
    plasticity: list[PlasticityStep] = field(default_factory=list)
    student_turn_kinds: list[TurnKinds] = field(default_factory=list)
    feedback_use: list[FeedbackUseTurn] = field(default_factory=list)  # none: no checked moves

    @property
    def dialogues(self) -> int:
        """The denominator of every accuracy on the page."""
        return self.counted.dialogues

    @property
    def dialogues_with_questions(self) -> Proportion:
        """Share of the counted dialogues in which the student asked at least one question."""
        return wilson_interval(self.turn_counts.dialogues_with_questions, self.counted.dialogues)

    @property
    def premature_attempt_rate(self) -> Proportion:
        counts = self.turn_counts
        return wilson_interval(counts.premature_attempts, counts.attempts_after_shards)

    @property
    def shows_questions(self) -> bool:
        return self.sharded or self.turn_counts.questions > 0


@dataclass(frozen=True)
class AccountingRow:
    label: str
    value: float | int | None
    unit: str = ""


@dataclass(frozen=True)
class Spent:
    """What a run spent: the worker's record once the run has ended (it includes generations
    of dialogues a cancel cut short); until then, counted from the stored turns, one student
    turn being one student generation and one teacher turn one teacher call."""

    student_generations: int | None
    teacher_calls: int | None
    prompt_tokens: int | None
    completion_tokens: int | None
    wall_seconds: float | None
    recorded: bool  # the worker's own record

    @property
    def tokens(self) -> int | None:
        if self.prompt_tokens is None and self.completion_tokens is None:
            return None
        return (self.prompt_tokens or 0) + (self.completion_tokens or 0)


def spent(accounting: Accounting, counts: TurnCounts, *, elapsed_seconds: float | None) -> Spent:
    if accounting.recorded:
        wall = elapsed_seconds if accounting.wall_seconds is None else accounting.wall_seconds
        return Spent(
            accounting.student_generations,
            accounting.teacher_calls,
            accounting.prompt_tokens,
            accounting.completion_tokens,
            None if wall is None else float(wall),
            recorded=True,
        )
    return Spent(
        counts.stored_student_turns,
        counts.stored_teacher_turns,
        counts.student_prompt_tokens + counts.teacher_prompt_tokens,
        counts.student_completion_tokens + counts.teacher_completion_tokens,
        elapsed_seconds,
        recorded=False,
    )


def accounting_rows(
    accounting: Accounting, counts: TurnCounts, *, elapsed_seconds: float | None
) -> tuple[list[AccountingRow], bool]:
    """What the run spent (``spent``) as the page lists it, and whether it is the worker's own
    record."""
    totals = spent(accounting, counts, elapsed_seconds=elapsed_seconds)
    wall = totals.wall_seconds
    rows = [
        AccountingRow("student generations", totals.student_generations),
        AccountingRow("teacher calls", totals.teacher_calls),
        AccountingRow("prompt tokens", totals.prompt_tokens),
        AccountingRow("completion tokens", totals.completion_tokens),
        AccountingRow("wall time", None if wall is None else round(wall, 1), "s"),
    ]
    return rows, totals.recorded


@dataclass(frozen=True)
class RunSummary(HeadlineFigures):
    """A run's row in the runs table: the headline figures of ``RunMetrics`` and what it spent,
    counted for many runs at once."""

    max_turns: int
    counted: Counted
    accuracy_by_turn: list[TurnAccuracy]
    pass_at_k: PassAtK | None  # at k = the samples per task (pass@1 for one)
    turn_counts: TurnCounts
    spent: Spent
