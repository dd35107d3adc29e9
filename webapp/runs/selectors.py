"""Reads for runs. Metrics are counted in the database with a fixed number of grouped queries
per run (never a Python loop over dialogues), then handed to the pure functions of
``webapp.runs.metrics``."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from django.db import connection
from django.db.models import Case, Count, F, IntegerField, Min, Q, QuerySet, Sum, When, Window
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast, Lag

from webapp.dialogues.models import Dialogue, PendingTurn, Turn
from webapp.runs.metrics import (
    BatchInPlay,
    GroupAccuracy,
    PassAtK,
    PlasticityStep,
    RunMetrics,
    RunSummary,
    TurnAccuracy,
    TurnCounts,
    TurnKinds,
    cumulative_accuracy,
    group_accuracy,
    mean_from_histogram,
    pass_at_k_curve,
    spent,
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
    total = sum(histogram.values())
    return cumulative_accuracy(
        first_correct_counts=solved_at,
        total=total,
        max_turns=run_max_turns(run),
        batch=_waiting_batch(run, solved_at, total) or BatchInPlay.from_json(run.batch_in_play),
    )


def _waiting_batch(run: Run, solved_at: dict[int, int], stored: int) -> BatchInPlay | None:
    """While people play a role, the whole run is one batch in play: dialogues wait for a
    person at different rounds, and the ones a person has not answered yet must not drop out
    of a turn's count while the quicker ones (or the solved ones) are counted. So a turn counts
    only once every unfinished dialogue has played it, and then counts every dialogue; until
    then it is not known. (None: no person plays in this run, or it ended.)"""
    if run.is_finished or not run.frozen_config.people_roles():
        return None
    unfinished = run.progress_total - stored
    if unfinished <= 0:
        return None
    reached = list(
        PendingTurn.objects.filter(run_id=run.pk, status__in=PendingTurn.LIVE_STATUSES).values_list(
            "rounds_played", flat=True
        )
    )
    if len(reached) < unfinished:  # some not played yet, or in the worker between two states
        reached.append(0)
    return BatchInPlay(round=min(reached), going=unfinished, ended=stored, solved_at=solved_at)


def runs_accuracy_by_turn(*, runs: Sequence[Run]) -> dict[int, list[TurnAccuracy]]:
    """Curves of several runs (each to its own max turns) in one grouped query."""
    histograms = _first_correct_histograms(run.pk for run in runs) if runs else {}
    return {run.pk: _curve(histograms.get(run.pk, {}), run) for run in runs}


def _solved_within_max_turns(runs: Sequence[Run]) -> Q:
    """Solved by its own run's max turns, for dialogues of several runs: one condition per
    distinct max turns (a first correct turn past it, as a sharded dialogue can have, is not a
    solve)."""
    by_max_turns: dict[int, list[int]] = defaultdict(list)
    for run in runs:
        by_max_turns[run_max_turns(run)].append(run.pk)
    solved = Q(pk__in=[])
    for max_turns, run_ids in by_max_turns.items():
        solved |= Q(run_id__in=run_ids) & _solved_by(max_turns)
    return solved


def _pass_at_k_counts_by_run(runs: Sequence[Run]) -> dict[int, dict[tuple[int, int], int]]:
    """``{run id: {(samples n, solved c): tasks}}``: per-task counts grouped again, in one
    query, so the rows returned are bounded by the runs and their samples per task, not by the
    tasks or dialogues."""
    per_task = (
        Dialogue.objects.filter(run_id__in=[run.pk for run in runs])
        .values("run_id", "task_id")
        .annotate(n=Count("id"), c=Count("id", filter=_solved_within_max_turns(runs)))
        .values("run_id", "n", "c")
        .order_by()
    )
    # The inner SQL comes from the ORM (parameters kept apart); only the outer grouping is
    # written here, in SQL that SQLite and PostgreSQL both accept.
    inner_sql, params = per_task.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT per_task.run_id, per_task.n, per_task.c, COUNT(*) FROM ({inner_sql}) "
            "per_task GROUP BY per_task.run_id, per_task.n, per_task.c",
            params,
        )
        counts: dict[int, dict[tuple[int, int], int]] = defaultdict(dict)
        for run_id, n, c, tasks in cursor.fetchall():
            counts[int(run_id)][(int(n), int(c))] = int(tasks)
        return counts


def _turn_counts_by_run(run_ids: Iterable[int]) -> dict[int, TurnCounts]:
    """Role and kind counts and token sums of each run's stored turns, in one grouped
    aggregate (rows: one per run)."""
    student = Q(role=Turn.Role.STUDENT)
    teacher = Q(role=Turn.Role.TEACHER)
    question = student & Q(kind=Turn.Kind.QUESTION)
    rows = (
        Turn.objects.filter(dialogue__run_id__in=list(run_ids))
        .values(run=F("dialogue__run_id"))
        .annotate(
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
        .order_by()
    )
    counts = {}
    for row in rows:
        run_id = row.pop("run")
        counts[run_id] = TurnCounts(**{key: int(value or 0) for key, value in row.items()})
    return counts


def _turn_counts(run: Run, *, sharded: bool) -> TurnCounts:
    """The run's turn counts; premature attempts (sharded runs only) in a second query."""
    counts = _turn_counts_by_run([run.pk]).get(run.pk, TurnCounts())
    return replace(counts, **_premature_attempts(run)) if sharded else counts


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


def _plasticity(run: Run) -> list[PlasticityStep]:
    """Consecutive verified attempts of each dialogue, counted by the teacher turn between them:
    each attempt is paired with the previous one (a window over the dialogue's attempts), and
    the pairs are counted in one grouped pass."""
    in_dialogue_order = {"partition_by": [F("dialogue_id")], "order_by": F("index").asc()}
    attempts = (
        Turn.objects.filter(
            dialogue__run_id=run.pk, role=Turn.Role.STUDENT, kind=Turn.Kind.ATTEMPT,
            is_correct__isnull=False,
        )
        .annotate(
            previous=Window(Lag("is_correct"), **in_dialogue_order),
            previous_round=Window(Lag("round"), **in_dialogue_order),
        )
        .values("is_correct", "previous", "previous_round")
        .order_by()
    )  # fmt: skip
    inner_sql, params = attempts.query.sql_with_params()
    # Booleans are tested by themselves (CASE WHEN x), which SQLite (0/1) and PostgreSQL share.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT t.previous_round, "
            "SUM(CASE WHEN t.previous THEN 1 ELSE 0 END), "
            "SUM(CASE WHEN t.previous AND NOT t.is_correct THEN 1 ELSE 0 END), "
            "SUM(CASE WHEN t.previous THEN 0 ELSE 1 END), "
            "SUM(CASE WHEN NOT t.previous AND t.is_correct THEN 1 ELSE 0 END) "
            f"FROM ({inner_sql}) t WHERE t.previous IS NOT NULL "
            "GROUP BY t.previous_round ORDER BY t.previous_round",
            params,
        )
        return [PlasticityStep(*(int(value) for value in row)) for row in cursor.fetchall()]


def _student_turn_kinds(run: Run) -> list[TurnKinds]:
    rows = (
        Turn.objects.filter(dialogue__run_id=run.pk, role=Turn.Role.STUDENT)
        .values("round", "kind")
        .annotate(n=Count("id"))
        .order_by()
    )
    by_round: dict[int, dict[str, int]] = defaultdict(dict)
    for row in rows:
        by_round[row["round"]][row["kind"]] = row["n"]
    return [TurnKinds(turn, counts) for turn, counts in sorted(by_round.items())]


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
    """Every metric of one run: six queries (seven for a sharded run), whatever its size."""
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
        pass_at_k=pass_at_k_curve(_pass_at_k_counts_by_run([run]).get(run.pk, {})),
        turn_counts=_turn_counts(run, sharded=sharded),
        by_domain=_breakdown(groups, "domain"),
        by_difficulty=_breakdown(groups, "difficulty"),
        accounting=dict(run.accounting or {}),
        provisional=run.is_provisional,
        batch=BatchInPlay.from_json(run.batch_in_play),
        plasticity=_plasticity(run),
        student_turn_kinds=_student_turn_kinds(run),
    )


def _pass_at_samples(run: Run, counts: dict[tuple[int, int], int]) -> PassAtK | None:
    """pass@K, K the samples per task the run asked for (None for one sample a task)."""
    samples = run.frozen_config.samples_per_task
    if samples < 2:
        return None
    curve = pass_at_k_curve(counts)
    return curve[min(samples, len(curve)) - 1] if curve else None


def run_summaries(*, runs: Sequence[Run]) -> dict[int, RunSummary]:
    """The runs table's figures for these evaluation runs (training runs have none): three
    grouped queries, whatever the number of runs and dialogues."""
    evaluations = [run for run in runs if run.kind == Run.Kind.EVAL]
    ids = [run.pk for run in evaluations]
    if not ids:
        return {}
    histograms = _first_correct_histograms(ids)
    counts = _turn_counts_by_run(ids)
    several_samples = [run for run in evaluations if run.frozen_config.samples_per_task > 1]
    pass_counts = _pass_at_k_counts_by_run(several_samples) if several_samples else {}
    summaries = {}
    for run in evaluations:
        turn_counts = counts.get(run.pk, TurnCounts())
        summaries[run.pk] = RunSummary(
            max_turns=run_max_turns(run),
            accuracy_by_turn=_curve(histograms.get(run.pk, {}), run),
            pass_at_k=_pass_at_samples(run, pass_counts.get(run.pk, {})),
            turn_counts=turn_counts,
            spent=spent(run.accounting or {}, turn_counts, elapsed_seconds=run.elapsed_seconds),
            provisional=run.is_provisional,
        )
    return summaries


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


def run_people_waiting(*, run: Run) -> dict[str, int] | None:
    """How many of the run's dialogues wait for a person ("open") or for the worker to play a
    person's answer ("answered"); None when no person plays in the run."""
    if not run.frozen_config.people_roles():
        return None
    counts = dict(
        PendingTurn.objects.filter(run_id=run.pk, status__in=PendingTurn.LIVE_STATUSES)
        .values_list("status")
        .annotate(n=Count("id"))
        .order_by()
    )
    return {status: counts.get(status, 0) for status in PendingTurn.LIVE_STATUSES}
