"""Reads for runs. Metrics are counted in the database with a fixed number of grouped queries
per run (never a Python loop over dialogues), then handed to the pure functions of
``webapp.runs.metrics``."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from django.db import connection
from django.db.models import Case, Count, F, IntegerField, Min, Q, QuerySet, Sum, When, Window
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast

from webapp.dialogues.models import Dialogue, Turn
from webapp.runs.metrics import (
    BatchInPlay,
    GroupAccuracy,
    RunMetrics,
    TurnAccuracy,
    TurnCounts,
    cumulative_accuracy,
    group_accuracy,
    mean_from_histogram,
    pass_at_k_curve,
)
from webapp.runs.models import Protocol, Run

COMPARE_CANDIDATES = 50


def run_list() -> QuerySet[Run]:
    return Run.objects.select_related(
        "task_set", "student", "teacher", "user_simulator", "judge", "protocol"
    )


def protocol_list(*, include_retired: bool = False) -> QuerySet[Protocol]:
    """The protocols, retired ones only with ``include_retired``."""
    protocols = Protocol.objects.all()
    return protocols if include_retired else protocols.filter(retired=False)


def protocol_choices() -> QuerySet[Protocol]:
    """The protocols a run may be launched with: every protocol not retired."""
    return protocol_list()


def retired_protocol_count() -> int:
    return Protocol.objects.filter(retired=True).count()


def run_max_turns(run: Run) -> int:
    """T as the run played it (its frozen configuration)."""
    return run.frozen_config.protocol.max_turns


def run_is_sharded(run: Run) -> bool:
    return run.frozen_config.protocol.mode == "sharded"


def _solved_by(max_turns: int) -> Q:
    return Q(first_correct_turn__isnull=False, first_correct_turn__lte=max_turns)


def _first_correct_histograms(run_ids: Iterable[int]) -> dict[int, dict[int | None, int]]:
    """``{run id: {first correct turn (None: unsolved): dialogues}}`` in one grouped query."""
    rows = (
        Dialogue.objects.filter(run_id__in=list(run_ids))
        .values("run_id", "first_correct_turn")
        .annotate(n=Count("id"))
        .order_by()
    )
    histograms: dict[int, dict[int | None, int]] = defaultdict(dict)
    for row in rows:
        histograms[row["run_id"]][row["first_correct_turn"]] = row["n"]
    return histograms


def _curve(histogram: dict[int | None, int], run: Run) -> list[TurnAccuracy]:
    """Accuracy after turn k over the dialogues played to turn k: the stored ones and, while
    the run plays, its batch in play (``metrics.cumulative_accuracy``)."""
    solved_at = {turn: n for turn, n in histogram.items() if turn is not None}
    return cumulative_accuracy(
        first_correct_counts=solved_at,
        total=sum(histogram.values()),
        max_turns=run_max_turns(run),
        batch=BatchInPlay.from_json(run.batch_in_play),
    )


def runs_accuracy_by_turn(*, runs: Sequence[Run]) -> dict[int, list[TurnAccuracy]]:
    """Curves of several runs (each to its own max turns) in one grouped query."""
    histograms = _first_correct_histograms(run.pk for run in runs) if runs else {}
    return {run.pk: _curve(histograms.get(run.pk, {}), run) for run in runs}


def _pass_at_k_counts(run: Run, max_turns: int) -> dict[tuple[int, int], int]:
    """``{(samples n, solved c): tasks}``: per-task counts grouped again, in one query, so the
    rows returned are bounded by the samples per task, not by the tasks or dialogues."""
    per_task = (
        Dialogue.objects.filter(run_id=run.pk)
        .values("task_id")
        .annotate(n=Count("id"), c=Count("id", filter=_solved_by(max_turns)))
        .values("n", "c")
        .order_by()
    )
    # The inner SQL comes from the ORM (parameters kept apart); only the outer grouping is
    # written here, in SQL that SQLite and PostgreSQL both accept.
    inner_sql, params = per_task.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT per_task.n, per_task.c, COUNT(*) FROM ({inner_sql}) per_task "
            "GROUP BY per_task.n, per_task.c",
            params,
        )
        return {(int(n), int(c)): int(tasks) for n, c, tasks in cursor.fetchall()}


def _turn_counts(run: Run, *, sharded: bool) -> TurnCounts:
    """Role and kind counts and token sums in one aggregate; premature attempts (sharded runs
    only) in a second one."""
    student = Q(role=Turn.Role.STUDENT)
    teacher = Q(role=Turn.Role.TEACHER)
    question = student & Q(kind=Turn.Kind.QUESTION)
    counts = Turn.objects.filter(dialogue__run_id=run.pk).aggregate(
        student_turns=Count("id", filter=student),
        attempts=Count("id", filter=student & Q(kind=Turn.Kind.ATTEMPT)),
        questions=Count("id", filter=question),
        dialogues_with_questions=Count("dialogue_id", filter=question, distinct=True),
        teacher_turns=Count("id", filter=teacher),
        leaks=Count("id", filter=teacher & Q(leak_flag=True)),
        student_prompt_tokens=Sum("prompt_tokens", filter=student, default=0),
        student_completion_tokens=Sum("completion_tokens", filter=student, default=0),
        teacher_prompt_tokens=Sum("prompt_tokens", filter=teacher, default=0),
        teacher_completion_tokens=Sum("completion_tokens", filter=teacher, default=0),
    )
    if sharded:
        counts.update(_premature_attempts(run))
    return TurnCounts(**{key: int(value or 0) for key, value in counts.items()})


def _shard_field(key: str) -> Cast:
    return Cast(KeyTextTransform(key, "private_context"), IntegerField())


def _premature_attempts(run: Run) -> dict[str, int]:
    """An attempt is premature when the last shard turn before it (same dialogue, by index) had
    not revealed every shard (``shard < shards_total``); attempts with no shard turn before them
    are counted neither way.

    Shards are revealed in order, so that is: some shard turn comes before the attempt, and the
    first turn that revealed the last shard does not. Both positions are window minima over the
    dialogue's turns: one pass over the run's turns instead of a lookup per attempt.
    """
    shard = Q(kind=Turn.Kind.SHARD)
    every_shard = shard & Q(revealed__gte=F("shards_total"))
    per_dialogue = {"partition_by": [F("dialogue_id")]}
    turns = (
        Turn.objects.filter(dialogue__run_id=run.pk)
        .annotate(revealed=_shard_field("shard"), shards_total=_shard_field("shards_total"))
        .annotate(
            first_shard_at=Window(Min(Case(When(shard, then=F("index")))), **per_dialogue),
            all_shards_at=Window(Min(Case(When(every_shard, then=F("index")))), **per_dialogue),
        )
        .values(
            "first_shard_at",
            "all_shards_at",
            turn_role=F("role"),
            turn_kind=F("kind"),
            position=F("index"),
        )
        .order_by()
    )
    inner_sql, params = turns.query.sql_with_params()
    # Counted outside the window query: filtering attempts inside it would drop the shard turns
    # from the windows.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT COUNT(*), COALESCE(SUM(CASE WHEN t.all_shards_at IS NULL "
            "OR t.position < t.all_shards_at THEN 1 ELSE 0 END), 0) "
            f"FROM ({inner_sql}) t WHERE t.turn_role = %s AND t.turn_kind = %s "
            "AND t.first_shard_at < t.position",
            [*params, Turn.Role.STUDENT.value, Turn.Kind.ATTEMPT.value],
        )
        after_shards, premature = cursor.fetchone()
    return {"attempts_after_shards": int(after_shards), "premature_attempts": int(premature)}


def _task_group_counts(run: Run, max_turns: int) -> list[dict[str, Any]]:
    """Dialogues, solved and the sum of solving turns per (domain, difficulty): one query whose
    rows are bounded by the distinct task groups, not by the dialogues."""
    solved = _solved_by(max_turns)
    return list(
        Dialogue.objects.filter(run_id=run.pk)
        .values(domain=F("task__domain"), difficulty=F("task__difficulty"))
        .annotate(
            n=Count("id"),
            solved=Count("id", filter=solved),
            turns=Sum("first_correct_turn", filter=solved, default=0),
        )
        .order_by()
    )


def _breakdown(rows: list[dict[str, Any]], key: str) -> list[GroupAccuracy]:
    """Sum the (domain, difficulty) rows over one of the two; groups sorted, "(none)" last."""
    totals: dict[Any, list[int]] = defaultdict(lambda: [0, 0, 0])
    for row in rows:
        value = row[key] if row[key] not in ("", None) else None
        for position, column in enumerate(("n", "solved", "turns")):
            totals[value][position] += row[column]
    ordered = sorted(totals.items(), key=lambda item: (item[0] is None, item[0] or 0))
    return [
        group_accuracy(group=_group_label(value), total=n, solved=solved, solved_turns_sum=turns)
        for value, (n, solved, turns) in ordered
    ]


def _group_label(value: Any) -> str:
    if value is None:
        return "(none)"
    return f"{value:g}" if isinstance(value, float) else str(value)


def run_metrics(*, run: Run) -> RunMetrics:
    """Every metric of one run: four queries (five for a sharded run), whatever its size."""
    max_turns = run_max_turns(run)
    sharded = run_is_sharded(run)
    histogram = _first_correct_histograms([run.pk]).get(run.pk, {})
    groups = _task_group_counts(run, max_turns)
    solved_at = {turn: n for turn, n in histogram.items() if turn is not None and turn <= max_turns}
    return RunMetrics(
        max_turns=max_turns,
        sharded=sharded,
        dialogues=sum(histogram.values()),
        accuracy_by_turn=_curve(histogram, run),
        turns_to_solve=mean_from_histogram(solved_at),
        pass_at_k=pass_at_k_curve(_pass_at_k_counts(run, max_turns)),
        turn_counts=_turn_counts(run, sharded=sharded),
        by_domain=_breakdown(groups, "domain"),
        by_difficulty=_breakdown(groups, "difficulty"),
        accounting=dict(run.accounting or {}),
        provisional=run.is_provisional,
        batch=BatchInPlay.from_json(run.batch_in_play),
    )


def run_compare_candidates(*, run: Run) -> list[Run]:
    """Other runs on the same task set (same version), newest first: what the chart can
    overlay."""
    if run.task_set_id is None:
        return []
    others = run_list().filter(task_set_id=run.task_set_id, kind=Run.Kind.EVAL).exclude(pk=run.pk)
    return list(others.order_by("-created_at")[:COMPARE_CANDIDATES])


def run_cancel_requested(*, run_id: int) -> bool:
    return Run.objects.filter(pk=run_id, cancel_requested=True).exists()


def run_stored_dialogue_keys(*, run_id: int) -> set[tuple[int, int]]:
    """(task id, sample index) of every dialogue already stored: what a resumed run skips."""
    return set(Dialogue.objects.filter(run_id=run_id).values_list("task_id", "sample_index"))
