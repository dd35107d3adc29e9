"""A Lost-in-Conversation experiment's metrics, from its three runs' dialogues.

A dialogue's *score* is its best verified attempt's score (1 when solved, 0 with no attempt);
each instruction (task) has ``repeats`` scores per condition. Per condition:

- mean score: over every dialogue, with a 95% bootstrap interval over instructions;
- aptitude: the 90th percentile of an instruction's scores, averaged over instructions;
- unreliability: the 90th minus the 10th percentile, averaged over instructions;

and the drop from FULL to SHARDED, paired by instruction (``comparison.paired_gaps``). Premature
answering: the SHARDED dialogues' mean score against the turn of their first attempt.
Percentiles interpolate linearly between an instruction's sorted scores (numpy's default).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from django.db.models import FloatField, Max, Min, Q
from django.db.models.functions import Coalesce

from webapp.dialogues.models import Dialogue, Turn
from webapp.experiments.models import LostInConversation
from webapp.metrics.comparison import Gap, paired_gaps
from webapp.metrics.stats import (
    MeanEstimate,
    bootstrap_means,
    mean_from_histogram,
    percentile_interval,
)
from webapp.runs.models import Run
from webapp.runs.selectors import counted_whole_dialogues

CONDITIONS = ("FULL", "CONCAT", "SHARDED")


@dataclass(frozen=True)
class ConditionMetrics:
    condition: str
    run: Run
    dialogues: int
    instructions: int
    mean: float | None
    mean_low: float | None
    mean_high: float | None
    aptitude: float | None
    unreliability: float | None


@dataclass(frozen=True)
class FirstAttempt:
    """SHARDED dialogues whose first attempt came at ``turn`` (None: never attempted)."""

    turn: int | None
    score: MeanEstimate


@dataclass(frozen=True)
class LicMetrics:
    conditions: list[ConditionMetrics]
    drop: Gap | None  # SHARDED minus FULL, per instruction: negative is a loss
    premature: list[FirstAttempt]

    @property
    def relative_drop(self) -> float | None:
        """(FULL − SHARDED) / FULL: the paper's "lost" share."""
        full = self.conditions[0].mean
        if self.drop is None or not full:
            return None
        return -self.drop.value / full + 0.0  # + 0.0: no "-0%" when nothing was lost


@dataclass(frozen=True)
class DialogueScore:
    run_id: int
    task_id: int
    score: float
    first_attempt: int | None  # the round of its first answer attempt, None: never attempted


def dialogue_scores(runs: Sequence[Run]) -> list[DialogueScore]:
    """Every counted dialogue's score (solved counts as 1, whatever the verifier's scale) and
    the round of its first attempt: while a run plays, over the dialogues its figures count
    (``webapp.metrics.partial``). Three queries."""
    attempt = Q(turns__role=Turn.Role.STUDENT, turns__kind=Turn.Kind.ATTEMPT)
    rows = (
        Dialogue.objects.filter(counted_whole_dialogues(runs=runs))
        .annotate(
            best=Coalesce(Max("turns__score", filter=attempt), 0.0, output_field=FloatField()),
            first_attempt=Min("turns__round", filter=attempt),
        )
        .values_list("run_id", "task_id", "first_correct_turn", "best", "first_attempt")
        .order_by()
    )
    return [
        DialogueScore(run_id, task_id, 1.0 if solved is not None else float(best), first_attempt)
        for run_id, task_id, solved, best, first_attempt in rows
    ]


def _condition(condition: str, run: Run, by_task: Mapping[int, list[float]]) -> ConditionMetrics:
    if not by_task:
        return ConditionMetrics(condition, run, 0, 0, None, None, None, None, None)
    scores = [score for task_scores in by_task.values() for score in task_scores]
    task_means = np.array([[np.mean(task_scores)] for task_scores in by_task.values()])
    low, high = percentile_interval(bootstrap_means(task_means))
    low, high = low[0], high[0]
    p90 = [float(np.percentile(task_scores, 90)) for task_scores in by_task.values()]
    p10 = [float(np.percentile(task_scores, 10)) for task_scores in by_task.values()]
    return ConditionMetrics(
        condition, run, len(scores), len(by_task), float(np.mean(scores)), float(low), float(high),
        float(np.mean(p90)), float(np.mean(np.subtract(p90, p10))),
    )  # fmt: skip


def _premature(scores: Sequence[DialogueScore]) -> list[FirstAttempt]:
    histograms: dict[int | None, dict[float, int]] = defaultdict(lambda: defaultdict(int))
    for dialogue in scores:
        histograms[dialogue.first_attempt][dialogue.score] += 1
    ordered = sorted(histograms.items(), key=lambda item: (item[0] is None, item[0] or 0))
    return [FirstAttempt(turn, mean_from_histogram(counts)) for turn, counts in ordered]


def lic_metrics(experiment: LostInConversation) -> LicMetrics:
    runs = experiment.runs
    scores = dialogue_scores(list(runs.values()))
    by_run: dict[int, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for dialogue in scores:
        by_run[dialogue.run_id][dialogue.task_id].append(dialogue.score)
    conditions = [
        _condition(condition, run, by_run.get(run.pk, {})) for condition, run in runs.items()
    ]
    # FULL and SHARDED play the same task rows: pair them by task.
    full, sharded = (
        by_run.get(experiment.full_run_id, {}),
        by_run.get(experiment.sharded_run_id, {}),
    )
    common = sorted(full.keys() & sharded.keys())
    drop = None
    if common:
        full_means = np.array([[np.mean(full[task])] for task in common])
        sharded_means = np.array([[np.mean(sharded[task])] for task in common])
        drop = paired_gaps(full_means, sharded_means, unit="instruction")[0]
    sharded_scores = [d for d in scores if d.run_id == experiment.sharded_run_id]
    return LicMetrics(conditions, drop, _premature(sharded_scores))
