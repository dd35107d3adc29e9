"""Run metrics computed from stored dialogues.

Pure functions and plain data only: the selectors count in the database (a fixed number of
grouped queries per run) and hand the counts to these functions, which do the arithmetic.

Definitions (a dialogue is *solved by turn k* when its first correct attempt is in round <= k;
*solved* means solved by the run's max turns T):

- accuracy after turn k: solved by turn k / dialogues played to turn k, k = 1..T, 95% Wilson
  interval. Once a run has ended that is every stored dialogue. While it plays, the worker's batch
  in play (``BatchInPlay``) counts too: its dialogues still going count as unsolved for every turn
  they have played, and for a turn the batch has not reached none of its dialogues count, since
  the ones that ended early, the solved ones first, would be the only ones counted.
- single-turn accuracy: accuracy after turn 1.
- pass@k: per task with n samples of which c are solved, ``1 - C(n-c, k) / C(n, k)`` (the
  unbiased estimator of Chen et al., 2021), averaged over the tasks with n >= k (the selector
  passes only the tasks whose samples have all ended).
- mean turns to solve: mean first-correct round over solved dialogues (normal 95% interval).
- leak rate: teacher turns flagged as stating the answer / teacher turns.
- question rate: student questions / student turns; also the share of dialogues with a question.
- premature attempt rate (sharded): attempts made before the last shard was revealed / attempts.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

Z_95 = 1.959963984540054


@dataclass(frozen=True)
class Proportion:
    successes: int
    total: int
    low: float
    high: float

    @property
    def rate(self) -> float:
        return self.successes / self.total if self.total else 0.0

    # Percentages for templates, which cannot multiply.
    @property
    def percent(self) -> float:
        return 100 * self.rate

    @property
    def low_percent(self) -> float:
        return 100 * self.low

    @property
    def high_percent(self) -> float:
        return 100 * self.high


def wilson_interval(successes: int, total: int, z: float = Z_95) -> Proportion:
    """Wilson score interval: well-behaved at 0%, 100% and small n, unlike the normal one."""
    if total == 0:
        return Proportion(0, 0, 0.0, 0.0)
    if not 0 <= successes <= total:
        raise ValueError(f"successes must be between 0 and total ({total}), got {successes}")
    p = successes / total
    denominator = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denominator
    margin = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denominator
    return Proportion(successes, total, max(0.0, centre - margin), min(1.0, centre + margin))


@dataclass(frozen=True)
class Difference:
    """A difference ``b - a`` (of two proportions, or a mean of paired ones), with a 95%
    interval; in percentage points for templates."""

    value: float
    low: float
    high: float

    @property
    def points(self) -> float:
        return 100 * self.value

    @property
    def low_points(self) -> float:
        return 100 * self.low

    @property
    def high_points(self) -> float:
        return 100 * self.high


def difference_interval(a: Proportion, b: Proportion) -> Difference:
    """``b.rate - a.rate`` with Newcombe's hybrid score interval (independent samples), built
    from the two Wilson intervals: sound at 0% and 100% where the normal one is not."""
    d = b.rate - a.rate
    low = d - math.sqrt((b.rate - b.low) ** 2 + (a.high - a.rate) ** 2)
    high = d + math.sqrt((b.high - b.rate) ** 2 + (a.rate - a.low) ** 2)
    return Difference(d, max(-1.0, low), min(1.0, high))


@dataclass(frozen=True)
class TurnAccuracy:
    turn: int
    accuracy: Proportion


@dataclass(frozen=True)
class BatchInPlay:
    """The batch of dialogues the worker is playing, after its latest round.

    The engine plays a run's dialogues in batches, every dialogue of a batch one round at a time,
    and stores each as it ends. The worker writes this after every round (``Run.batch_in_play``),
    in the transaction that stores the dialogues ending in it, and a resumed worker's first round
    replaces it (its batch replays its dialogues from the start). ``going`` is how many dialogues
    of the batch played every round up to ``round`` and go on; ``ended`` how many ended (and
    were stored), ``solved_at`` those solved by their first correct round.
    """

    round: int = 0
    going: int = 0
    ended: int = 0
    solved_at: Mapping[int, int] = field(default_factory=dict)

    def after_round(
        self, round_number: int, going: int, first_correct_turns: Sequence[int | None]
    ) -> BatchInPlay:
        """This batch after ``round_number`` (a new batch's when it is 1), in which dialogues with
        these first correct rounds (None: unsolved) ended and ``going`` went on."""
        before = self if round_number > 1 else BatchInPlay()
        solved_at = Counter(before.solved_at)
        solved_at.update(turn for turn in first_correct_turns if turn is not None)
        ended = before.ended + len(first_correct_turns)
        return BatchInPlay(round_number, going, ended, dict(solved_at))

    def to_json(self) -> dict[str, Any]:
        solved_at = {str(turn): n for turn, n in self.solved_at.items()}  # JSON keys are text
        return {
            "round": self.round,
            "going": self.going,
            "ended": self.ended,
            "solved_at": solved_at,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BatchInPlay:
        """``{}`` (nothing played yet) is the empty batch, which changes no count."""
        solved_at = {int(turn): n for turn, n in data.get("solved_at", {}).items()}
        return cls(data.get("round", 0), data.get("going", 0), data.get("ended", 0), solved_at)


def cumulative_accuracy(
    *,
    first_correct_counts: Mapping[int, int],
    total: int,
    max_turns: int,
    batch: BatchInPlay | None = None,
) -> list[TurnAccuracy]:
    """Accuracy after turn k (solved by turn k over the dialogues played to turn k) for
    k = 1..max_turns.

    ``first_correct_counts[k]`` is how many stored dialogues were first solved at turn k;
    ``total`` counts every stored dialogue, solved or not. A ``batch`` with dialogues going
    counts as the module docstring says; one with none going is played out and changes nothing.
    """
    batch = batch or BatchInPlay()
    curve = []
    solved = 0
    batch_solved = 0
    for turn in range(1, max_turns + 1):
        solved += first_correct_counts.get(turn, 0)
        batch_solved += batch.solved_at.get(turn, 0)
        if not batch.going:
            counted = wilson_interval(solved, total)
        elif turn <= batch.round:
            counted = wilson_interval(solved, total + batch.going)
        else:
            counted = wilson_interval(solved - batch_solved, total - batch.ended)
        curve.append(TurnAccuracy(turn, counted))
    return curve


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
    tasks: int  # tasks with at least k stored samples, which the mean is over


def pass_at_k_curve(task_counts: Mapping[tuple[int, int], int]) -> list[PassAtK]:
    """pass@k for k = 1..(most samples any task has).

    ``task_counts[(n, c)]`` is how many tasks have n stored samples of which c are solved. While
    a run is going, tasks can have fewer samples than asked for: pass@k averages over the tasks
    that have at least k.
    """
    largest = max((n for n, _ in task_counts), default=0)
    curve = []
    for k in range(1, largest + 1):
        eligible = {(n, c): tasks for (n, c), tasks in task_counts.items() if n >= k}
        tasks = sum(eligible.values())
        total = sum(pass_at_k(n, c, k) * count for (n, c), count in eligible.items())
        curve.append(PassAtK(k, total / tasks, tasks))
    return curve


@dataclass(frozen=True)
class MeanEstimate:
    """A sample mean with a normal-approximation 95% interval (None below two observations)."""

    mean: float | None
    count: int
    low: float | None = None
    high: float | None = None


def mean_from_histogram(counts: Mapping[int, int], z: float = Z_95) -> MeanEstimate:
    """Mean of values given as ``{value: how many}``, e.g. first-correct rounds of solved
    dialogues, with mean ± z·s/√n (s the sample standard deviation)."""
    count = sum(counts.values())
    if count == 0:
        return MeanEstimate(None, 0)
    mean = sum(value * n for value, n in counts.items()) / count
    if count < 2:
        return MeanEstimate(mean, count)
    variance = sum(n * (value - mean) ** 2 for value, n in counts.items()) / (count - 1)
    margin = z * math.sqrt(variance / count)
    return MeanEstimate(mean, count, mean - margin, mean + margin)


# Two-sided 95% quantiles of Student's t for 1..30 degrees of freedom; beyond, the normal's.
T_95 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t_quantile_95(degrees_of_freedom: int) -> float:
    if degrees_of_freedom < 1:
        raise ValueError("need at least one degree of freedom")
    return T_95[degrees_of_freedom - 1] if degrees_of_freedom <= len(T_95) else Z_95


def mean_across(values: Sequence[float]) -> MeanEstimate:
    """The mean of a few independent repeats (a run's seeds) with a 95% Student t interval:
    with 3 seeds the interval is mean ± 4.3·s/√3, wide, as 3 repeats warrant."""
    count = len(values)
    if count == 0:
        return MeanEstimate(None, 0)
    mean = sum(values) / count
    if count < 2:
        return MeanEstimate(mean, count)
    variance = sum((value - mean) ** 2 for value in values) / (count - 1)
    margin = t_quantile_95(count - 1) * math.sqrt(variance / count)
    return MeanEstimate(mean, count, mean - margin, mean + margin)


def mean_rate_across(rates: Sequence[float]) -> MeanEstimate:
    """``mean_across`` for rates (accuracies of seeds): the interval clipped to 0–100%, which a
    t interval over a few seeds can overshoot."""
    estimate = mean_across(rates)
    if estimate.low is None or estimate.high is None:
        return estimate
    return replace(estimate, low=max(0.0, estimate.low), high=min(1.0, estimate.high))


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
    """Counts over a run's stored turns (one aggregate query)."""

    student_turns: int = 0
    attempts: int = 0
    questions: int = 0
    dialogues_with_questions: int = 0
    teacher_turns: int = 0
    leaks: int = 0
    premature_attempts: int = 0
    attempts_after_shards: int = 0  # attempts in sharded dialogues (denominator of premature)
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
    """How the student's turns at one round split into kinds (attempt, question, other)."""

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


class HeadlineFigures:
    """The figures the run page and the runs table both show, from a curve and turn counts."""

    accuracy_by_turn: list[TurnAccuracy]
    turn_counts: TurnCounts

    @property
    def single_turn_accuracy(self) -> Proportion | None:
        return self.accuracy_by_turn[0].accuracy if self.accuracy_by_turn else None

    @property
    def final_accuracy(self) -> Proportion | None:
        return self.accuracy_by_turn[-1].accuracy if self.accuracy_by_turn else None

    @property
    def leak_rate(self) -> Proportion:
        return wilson_interval(self.turn_counts.leaks, self.turn_counts.teacher_turns)

    @property
    def question_rate(self) -> Proportion:
        """Questions per student turn."""
        return wilson_interval(self.turn_counts.questions, self.turn_counts.student_turns)


@dataclass(frozen=True)
class RunMetrics(HeadlineFigures):
    """Everything the run page shows and the CSV exports, for one run."""

    max_turns: int
    sharded: bool
    dialogues: int
    accuracy_by_turn: list[TurnAccuracy]
    turns_to_solve: MeanEstimate
    pass_at_k: list[PassAtK]
    turn_counts: TurnCounts
    by_domain: list[GroupAccuracy] = field(default_factory=list)
    by_difficulty: list[GroupAccuracy] = field(default_factory=list)
    accounting: Mapping[str, Any] = field(default_factory=dict)
    provisional: bool = False  # Run.is_provisional: figures from the dialogues played so far
    batch: BatchInPlay = field(default_factory=BatchInPlay)
    plasticity: list[PlasticityStep] = field(default_factory=list)
    student_turn_kinds: list[TurnKinds] = field(default_factory=list)

    @property
    def played(self) -> int:
        """Dialogues that played at least one round: the stored ones and the batch's going."""
        return self.dialogues + self.batch.going

    @property
    def dialogues_with_questions(self) -> Proportion:
        """Share of dialogues in which the student asked at least one question."""
        return wilson_interval(self.turn_counts.dialogues_with_questions, self.dialogues)

    @property
    def premature_attempt_rate(self) -> Proportion:
        counts = self.turn_counts
        return wilson_interval(counts.premature_attempts, counts.attempts_after_shards)

    @property
    def shows_questions(self) -> bool:
        return self.sharded or self.turn_counts.questions > 0


CSV_COLUMNS = ("metric", "k", "group", "value", "low", "high", "successes", "n")


def _proportion_row(
    metric: str, p: Proportion, *, k: int | None = None, group: str = ""
) -> dict[str, Any]:
    return {
        "metric": metric, "k": k, "group": group, "value": p.rate if p.total else None,
        "low": p.low if p.total else None, "high": p.high if p.total else None,
        "successes": p.successes, "n": p.total,
    }  # fmt: skip


def metric_rows(metrics: RunMetrics) -> Iterable[dict[str, Any]]:
    """The tidy long form of a run's metrics: one row per number, columns CSV_COLUMNS.

    Empty cells mean "not applicable" (no interval for pass@k, no k for a rate)."""
    yield {"metric": "provisional", "value": int(metrics.provisional)}
    for point in metrics.accuracy_by_turn:
        yield _proportion_row("accuracy_after_turn", point.accuracy, k=point.turn)
    if metrics.single_turn_accuracy is not None:
        yield _proportion_row("single_turn_accuracy", metrics.single_turn_accuracy, k=1)
    for estimate in metrics.pass_at_k:
        yield {"metric": "pass_at_k", "k": estimate.k, "value": estimate.value, "n": estimate.tasks}
    turns = metrics.turns_to_solve
    yield {
        "metric": "mean_turns_to_solve", "value": turns.mean, "low": turns.low,
        "high": turns.high, "n": turns.count,
    }  # fmt: skip
    yield _proportion_row("leak_rate", metrics.leak_rate)
    if metrics.shows_questions:
        yield _proportion_row("question_rate_per_student_turn", metrics.question_rate)
        yield _proportion_row("dialogues_with_a_question", metrics.dialogues_with_questions)
    if metrics.sharded:
        yield _proportion_row("premature_attempt_rate", metrics.premature_attempt_rate)
    for name, groups in (("domain", metrics.by_domain), ("difficulty", metrics.by_difficulty)):
        for row in groups:
            yield _proportion_row(f"accuracy_by_{name}", row.accuracy, group=row.group)
            yield {
                "metric": f"mean_turns_to_solve_by_{name}", "group": row.group,
                "value": row.mean_turns_to_solve, "n": row.accuracy.successes,
            }  # fmt: skip
    for step in metrics.plasticity:
        yield _proportion_row(
            "correct_answer_lost_after_teacher_turn", step.lost_rate, k=step.after_turn
        )
        yield _proportion_row(
            "wrong_answer_fixed_after_teacher_turn", step.fixed_rate, k=step.after_turn
        )
    for kinds in metrics.student_turn_kinds:
        for kind, count in sorted(kinds.counts.items()):
            yield _proportion_row(
                "student_turn_kind", wilson_interval(count, kinds.total), k=kinds.turn, group=kind
            )
    for key, value in metrics.accounting.items():
        yield {"metric": "accounting", "group": key, "value": value}


def csv_cells(row: Mapping[str, Any], columns: Sequence[str] = CSV_COLUMNS) -> list[str]:
    """One CSV line: floats rounded to 6 decimals, empty cells for missing values."""
    cells = []
    for column in columns:
        value = row.get(column)
        if value is None:
            cells.append("")
        elif isinstance(value, float):
            cells.append(str(round(value, 6)))
        else:
            cells.append(str(value))
    return cells


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


def spent(
    accounting: Mapping[str, Any], counts: TurnCounts, *, elapsed_seconds: float | None
) -> Spent:
    if accounting:
        wall = accounting.get("wall_seconds", elapsed_seconds)
        return Spent(
            accounting.get("student_generations"),
            accounting.get("teacher_calls"),
            accounting.get("prompt_tokens"),
            accounting.get("completion_tokens"),
            None if wall is None else float(wall),
            recorded=True,
        )
    return Spent(
        counts.student_turns,
        counts.teacher_turns,
        counts.student_prompt_tokens + counts.teacher_prompt_tokens,
        counts.student_completion_tokens + counts.teacher_completion_tokens,
        elapsed_seconds,
        recorded=False,
    )


def accounting_rows(
    accounting: Mapping[str, Any], counts: TurnCounts, *, elapsed_seconds: float | None
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
    accuracy_by_turn: list[TurnAccuracy]
    pass_at_k: PassAtK | None  # at k = the samples per task, for runs with more than one
    turn_counts: TurnCounts
    spent: Spent
    provisional: bool
