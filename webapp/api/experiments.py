"""``/api/v1/experiments``: runs compared as the compare page compares them (one line per
configuration, seeds pooled; each line's difference from the baseline, paired over the tasks
both played), the transfer matrix, and Lost-in-Conversation experiments' figures. Each is the
page's own computation (``webapp.experiments``), returned as numbers."""

from __future__ import annotations

from datetime import datetime

from django.http import Http404, HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Query, Router, Schema

from webapp.api.auth import RESEARCHERS
from webapp.api.common import Id
from webapp.experiments import comparison, lic, transfer
from webapp.experiments.models import LostInConversation
from webapp.metrics.comparison import Gap
from webapp.metrics.figures import FeedbackUseTurn
from webapp.metrics.stats import Proportion

router = Router(tags=["experiments"], auth=RESEARCHERS)


class ProportionOut(Schema):
    rate: float | None
    low: float | None
    high: float | None
    successes: int
    n: int


class PointOut(Schema):
    """Accuracy after turn ``turn``: one run's rate with its 95% Wilson interval over
    dialogues, or a line of several seeds' mean with its 95% t interval over seeds (``n``:
    dialogues or seeds)."""

    turn: int
    value: float | None
    low: float | None
    high: float | None
    n: int


class GapOut(Schema):
    """``line − baseline`` after turn ``turn``, its 95% interval and p-value; ``method`` says
    how (paired over ``tasks`` shared tasks, or unpaired), ``note`` why there is no interval."""

    turn: int
    value: float
    low: float | None
    high: float | None
    p_value: float | None
    method: str
    tasks: int
    note: str


class FeedbackUseOut(Schema):
    """At turn ``turn``: the share of valid moves, and of later moves consistent with all the
    feedback so far (against ``chance``, a random valid move's share)."""

    turn: int
    valid: ProportionOut
    consistent: ProportionOut | None
    chance: float | None


class LineOut(Schema):
    key: str
    label: str
    runs: list[int]
    seeds: list[int]
    max_turns: int
    interval: str
    partial: bool
    held_out: bool
    training_horizon: int | None
    points: list[PointOut]
    gaps: list[GapOut]
    feedback_use: list[FeedbackUseOut]


class ConfigDifference(Schema):
    setting: str
    values: list[str]


class ComparisonOut(Schema):
    """``baseline``: the key of the line the others are compared with (``gaps`` empty on it)."""

    baseline: str
    lines: list[LineOut]
    differences: list[ConfigDifference]
    notes: list[str]


class TransferCellOut(Schema):
    evaluation_domain: str
    gap: GapOut
    tasks_trained_on: int


class TransferRowOut(Schema):
    """A trained model's gain over its base at turn T on each evaluation domain."""

    model: int
    model_name: str
    base_model: int | None
    training_domains: list[str]
    cells: list[TransferCellOut]


class TransferOut(Schema):
    domains: list[str]
    rows: list[TransferRowOut]


class LicSummary(Schema):
    id: int
    name: str
    created_at: datetime
    runs: dict[str, int]


class ConditionOut(Schema):
    """One condition (full, concat, sharded): the mean score per instruction with its 95%
    interval, aptitude (90th percentile) and unreliability (90th − 10th)."""

    condition: str
    run: int
    dialogues: int
    instructions: int
    mean: float | None
    mean_low: float | None
    mean_high: float | None
    aptitude: float | None
    unreliability: float | None


class FirstAttemptOut(Schema):
    turn: int | None
    mean: float | None
    low: float | None
    high: float | None
    n: int


class LicOut(LicSummary):
    """``drop``: sharded minus full, paired per instruction (negative: lost);
    ``relative_drop``: the paper's "lost" share; ``premature``: sharded dialogues' score by the
    turn of their first attempt."""

    conditions: list[ConditionOut]
    drop: GapOut | None
    relative_drop: float | None
    premature: list[FirstAttemptOut]


def _proportion(p: Proportion) -> ProportionOut:
    known = p.total > 0
    return ProportionOut(
        rate=p.rate if known else None,
        low=p.low if known else None,
        high=p.high if known else None,
        successes=p.successes,
        n=p.total,
    )


def _gap(gap: Gap) -> GapOut:
    return GapOut(
        turn=gap.turn, value=gap.value, low=gap.low, high=gap.high, p_value=gap.p_value,
        method=str(gap.method), tasks=gap.tasks, note=gap.note,
    )  # fmt: skip


def _feedback_use(turns: list[int], cells: list[FeedbackUseTurn | None]) -> list[FeedbackUseOut]:
    return [
        FeedbackUseOut(
            turn=turn,
            valid=_proportion(cell.valid_share),
            consistent=_proportion(cell.consistent_share) if cell.later else None,
            chance=cell.chance if cell.later else None,
        )
        for turn, cell in zip(turns, cells, strict=True)
        if cell is not None
    ]


@router.get("/compare", response=ComparisonOut, summary="Compare runs, as the compare page does")
def compare_runs(
    request: HttpRequest,
    runs: Query[list[Id]],
    baseline: Id | None = None,
    by_seed: bool = True,
) -> ComparisonOut:
    """``?runs=3&runs=5&baseline=3``: evaluations by id (at most 30); runs that differ only in
    their seed make one line unless ``by_seed=false``. ``baseline``: a run of the line the
    others are compared with (default: the line of the oldest run)."""
    selected = comparison.selected_runs(runs)
    if not selected:
        raise Http404("None of these runs is an evaluation.")
    result = comparison.compare(selected, baseline_run_id=baseline, by_seed=by_seed)
    gaps = {line_gap.line.key: line_gap.gaps for line_gap in result.gaps}
    feedback = {line.key: row.cells for line, row in result.feedback_use}
    lines = [
        LineOut(
            key=line.key,
            label=line.label,
            runs=[run.pk for run in line.runs],
            seeds=line.seeds,
            max_turns=line.max_turns,
            interval=line.interval_name,
            partial=line.partial,
            held_out=line.held_out,
            training_horizon=line.training_horizon,
            points=[PointOut(**point.__dict__) for point in line.points],
            gaps=[_gap(gap) for gap in gaps.get(line.key, [])],
            feedback_use=_feedback_use(result.feedback_turns, feedback.get(line.key, [])),
        )
        for line in result.lines
    ]
    return ComparisonOut(
        baseline=result.baseline.key,
        lines=lines,
        differences=[ConfigDifference(setting=s, values=v) for s, v in result.config_diff],
        notes=result.notes,
    )


@router.get("/transfer", response=TransferOut, summary="The transfer matrix")
def transfer_matrix(request: HttpRequest) -> TransferOut:
    """Training domain × evaluation domain: each trained model's gain over its base at turn T,
    paired over tasks, as on the transfer page (and its CSV)."""
    matrix = transfer.transfer_matrix()
    rows = [
        TransferRowOut(
            model=row.model.pk,
            model_name=row.model.name,
            base_model=row.model.base_model_id,
            training_domains=row.training_domains,
            cells=[
                TransferCellOut(
                    evaluation_domain=domain, gap=_gap(cell.gap), tasks_trained_on=cell.trained_on
                )
                for domain, cell in zip(matrix.domains, row.cells, strict=True)
                if cell is not None
            ],
        )
        for row in matrix.rows
    ]
    return TransferOut(domains=matrix.domains, rows=rows)


def _lic_summary(experiment: LostInConversation) -> LicSummary:
    return LicSummary(
        id=experiment.pk,
        name=str(experiment),
        created_at=experiment.created_at,
        runs={condition: run.pk for condition, run in experiment.runs.items()},
    )


@router.get(
    "/lost-in-conversation", response=list[LicSummary], summary="Lost-in-Conversation experiments"
)
def list_lic(request: HttpRequest) -> list[LicSummary]:
    related = ("full_run", "concat_run", "sharded_run", "student")
    found = LostInConversation.objects.select_related(*related).order_by("-created_at")
    return [_lic_summary(experiment) for experiment in found]


@router.get(
    "/lost-in-conversation/{experiment_id}",
    response=LicOut,
    summary="A Lost-in-Conversation experiment's figures",
)
def get_lic(request: HttpRequest, experiment_id: Id) -> LicOut:
    """Its page's numbers: each condition's mean, aptitude and unreliability, the drop from
    full to sharded, and the premature-answer figure. While its runs play they count the
    dialogues that finished."""
    related = ("full_run", "concat_run", "sharded_run", "student", "user_simulator", "task_set")
    experiment = get_object_or_404(
        LostInConversation.objects.select_related(*related), pk=experiment_id
    )
    metrics = lic.lic_metrics(experiment)
    conditions = [
        ConditionOut(**{**condition.__dict__, "run": condition.run.pk})
        for condition in metrics.conditions
    ]
    premature = [
        FirstAttemptOut(
            turn=first.turn,
            mean=first.score.mean,
            low=first.score.low,
            high=first.score.high,
            n=first.score.count,
        )
        for first in metrics.premature
    ]
    return LicOut(
        **_lic_summary(experiment).dict(),
        conditions=conditions,
        drop=_gap(metrics.drop) if metrics.drop else None,
        relative_drop=metrics.relative_drop,
        premature=premature,
    )
