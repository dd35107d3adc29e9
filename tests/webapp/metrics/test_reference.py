"""The metrics core against a small, obviously correct reference, on random runs (hypothesis).

Each example builds a run in the database as a worker would leave it: T turns, tasks with
several samples, each dialogue solved at a random turn or never, played in batches; the run
succeeded, or is still playing (or was cancelled) part-way through a batch, so the batch in play
has stored its early enders only. The core (the run page's selectors, the runs table's, the
comparison's) must agree with the reference computed from the list of dialogues, and keep the
invariants every figure owes its readers:

- accuracy after turn k equals solved-by-k over the stated denominator, and never decreases in k;
- a partial figure is the final figure of the dialogues it counts (the run played out);
- pass@k is the mean of the per-task estimator, the same tasks for every k, checked against
  drawing every k-subset of a task's samples;
- every interval contains its point estimate;
- a paired difference is the mean of the per-task differences.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from fractions import Fraction
from itertools import combinations
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.django import TestCase

from models_gpu.spec.results import DialogueRow
from models_gpu.spec.run import RunConfig
from tests.factories import ProtocolFactory, TaskFactory, TaskSetFactory, frozen_run
from webapp.metrics.agreement import cohen_kappa, krippendorff_alpha
from webapp.metrics.comparison import TaskOutcomes, compare_outcomes
from webapp.metrics.figures import pass_at_k
from webapp.metrics.partial import BatchInPlay
from webapp.metrics.stats import newcombe_difference, wilson_interval
from webapp.runs import selectors
from webapp.runs.models import Run
from webapp.runs.services import dialogues_store

# --- The reference: plain lists, the definitions as docs/reference/metrics.md states them ---


@dataclass(frozen=True)
class Played:
    """One dialogue of a simulated run: its task, sample, and first correct turn (None: never)."""

    task: int
    sample: int
    first_correct: int | None


def reference_accuracy(counted: list[Played], turns: int, known: int) -> list[Fraction | None]:
    """Solved by turn k over the counted dialogues, for the turns they are known for."""
    return [
        Fraction(sum(d.first_correct is not None and d.first_correct <= k for d in counted),
                 len(counted))
        if counted and k <= known
        else None
        for k in range(1, turns + 1)
    ]  # fmt: skip


def reference_pass_at_k(counted: list[Played], samples: int, turns: int) -> list[float]:
    """pass@k by drawing every k-subset of each task's samples (tasks with all of them)."""
    by_task: dict[int, list[bool]] = {}
    for d in counted:
        by_task.setdefault(d.task, []).append(
            d.first_correct is not None and d.first_correct <= turns
        )
    complete = [solved for solved in by_task.values() if len(solved) >= samples]
    if not complete:
        return []
    curve = []
    for k in range(1, samples + 1):
        per_task = [
            sum(any(draw) for draw in combinations(solved, k)) / math.comb(len(solved), k)
            for solved in complete
        ]
        curve.append(sum(per_task) / len(per_task))
    return curve


@dataclass(frozen=True)
class SimulatedRun:
    turns: int
    samples: int
    batch_size: int
    dialogues: list[Played]  # in the order the worker plays them
    batches_finished: int  # batches played to their end
    cut_at: int  # the turn the batch in play had played (0: none in play)
    succeeded: bool

    @property
    def batches(self) -> list[list[Played]]:
        size = self.batch_size
        return [self.dialogues[i : i + size] for i in range(0, len(self.dialogues), size)]

    @property
    def finished(self) -> list[Played]:
        return [d for batch in self.batches[: self.batches_finished] for d in batch]

    @property
    def in_play(self) -> list[Played]:
        if self.succeeded or not self.cut_at or self.batches_finished >= len(self.batches):
            return []
        return self.batches[self.batches_finished]

    def ended_early(self, dialogue: Played) -> bool:
        """Stored by the batch in play: solved by the turn it had played."""
        return dialogue.first_correct is not None and dialogue.first_correct <= self.cut_at

    @property
    def stored(self) -> list[Played]:
        if self.succeeded:
            return self.dialogues
        return self.finished + [d for d in self.in_play if self.ended_early(d)]

    def counted(self) -> tuple[list[Played], int]:
        """The reference rule: the finished batches, else the batch in play through its turn.
        A batch whose dialogues have all ended is finished, whatever turn it stopped at."""
        if self.succeeded:
            return self.dialogues, self.turns
        if all(self.ended_early(d) for d in self.in_play):
            return self.stored, self.turns
        if self.finished:
            return self.finished, self.turns
        return self.in_play, self.cut_at


@st.composite
def simulated_runs(draw: Any) -> SimulatedRun:
    turns = draw(st.integers(1, 5))
    tasks = draw(st.integers(1, 5))
    samples = draw(st.integers(1, 3))
    solved_at = st.one_of(st.none(), st.integers(1, turns))
    dialogues = [
        Played(task, sample, draw(solved_at)) for task in range(tasks) for sample in range(samples)
    ]
    batch_size = draw(st.integers(1, len(dialogues)))
    batches = math.ceil(len(dialogues) / batch_size)
    succeeded = draw(st.booleans())
    finished = batches if succeeded else draw(st.integers(0, batches))
    cut_at = 0 if succeeded or finished == batches else draw(st.integers(0, turns))
    return SimulatedRun(turns, samples, batch_size, dialogues, finished, cut_at, succeeded)


def store(simulated: SimulatedRun, status: str) -> Run:
    """The run as its worker leaves it: the stored dialogues and the batch in play's record."""
    task_set = TaskSetFactory()
    tasks = [
        TaskFactory(task_set=task_set) for _ in range(1 + max(d.task for d in simulated.dialogues))
    ]
    run = frozen_run(
        task_set=task_set, protocol=ProtocolFactory(max_turns=simulated.turns),
        batch_size=simulated.batch_size,
    )  # fmt: skip
    config = RunConfig.from_json({**run.config, "samples_per_task": simulated.samples})
    rows = [_row(tasks[d.task].pk, d, simulated.turns) for d in simulated.stored]
    # The worker stores a batch's dialogues as they end: finished batches first, then the batch
    # in play's early enders (primary keys follow that order).
    dialogues_store(run_id=run.pk, dialogues=rows)
    in_play = simulated.in_play
    ended = [d for d in in_play if simulated.ended_early(d)]
    batch = BatchInPlay(
        round=simulated.cut_at,
        going=len(in_play) - len(ended),
        ended=len(ended),
    ) if in_play else BatchInPlay()  # fmt: skip
    Run.objects.filter(pk=run.pk).update(
        config=config.to_json(), status=status, batch_in_play=batch.to_json(),
        progress_total=len(simulated.dialogues), progress_done=len(rows),
    )  # fmt: skip
    return Run.objects.get(pk=run.pk)


def _row(task_id: int, dialogue: Played, turns: int) -> DialogueRow:
    played = dialogue.first_correct or turns
    attempts = [
        {
            "index": index, "round": index + 1, "role": "student", "kind": "attempt",
            "text": "x", "is_correct": index + 1 == dialogue.first_correct,
        }
        for index in range(played)
    ]  # fmt: skip
    return DialogueRow.from_json({
        "task_id": task_id, "sample_index": dialogue.sample, "seed": 0,
        "outcome": "solved" if dialogue.first_correct else "unsolved",
        "first_correct_turn": dialogue.first_correct, "num_turns": played,
        "end_reason": "solved" if dialogue.first_correct else "max_turns", "turns": attempts,
    })  # fmt: skip


def as_fractions(curve: list[Any]) -> list[Fraction | None]:
    return [
        None if p.accuracy is None else Fraction(p.accuracy.successes, p.accuracy.total)
        for p in curve
    ]


# DIALAB_PROPERTY_EXAMPLES=1000 explores further than the suite's default.
PROPERTIES = settings(
    max_examples=int(os.environ.get("DIALAB_PROPERTY_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


class CoreAgainstTheReference(TestCase):
    @PROPERTIES
    @given(simulated_runs(), st.sampled_from([Run.Status.RUNNING, Run.Status.CANCELLED]))
    def test_every_figure_of_a_run_is_the_reference_figure(
        self, simulated: SimulatedRun, stopped: str
    ) -> None:
        status = Run.Status.SUCCEEDED if simulated.succeeded else stopped
        run = store(simulated, status)
        metrics = selectors.run_metrics(run=run)
        counted, known = simulated.counted()
        curve = as_fractions(metrics.accuracy_by_turn)
        assert curve == reference_accuracy(counted, simulated.turns, known)
        assert metrics.counted.dialogues == len(counted)
        assert metrics.counted.partial == (not simulated.succeeded)

        rates = [value for value in curve if value is not None]
        assert rates == sorted(rates), "accuracy after turn k never decreases in k"
        for point in metrics.accuracy_by_turn:
            if point.accuracy is not None:
                p = point.accuracy
                assert p.low <= p.rate <= p.high, "an interval holds its point estimate"

        # A partial figure is the final figure of what it counts: a run of exactly those
        # dialogues, played out, shows the same numbers for the turns the partial one knows.
        if counted and not simulated.succeeded:
            alone = replace(simulated, dialogues=counted, batch_size=len(counted), succeeded=True)
            played_out = as_fractions(
                selectors.run_metrics(run=store(alone, Run.Status.SUCCEEDED)).accuracy_by_turn
            )
            assert curve[:known] == played_out[:known]

        if metrics.counted.whole_dialogues:
            expected = reference_pass_at_k(counted, simulated.samples, simulated.turns)
            got = [point.value for point in metrics.pass_at_k]
            assert got == [pytest.approx(value) for value in expected]
            assert got == sorted(got), "pass@k never decreases in k"
            [domain] = metrics.by_domain or [None]
            if domain is not None:
                assert domain.accuracy.total == len(counted), "every figure, one denominator"
        else:
            assert metrics.pass_at_k == [] and metrics.by_domain == []

        summary = selectors.run_summaries(runs=[run])[run.pk]
        assert as_fractions(summary.accuracy_by_turn) == curve, "the runs table agrees"
        largest = metrics.pass_at_k[-1] if metrics.pass_at_k else None
        assert summary.pass_at_k == largest, "its pass@K is the run page's, one sample or many"

    @PROPERTIES
    @given(simulated_runs(), st.data())
    def test_a_paired_difference_is_the_mean_of_the_per_task_differences(
        self, simulated: SimulatedRun, data: Any
    ) -> None:
        played_out = replace(simulated, succeeded=True, batches_finished=len(simulated.batches))
        other_outcomes = [
            replace(
                d, first_correct=data.draw(st.one_of(st.none(), st.integers(1, played_out.turns)))
            )
            for d in played_out.dialogues
        ]
        runs = [
            store(played_out, Run.Status.SUCCEEDED),
            store(replace(played_out, dialogues=other_outcomes), Run.Status.SUCCEEDED),
        ]
        # Different task rows, the same tasks: the factory gives each run's tasks the same
        # prompts in the same order only by chance, so pair them by position here.
        gaps = compare_outcomes(
            *(_by_position(run, played_out.turns) for run in runs), played_out.turns
        )
        for k, gap in enumerate(gaps, start=1):
            per_task = []
            for task in {d.task for d in played_out.dialogues}:
                a = [d for d in played_out.dialogues if d.task == task]
                b = [d for d in other_outcomes if d.task == task]
                solved = [sum(x.first_correct is not None and x.first_correct <= k for x in side)
                          / len(side) for side in (a, b)]  # fmt: skip
                per_task.append(solved[1] - solved[0])
            assert gap.value == pytest.approx(sum(per_task) / len(per_task))
            if gap.has_interval:
                assert gap.low <= gap.value <= gap.high  # type: ignore[operator]
            else:
                assert not gap.informative or gap.note, "no interval says why"


def _by_position(run: Run, turns: int) -> dict[str, TaskOutcomes]:
    outcomes = selectors.task_outcomes(runs=[run])[run.pk]
    return {str(position): outcomes[task] for position, task in enumerate(sorted(outcomes))}


# --- Statistics: intervals hold their estimates; agreement against plain formulas -------------


@given(st.integers(0, 200), st.integers(0, 200))
def test_wilson_and_newcombe_intervals_hold_their_point_estimates(a: int, b: int) -> None:
    first, second = wilson_interval(a // 2, a), wilson_interval(b // 3, b)
    for p in (first, second):
        assert 0 <= p.low <= p.rate <= p.high <= 1
    if a and b:
        difference = newcombe_difference(first, second)
        assert -1 <= difference.low <= difference.value <= difference.high <= 1


@given(st.integers(1, 12), st.integers(0, 12), st.integers(1, 12))
def test_pass_at_k_is_drawing_every_k_subset(n: int, c: int, k: int) -> None:
    c, k = min(c, n), min(k, n)
    draws = list(combinations([True] * c + [False] * (n - c), k))
    assert pass_at_k(n, c, k) == pytest.approx(sum(map(any, draws)) / len(draws))


def reference_kappa(pairs: list[tuple[str, str]]) -> float | None:
    """Cohen's kappa: (p_o - p_e) / (1 - p_e) from the two raters' marginals."""
    n = len(pairs)
    observed = sum(a == b for a, b in pairs) / n
    categories = {value for pair in pairs for value in pair}
    expected = sum(
        (sum(a == c for a, _ in pairs) / n) * (sum(b == c for _, b in pairs) / n)
        for c in categories
    )
    return None if expected == 1 else (observed - expected) / (1 - expected)


@given(st.lists(st.tuples(st.sampled_from("xyz"), st.sampled_from("xyz")), min_size=1, max_size=30))
def test_cohen_kappa_is_the_plain_formula(pairs: list[tuple[str, str]]) -> None:
    expected = reference_kappa(pairs)
    got = cohen_kappa(pairs).value
    assert (got is None) == (expected is None)
    if expected is not None:
        assert got == pytest.approx(expected)


def reference_alpha(data: dict[int, dict[int, str]]) -> float | None:
    """Krippendorff's nominal alpha by the pairable-values formula: 1 - D_o / D_e, over the
    units with two or more values (missing values left out)."""
    units = [list(values.values()) for values in data.values() if len(values) >= 2]
    n = sum(len(values) for values in units)
    if n < 2:
        return None
    disagreeing = sum(
        sum(a != b for i, a in enumerate(values) for j, b in enumerate(values) if i != j)
        / (len(values) - 1)
        for values in units
    )
    counts: dict[str, int] = {}
    for values in units:
        for value in values:
            counts[value] = counts.get(value, 0) + 1
    expected = (n * n - sum(c * c for c in counts.values())) / (n - 1)
    if expected == 0:
        return None
    return 1 - disagreeing / expected


labels = st.dictionaries(
    st.integers(0, 15),
    st.dictionaries(st.integers(0, 4), st.sampled_from("abc"), max_size=5),
    max_size=12,
)


@given(labels)
def test_krippendorff_alpha_with_missing_labels_is_the_plain_formula(
    data: dict[int, dict[int, str]],
) -> None:
    expected = reference_alpha(data)
    got = krippendorff_alpha(data).value
    assert (got is None) == (expected is None), (got, expected)
    if expected is not None:
        assert got == pytest.approx(expected)
