"""Comparing evaluation runs: their accuracy-after-turn-k curves, each line's difference from a
baseline with paired statistics over tasks, and what differs in their configurations.

A *line* is one run, or (``by_seed``) the runs whose configurations differ only in the seed:
then each point is the mean over seeds with a 95% Student t interval across seeds, as papers
report repeated runs. Differences from the baseline pair tasks: a task is the same task in two
runs when its prompt and reference are the same, so runs on different versions of a task set
are compared on the tasks they share (and the page says how many).
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.db.models import Count

from models_gpu.spec.training_run import TrainingRunConfig
from webapp.dialogues.models import Dialogue
from webapp.models_registry.models import ModelSpec
from webapp.runs.config_view import NOT_SET, flatten
from webapp.runs.metrics import TurnAccuracy, mean_rate_across
from webapp.runs.models import Run
from webapp.runs.paired import PairedGap, paired_gaps
from webapp.runs.selectors import run_list, runs_accuracy_by_turn
from webapp.tasks.models import Task

MAX_RUNS = 30  # a comparison of more lines than this is unreadable, and slow to test


@dataclass(frozen=True)
class CurvePoint:
    turn: int
    value: float | None
    low: float | None
    high: float | None
    n: int  # dialogues (one run) or seeds (a line of several)


@dataclass(frozen=True)
class Line:
    key: str
    label: str
    runs: list[Run]
    max_turns: int
    points: list[CurvePoint]
    # The most student turns its student was trained to (online training), None otherwise.
    training_horizon: int | None = None

    @property
    def seeds(self) -> list[int]:
        return [run.frozen_config.seed for run in self.runs]

    @property
    def provisional(self) -> bool:
        return any(run.is_provisional for run in self.runs)

    @property
    def interval_name(self) -> str:
        if len(self.runs) > 1:
            return f"95% t interval over {len(self.runs)} seeds"
        return "95% Wilson interval over dialogues"


@dataclass(frozen=True)
class LineGap:
    """A line's difference from the baseline, turn by turn, over the tasks both played."""

    line: Line
    gaps: list[PairedGap]

    @property
    def final(self) -> PairedGap | None:
        return self.gaps[-1] if self.gaps else None


@dataclass(frozen=True)
class Comparison:
    lines: list[Line]
    baseline: Line
    gaps: list[LineGap]
    config_diff: list[tuple[str, list[str]]]
    notes: list[str] = field(default_factory=list)


def selected_runs(run_ids: Iterable[int]) -> list[Run]:
    """The evaluation runs among these ids, oldest first: lines come in the order of their
    first run, and the first line is the default baseline (usually the base model)."""
    ids = list(dict.fromkeys(run_ids))[:MAX_RUNS]
    return list(run_list().filter(pk__in=ids, kind=Run.Kind.EVAL).order_by("created_at", "pk"))


def _point(accuracy: TurnAccuracy) -> CurvePoint:
    p = accuracy.accuracy
    if not p.total:
        return CurvePoint(accuracy.turn, None, None, None, 0)
    return CurvePoint(accuracy.turn, p.rate, p.low, p.high, p.total)


def _seed_points(curves: Sequence[list[TurnAccuracy]], max_turns: int) -> list[CurvePoint]:
    points = []
    for turn in range(1, max_turns + 1):
        rates = [
            curve[turn - 1].accuracy.rate for curve in curves if curve[turn - 1].accuracy.total
        ]
        estimate = mean_rate_across(rates)
        points.append(CurvePoint(turn, estimate.mean, estimate.low, estimate.high, len(rates)))
    return points


def _training_horizons(runs: Sequence[Run]) -> dict[int, int]:
    """``{student model id: training horizon}`` for students trained online: the most student
    turns a training dialogue had (the horizon, capped by the rollout protocol's max turns)."""
    students = ModelSpec.objects.filter(
        pk__in={run.student_id for run in runs}, trained_by_run__isnull=False
    ).select_related("trained_by_run")
    horizons = {}
    for student in students:
        config = TrainingRunConfig.from_json(student.trained_by_run.config)  # type: ignore[union-attr]
        if config.online is not None and config.rollouts is not None:
            ceiling = config.rollouts.protocol.max_turns
            horizons[student.pk] = min(config.online.horizon, ceiling)
    return horizons


def lines_of(runs: Sequence[Run], *, by_seed: bool) -> list[Line]:
    """The runs as lines, in the order of each line's first run."""
    members: dict[str, list[Run]] = {}
    for run in runs:
        key = f"seeds-{run.frozen_config.seed_group_hash()[:12]}" if by_seed else f"run-{run.pk}"
        members.setdefault(key, []).append(run)
    curves = runs_accuracy_by_turn(runs=runs)
    horizons = _training_horizons(runs)
    lines = []
    for key, group in members.items():
        first = group[0]
        max_turns = first.frozen_config.protocol.max_turns
        if len(group) == 1:
            label = f"#{first.pk} {first.name}"
            points = [_point(point) for point in curves[first.pk]]
        else:
            config = first.frozen_config
            label = f"{config.student.name} · {config.protocol.name} ({len(group)} seeds)"
            points = _seed_points([curves[run.pk] for run in group], max_turns)
        lines.append(
            Line(key, label, group, max_turns, points, horizons.get(first.student_id))
        )  # fmt: skip
    return lines


def task_key(prompt: str, reference: Any) -> str:
    """Which task this is, whatever task set version holds it: its prompt and reference."""
    canonical = json.dumps([prompt, reference], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _solved_rates(lines: Sequence[Line]) -> dict[str, dict[str, np.ndarray]]:
    """``{line key: {task key: solved rate by turn k, k = 1..T}}``: each task's share of the
    line's dialogues (samples and seeds together) solved by turn k. Two queries."""
    run_line = {run.pk: line for line in lines for run in line.runs}
    rows = list(
        Dialogue.objects.filter(run_id__in=run_line)
        .values("run_id", "task_id", "first_correct_turn")
        .annotate(n=Count("id"))
        .order_by()
    )
    tasks = Task.objects.filter(pk__in={row["task_id"] for row in rows})
    keys = {
        pk: task_key(prompt, ref)
        for pk, prompt, ref in tasks.values_list("pk", "prompt", "reference")
    }
    solved: dict[str, dict[str, np.ndarray]] = defaultdict(dict)
    totals: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for row in rows:
        line = run_line[row["run_id"]]
        key = keys[row["task_id"]]
        counts = solved[line.key].setdefault(key, np.zeros(line.max_turns))
        turn = row["first_correct_turn"]
        if turn is not None and turn <= line.max_turns:
            counts[turn - 1 :] += row["n"]
        totals[line.key][key] += row["n"]
    return {
        line_key: {key: counts / totals[line_key][key] for key, counts in per_task.items()}
        for line_key, per_task in solved.items()
    }


def _to_turn(rates: np.ndarray, turns: int) -> np.ndarray:
    """A line's solved-by-turn-k rates carried on to ``turns``: a dialogue that ended at its
    run's max turns is, for every later k, as it stood at its end."""
    missing = turns - rates.shape[-1]
    return np.concatenate([rates, np.repeat(rates[..., -1:], missing, axis=-1)], axis=-1)


def _gap(baseline: Line, line: Line, rates: Mapping[str, Mapping[str, np.ndarray]]) -> LineGap:
    base_rates, line_rates = rates.get(baseline.key, {}), rates.get(line.key, {})
    common = sorted(base_rates.keys() & line_rates.keys())
    if not common:
        return LineGap(line, [])
    turns = max(baseline.max_turns, line.max_turns)
    base = _to_turn(np.array([base_rates[key] for key in common]), turns)
    other = _to_turn(np.array([line_rates[key] for key in common]), turns)
    return LineGap(line, paired_gaps(base, other))


def config_diff(lines: Sequence[Line]) -> list[tuple[str, list[str]]]:
    """``(setting, its value in each line)`` for the settings of the frozen configurations that
    are not the same in every line; a line of several seeds lists them."""
    flat = []
    for line in lines:
        settings = flatten(line.runs[0].config)
        settings["seed"] = ", ".join(str(seed) for seed in line.seeds)
        flat.append(settings)
    names = sorted(set().union(*flat)) if flat else []
    return [
        (name, [settings.get(name, NOT_SET) for settings in flat])
        for name in names
        if len({settings.get(name, NOT_SET) for settings in flat}) > 1
    ]


def _notes(lines: Sequence[Line], gaps: Sequence[LineGap]) -> list[str]:
    notes = []
    task_sets = {
        (run.frozen_config.task_set.name, run.frozen_config.task_set.version,
         run.frozen_config.task_set.task_count)
        for line in lines for run in line.runs
    }  # fmt: skip
    if len(task_sets) > 1:
        listed = "; ".join(
            f"{name} v{version} ({count} tasks)" for name, version, count in sorted(task_sets)
        )
        notes.append(
            f"The runs play different task sets or versions ({listed}). Each curve is over its own "
            "tasks; each difference from the baseline is over the tasks both played (same prompt "
            "and reference), counted in the table."
        )
    for gap in gaps:
        if not gap.gaps:
            notes.append(
                f"{gap.line.label} shares no task with the baseline: no paired difference."
            )
    if any(line.provisional for line in lines):
        notes.append(
            "Some runs have not played out (provisional): their paired differences count only the "
            "dialogues that ended, which lean towards those solved early."
        )
    return notes


def compare(runs: Sequence[Run], *, baseline_run_id: int | None, by_seed: bool) -> Comparison:
    """The comparison of these runs against the line holding ``baseline_run_id`` (the first
    line, that of the oldest run, when it is not among them)."""
    lines = lines_of(runs, by_seed=by_seed)
    baseline = next(
        (line for line in lines if any(run.pk == baseline_run_id for run in line.runs)), lines[0]
    )
    rates = _solved_rates(lines)
    gaps = [_gap(baseline, line, rates) for line in lines if line is not baseline]
    return Comparison(lines, baseline, gaps, config_diff(lines), _notes(lines, gaps))
