"""Comparing evaluation runs: their accuracy-after-turn-k curves, each line's difference from a
baseline with paired statistics over tasks, and what differs in their configurations.

A *line* is one run, or (``by_seed``) the runs whose configurations differ only in the seed:
then each point is the mean over seeds with a 95% Student t interval across seeds, as papers
report repeated runs. Differences from the baseline pair tasks: a task is the same task in two
runs when its prompt and reference are the same, so runs on different versions of a task set
are compared on the tasks they share (and the page says how many).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from models_gpu.spec.training_run import TrainingRunConfig
from webapp.metrics.comparison import Gap, TaskOutcomes, compare_outcomes
from webapp.metrics.figures import (
    FeedbackUseRow,
    TurnAccuracy,
    feedback_use_table,
    pooled_feedback_use,
)
from webapp.metrics.stats import mean_rate_across
from webapp.models_registry.models import ModelSpec
from webapp.runs.config_view import NOT_SET, flatten
from webapp.runs.models import Run
from webapp.runs.selectors import (
    keyed_task_outcomes,
    run_list,
    runs_accuracy_by_turn,
    runs_feedback_use,
)
from webapp.training.heldout import Overlap, overlap, trained_task_keys

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
    # For a student trained by Dialab: how many of the line's tasks it trained on.
    trained_on: Overlap | None = None

    @property
    def held_out(self) -> bool:
        return self.trained_on is None or self.trained_on.held_out

    @property
    def seeds(self) -> list[int]:
        return [run.frozen_config.seed for run in self.runs]

    @property
    def partial(self) -> bool:
        return any(run.is_partial for run in self.runs)

    @property
    def interval_name(self) -> str:
        if len(self.runs) > 1:
            return f"95% t interval over {len(self.runs)} seeds"
        return "95% Wilson interval over dialogues"


@dataclass(frozen=True)
class LineGap:
    """A line's difference from the baseline, turn by turn: paired over the tasks both played,
    unpaired when they share none (``webapp.metrics.comparison``)."""

    line: Line
    gaps: list[Gap]

    @property
    def final(self) -> Gap | None:
        return self.gaps[-1] if self.gaps else None


@dataclass(frozen=True)
class Comparison:
    lines: list[Line]
    baseline: Line
    gaps: list[LineGap]
    config_diff: list[tuple[str, list[str]]]
    notes: list[str] = field(default_factory=list)
    # Beside accuracy: the turns where some line has moves after a dialogue's first, and each
    # line's feedback use there (both empty when no line has checked moves).
    feedback_turns: list[int] = field(default_factory=list)
    feedback_use: list[tuple[Line, FeedbackUseRow]] = field(default_factory=list)


def selected_runs(run_ids: Iterable[int]) -> list[Run]:
    """The evaluation runs among these ids, oldest first: lines come in the order of their
    first run, and the first line is the default baseline (usually the base model)."""
    ids = list(dict.fromkeys(run_ids))[:MAX_RUNS]
    return list(run_list().filter(pk__in=ids, kind=Run.Kind.EVAL).order_by("created_at", "pk"))


def _point(accuracy: TurnAccuracy) -> CurvePoint:
    p = accuracy.accuracy
    if p is None:
        return CurvePoint(accuracy.turn, None, None, None, 0)
    return CurvePoint(accuracy.turn, p.rate, p.low, p.high, p.total)


def _seed_points(curves: Sequence[list[TurnAccuracy]], max_turns: int) -> list[CurvePoint]:
    points = []
    for turn in range(1, max_turns + 1):
        known = [curve[turn - 1].accuracy for curve in curves]
        rates = [accuracy.rate for accuracy in known if accuracy is not None]
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
        trained_by = student.trained_by_run
        assert trained_by is not None  # the query keeps the trained students only
        config = TrainingRunConfig.from_json(trained_by.config)
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
            points = [_point(point) for point in curves[first.pk].points]
        else:
            config = first.frozen_config
            label = f"{config.student.name} · {config.protocol.name} ({len(group)} seeds)"
            points = _seed_points([curves[run.pk].points for run in group], max_turns)
        lines.append(
            Line(key, label, group, max_turns, points, horizons.get(first.student_id))
        )  # fmt: skip
    return lines


def line_outcomes(lines: Sequence[Line]) -> dict[str, dict[str, TaskOutcomes]]:
    """``{line key: {task key: outcomes}}``: each task's counted dialogues in the line's runs
    (samples and seeds together). Four queries."""
    by_run = keyed_task_outcomes(runs=[run for line in lines for run in line.runs])
    outcomes: dict[str, dict[str, TaskOutcomes]] = {}
    for line in lines:
        merged: dict[str, TaskOutcomes] = {}
        for run in line.runs:
            for key, task in by_run.get(run.pk, {}).items():
                merged[key] = merged[key].merged(task) if key in merged else task
        outcomes[line.key] = merged
    return outcomes


def with_training_overlap(line: Line, tasks: Mapping[str, TaskOutcomes]) -> Line:
    """``line``, with how many of its tasks its student trained on (a student Dialab trained)."""
    student = line.runs[0].student
    if student is None or student.trained_by_run_id is None:
        return line
    return replace(line, trained_on=overlap(trained_task_keys(student), tasks))


def _gap(baseline: Line, line: Line, outcomes: Mapping[str, Mapping[str, TaskOutcomes]]) -> LineGap:
    turns = max(baseline.max_turns, line.max_turns)
    return LineGap(
        line, compare_outcomes(outcomes.get(baseline.key, {}), outcomes.get(line.key, {}), turns)
    )


def line_feedback_use(lines: Sequence[Line]) -> tuple[list[int], list[tuple[Line, FeedbackUseRow]]]:
    """Each line's feedback use per turn (its runs' moves pooled), as ``feedback_use_table``
    lays it out. Two or three queries."""
    by_run = runs_feedback_use(runs=[run for line in lines for run in line.runs])
    pooled = [pooled_feedback_use([by_run.get(run.pk, []) for run in line.runs]) for line in lines]
    turns, rows = feedback_use_table(pooled)
    return turns, list(zip(lines, rows, strict=True)) if rows else []


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
        if gap.final is not None and gap.final.method == "unpaired":
            notes.append(
                f"{gap.line.label} shares no task with the baseline: its difference is unpaired "
                "(Newcombe's interval over dialogues, which takes dialogues of one task as "
                "independent; no test)."
            )
        elif not gap.gaps:
            notes.append(f"{gap.line.label}: no counted dialogues yet, so no difference.")
    for line in lines:
        if not line.held_out and line.trained_on is not None:
            notes.append(
                f"{line.label}: {line.trained_on.description}, so its results are not held out."
            )
    if any(line.partial for line in lines):
        notes.append(
            "Some runs have not played out (partial): their curves and differences count the "
            "dialogues of the batches that finished (see each run's page)."
        )
    return notes


def compare(runs: Sequence[Run], *, baseline_run_id: int | None, by_seed: bool) -> Comparison:
    """The comparison of these runs against the line holding ``baseline_run_id`` (the first
    line, that of the oldest run, when it is not among them)."""
    plain_lines = lines_of(runs, by_seed=by_seed)
    outcomes = line_outcomes(plain_lines)
    lines = [with_training_overlap(line, outcomes[line.key]) for line in plain_lines]
    baseline = next(
        (line for line in lines if any(run.pk == baseline_run_id for run in line.runs)), lines[0]
    )
    gaps = [_gap(baseline, line, outcomes) for line in lines if line is not baseline]
    feedback_turns, feedback_use = line_feedback_use(lines)
    return Comparison(
        lines,
        baseline,
        gaps,
        config_diff(lines),
        _notes(lines, gaps),
        feedback_turns=feedback_turns,
        feedback_use=feedback_use,
    )
