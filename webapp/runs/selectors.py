"""Reads for runs. Figures are counted in the database with a fixed number of grouped queries
per run (never a Python loop over dialogues), over the dialogues the figures count
(``webapp.metrics.partial``), then handed to the pure functions of ``webapp.metrics``."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from django.db import connection
from django.db.models import Case, Count, F, IntegerField, Min, Q, QuerySet, Sum, When, Window
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast, Lag, RowNumber

from models_gpu.spec.reports import Accounting
from models_gpu.spec.run import RunConfig
from webapp.dialogues.models import Dialogue, PendingTurn, Turn
from webapp.metrics.comparison import Gap, TaskOutcomes, compare_outcomes, outcomes_from_histogram
from webapp.metrics.figures import (
    AccuracyCurve,
    FeedbackUseTurn,
    GroupAccuracy,
    PassAtK,
    PlasticityStep,
    RunMetrics,
    RunSummary,
    TurnAccuracy,
    TurnCounts,
    TurnKinds,
    accuracy_after_turns,
    group_accuracy,
    pass_at_k_curve,
    pass_at_k_tasks_left_out,
    spent,
)
from webapp.metrics.partial import BatchInPlay, Counted, counted
from webapp.metrics.stats import mean_from_histogram
from webapp.runs.models import Protocol, Run
from webapp.tasks.selectors import task_keys

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


@dataclass(frozen=True)
class Counting:
    """What one run's figures count (``webapp.metrics.partial``): the rule's outcome, the batch
    it was read from, the counted dialogues' first correct turns (None: not solved), and, when
    the newest stored dialogues (the batch in play's) are left out, the first of them."""

    run: Run
    counted: Counted
    batch: BatchInPlay
    first_correct: dict[int | None, int]
    left_out_from_pk: int | None = None

    @property
    def solved_at(self) -> dict[int, int]:
        return {turn: n for turn, n in self.first_correct.items() if turn is not None}

    def counts_whole(self, dialogue_pk: int) -> bool:
        """Whether this stored dialogue is one of the whole dialogues the figures count."""
        if not self.counted.whole_dialogues:
            return False
        return self.left_out_from_pk is None or dialogue_pk < self.left_out_from_pk


def _stored_histograms(run_ids: Iterable[int]) -> dict[int, dict[int | None, int]]:
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


def _newest_dialogues(newest: dict[int, int]) -> dict[int, list[tuple[int, int | None]]]:
    """``{run id: [(pk, first correct turn)]}``: each run's ``newest[run id]`` newest stored
    dialogues (the ones its batch in play stored), in one query."""
    if not newest:
        return {}
    ranked = (
        Dialogue.objects.filter(run_id__in=list(newest))
        .annotate(rank=Window(RowNumber(), partition_by=[F("run_id")], order_by=F("pk").desc()))
        .filter(rank__lte=max(newest.values()))
        .values_list("run_id", "pk", "first_correct_turn", "rank")
    )
    found: dict[int, list[tuple[int, int | None]]] = defaultdict(list)
    for run_id, pk, first_correct, rank in ranked:
        if rank <= newest[run_id]:
            found[run_id].append((pk, first_correct))
    return found


def _batch(run: Run, histogram: dict[int | None, int]) -> BatchInPlay:
    return _waiting_batch(run, histogram) or BatchInPlay.from_json(run.batch_in_play)


def _waiting_batch(run: Run, histogram: dict[int | None, int]) -> BatchInPlay | None:
    """While people play a role, the whole run is one batch in play: dialogues wait for a
    person at different turns, and the ones a person has not answered yet must not drop out
    of a turn's count while the quicker ones (or the solved ones) are counted. So a turn counts
    only once every unfinished dialogue has played it, and then counts every dialogue; until
    then it is not known. (None: no person plays in this run, or it ended.)"""
    if run.is_finished or not run.frozen_config.people_roles():
        return None
    stored = sum(histogram.values())
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
    return BatchInPlay(round=min(reached), going=unfinished, ended=stored)


def countings(*, runs: Sequence[Run]) -> dict[int, Counting]:
    """What each run's figures count, in two queries whatever the number of runs: the stored
    dialogues, then (for runs whose batch in play is left out) that batch's dialogues."""
    histograms = _stored_histograms(run.pk for run in runs)
    prepared = {}
    leave_out = {}
    for run in runs:
        histogram = histograms.get(run.pk, {})
        batch = _batch(run, histogram)
        stored = sum(histogram.values())
        rule = counted(
            stored=stored,
            batch=batch,
            max_turns=run_max_turns(run),
            expected=max(run.progress_total, stored),
            played_out=not run.is_partial,
        )
        prepared[run.pk] = (rule, batch, histogram)
        if rule.stored_not_counted:
            leave_out[run.pk] = rule.stored_not_counted
    newest = _newest_dialogues(leave_out)
    result = {}
    for run in runs:
        rule, batch, histogram = prepared[run.pk]
        left_out = newest.get(run.pk, [])
        kept = dict(histogram)
        for _, first_correct in left_out:
            kept[first_correct] -= 1
        first_pk = min((pk for pk, _ in left_out), default=None)
        result[run.pk] = Counting(run, rule, batch, kept, first_pk)
    return result


def _counted_dialogues(runs: Iterable[Counting], via: str = "") -> Q:
    """The counted dialogues of these runs, as a condition on Dialogue (``via=""``) or on a
    model that reaches it (``via="dialogue__"``)."""
    condition = Q(pk__in=[])
    whole_runs = []
    for counting in runs:
        if counting.left_out_from_pk is None:
            whole_runs.append(counting.run.pk)
        else:
            condition |= Q(
                **{f"{via}run_id": counting.run.pk, f"{via}pk__lt": counting.left_out_from_pk}
            )
    if whole_runs:
        condition |= Q(**{f"{via}run_id__in": whole_runs})
    return condition


def counted_whole_dialogues(*, runs: Sequence[Run]) -> Q:
    """The whole dialogues these runs' figures count, as a condition on Dialogue: the figures
    of other apps (Lost in Conversation) count the same dialogues as the run pages."""
    return _counted_dialogues(c for c in countings(runs=runs).values() if c.counted.whole_dialogues)


def _curve(counting: Counting) -> list[TurnAccuracy]:
    return accuracy_after_turns(
        first_correct_counts=counting.solved_at,
        counted=counting.counted,
        max_turns=run_max_turns(counting.run),
    )


def runs_accuracy_by_turn(*, runs: Sequence[Run]) -> dict[int, AccuracyCurve]:
    """Curves of several runs (each to its own max turns), in two grouped queries."""
    return {
        pk: AccuracyCurve(_curve(counting), counting.counted)
        for pk, counting in countings(runs=runs).items()
    }


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


def _pass_at_k_counts_by_run(runs: Sequence[Counting]) -> dict[int, dict[tuple[int, int], int]]:
    """``{run id: {(samples n, solved c): tasks}}`` over the counted dialogues: per-task counts
    grouped again, in one query, so the rows returned are bounded by the runs and their samples
    per task, not by the tasks or dialogues."""
    per_task = (
        Dialogue.objects.filter(_counted_dialogues(runs))
        .values("run_id", "task_id")
        .annotate(
            n=Count("id"), c=Count("id", filter=_solved_within_max_turns([c.run for c in runs]))
        )
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


def _turn_counts_by_run(runs: Sequence[Counting]) -> dict[int, TurnCounts]:
    """Role and kind counts of each run's counted whole dialogues' turns (none while only the
    batch in play is counted), and what all its stored turns spent (generations, calls,
    tokens), in one grouped aggregate (rows: one per run)."""
    in_counted = _counted_dialogues(
        [c for c in runs if c.counted.whole_dialogues], via="dialogue__"
    )
    student = Q(role=Turn.Role.STUDENT)
    teacher = Q(role=Turn.Role.TEACHER)
    question = student & Q(kind=Turn.Kind.QUESTION) & in_counted
    rows = (
        Turn.objects.filter(dialogue__run_id__in=[c.run.pk for c in runs])
        .values(run=F("dialogue__run_id"))
        .annotate(
            student_turns=Count("id", filter=student & in_counted),
            attempts=Count("id", filter=student & Q(kind=Turn.Kind.ATTEMPT) & in_counted),
            questions=Count("id", filter=question),
            dialogues_with_questions=Count("dialogue_id", filter=question, distinct=True),
            teacher_turns=Count("id", filter=teacher & in_counted),
            leaks=Count("id", filter=teacher & Q(leak_flag=True) & in_counted),
            stored_student_turns=Count("id", filter=student),
            stored_teacher_turns=Count("id", filter=teacher),
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


def _shard_field(key: str) -> Cast:
    return Cast(KeyTextTransform(key, "private_context"), IntegerField())


def _premature_attempts(counting: Counting) -> dict[str, int]:
    """An attempt is premature when the last shard turn before it (same dialogue, by index) had
    not revealed every shard (``shard < shards_total``); attempts with no shard turn before them
    are counted neither way.

    Shards are revealed in order, so that is: some shard turn comes before the attempt, and the
    first turn that revealed the last shard does not. Both positions are window minima over the
    dialogue's turns: one pass over the run's turns instead of a lookup per attempt.
    """
    shard = Q(kind=Turn.Kind.SHARD)
    every_shard = shard & Q(revealed__gte=F("shards_total"))
    per_dialogue: dict[str, Any] = {"partition_by": [F("dialogue_id")]}
    turns = (
        Turn.objects.filter(_counted_dialogues([counting], via="dialogue__"))
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


def _plasticity(counting: Counting) -> list[PlasticityStep]:
    """Consecutive verified attempts of each dialogue, counted by the teacher turn between them:
    each attempt is paired with the previous one (a window over the dialogue's attempts), and
    the pairs are counted in one grouped pass."""
    in_dialogue_order: dict[str, Any] = {
        "partition_by": [F("dialogue_id")],
        "order_by": F("index").asc(),
    }
    attempts = (
        Turn.objects.filter(
            _counted_dialogues([counting], via="dialogue__"), role=Turn.Role.STUDENT,
            kind=Turn.Kind.ATTEMPT, is_correct__isnull=False,
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


def _student_turn_kinds(counting: Counting) -> list[TurnKinds]:
    rows = (
        Turn.objects.filter(
            _counted_dialogues([counting], via="dialogue__"), role=Turn.Role.STUDENT
        )
        .values("round", "kind")
        .annotate(n=Count("id"))
        .order_by()
    )
    by_round: dict[int, dict[str, int]] = defaultdict(dict)
    for row in rows:
        by_round[row["round"]][row["kind"]] = row["n"]
    return [TurnKinds(turn, counts) for turn, counts in sorted(by_round.items())]


def _feedback_use_by_run(runs: Sequence[Counting]) -> dict[int, list[FeedbackUseTurn]]:
    """``{run id: feedback use per turn}`` over the counted dialogues' checked moves (the turns
    whose move the engine checked: ``move_valid`` not null), in one query grouped by run and
    turn. A run without checked moves (its tasks' feedback cannot be checked, or it was played
    before moves were checked) has none."""
    later = Q(move_consistent__isnull=False)
    rows = (
        Turn.objects.filter(_counted_dialogues(runs, via="dialogue__"), move_valid__isnull=False)
        .values("round", run=F("dialogue__run_id"))
        .annotate(
            moves=Count("id"),
            valid=Count("id", filter=Q(move_valid=True)),
            later=Count("id", filter=later),
            consistent=Count("id", filter=Q(move_consistent=True)),
            chance_sum=Sum("move_chance", filter=later, default=0.0),
            chance_counted=Count("move_chance", filter=later),
        )
        .order_by("run", "round")
    )
    by_run: dict[int, list[FeedbackUseTurn]] = defaultdict(list)
    for row in rows:
        by_run[row.pop("run")].append(
            FeedbackUseTurn(
                turn=row.pop("round"), chance_sum=float(row.pop("chance_sum")),
                **{key: int(value) for key, value in row.items()},
            )
        )  # fmt: skip
    return by_run


def runs_feedback_use(*, runs: Sequence[Run]) -> dict[int, list[FeedbackUseTurn]]:
    """Feedback use per turn of several runs over their counted whole dialogues (none while
    only a first batch in play is counted), in two or three queries whatever their number."""
    whole = [c for c in countings(runs=runs).values() if c.counted.whole_dialogues]
    return _feedback_use_by_run(whole) if whole else {}


def _task_group_counts(counting: Counting, max_turns: int) -> list[dict[str, Any]]:
    """Dialogues, solved and the sum of solving turns per (domain, difficulty): one query whose
    rows are bounded by the distinct task groups, not by the dialogues."""
    solved = _solved_by(max_turns)
    return list(
        Dialogue.objects.filter(_counted_dialogues([counting]))
        .values(domain=F("task__domain"), difficulty=F("task__difficulty"))
        .annotate(
            n=Count("id"),
            solved=Count("id", filter=solved),
            # After values(), Django checks the name against the values' names only, not
            # against Dialogue's fields (Dialogue.turns) as the stubs' plugin does.
            turns=Sum("first_correct_turn", filter=solved, default=0),  # type: ignore[no-redef]
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
    """Every figure of one run, over the dialogues it counts: a fixed number of queries (seven,
    eight for a sharded run, one more while its batch in play is left out, one more while a
    person plays in it), whatever its size. While only the batch in play is counted, the
    figures that need whole dialogues are left empty."""
    max_turns = run_max_turns(run)
    sharded = run_is_sharded(run)
    counting = countings(runs=[run])[run.pk]
    turn_counts = _turn_counts_by_run([counting]).get(run.pk, TurnCounts())
    metrics = RunMetrics(
        max_turns=max_turns,
        sharded=sharded,
        counted=counting.counted,
        accuracy_by_turn=_curve(counting),
        turns_to_solve=mean_from_histogram({}),
        pass_at_k=[],
        turn_counts=turn_counts,
        accounting=Accounting.from_json(run.accounting),
        batch=counting.batch,
    )
    if not counting.counted.whole_dialogues:
        return metrics
    groups = _task_group_counts(counting, max_turns)
    pass_counts = _pass_at_k_counts_by_run([counting]).get(run.pk, {})
    samples = run.frozen_config.samples_per_task
    solved_at = {turn: n for turn, n in counting.solved_at.items() if turn <= max_turns}
    if sharded:
        turn_counts = replace(turn_counts, **_premature_attempts(counting))
    return replace(
        metrics,
        turns_to_solve=mean_from_histogram(solved_at),
        pass_at_k=pass_at_k_curve(pass_counts, samples),
        pass_at_k_tasks_left_out=pass_at_k_tasks_left_out(pass_counts, samples),
        turn_counts=turn_counts,
        by_domain=_breakdown(groups, "domain"),
        by_difficulty=_breakdown(groups, "difficulty"),
        plasticity=_plasticity(counting),
        student_turn_kinds=_student_turn_kinds(counting),
        feedback_use=_feedback_use_by_run([counting]).get(run.pk, []),
    )


def _pass_at_samples(run: Run, counts: dict[tuple[int, int], int]) -> PassAtK | None:
    """pass@K, K the samples per task the run asked for (pass@1 for one sample a task, as the
    run's page gives it); None before any task has all its samples counted."""
    curve = pass_at_k_curve(counts, run.frozen_config.samples_per_task)
    return curve[-1] if curve else None


def run_summaries(*, runs: Sequence[Run]) -> dict[int, RunSummary]:
    """The runs table's figures for these evaluation runs (training runs have none): four
    grouped queries, whatever the number of runs and dialogues."""
    evaluations = [run for run in runs if run.kind == Run.Kind.EVAL]
    if not evaluations:
        return {}
    counted_runs = countings(runs=evaluations)
    counts = _turn_counts_by_run(list(counted_runs.values()))
    whole = [c for c in counted_runs.values() if c.counted.whole_dialogues]
    pass_counts = _pass_at_k_counts_by_run(whole) if whole else {}
    summaries = {}
    for run in evaluations:
        counting = counted_runs[run.pk]
        turn_counts = counts.get(run.pk, TurnCounts())
        summaries[run.pk] = RunSummary(
            max_turns=run_max_turns(run),
            counted=counting.counted,
            accuracy_by_turn=_curve(counting),
            pass_at_k=_pass_at_samples(run, pass_counts.get(run.pk, {})),
            turn_counts=turn_counts,
            spent=spent(
                Accounting.from_json(run.accounting),
                turn_counts,
                elapsed_seconds=run.elapsed_seconds,
            ),
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


def run_is_running(*, run_id: int) -> bool:
    return Run.objects.filter(pk=run_id, status=Run.Status.RUNNING).exists()


@dataclass(frozen=True)
class RunToPlay:
    """What a worker reads of the evaluation it claimed: its frozen configuration, how many
    times it was claimed (more than once: it resumes) and how far the last worker's batch got."""

    config: RunConfig
    attempts: int
    batch_in_play: BatchInPlay


def run_to_play(*, run_id: int) -> RunToPlay:
    run = Run.objects.get(pk=run_id)
    return RunToPlay(
        config=run.frozen_config,
        attempts=run.attempts,
        batch_in_play=BatchInPlay.from_json(run.batch_in_play),
    )


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


def task_outcomes(*, runs: Sequence[Run]) -> dict[int, dict[int, TaskOutcomes]]:
    """``{run id: {task id: its counted dialogues' outcomes}}``: what comparisons pair. A run
    whose counted dialogues are not whole yet (its first batch in play) has none. Three
    queries, whatever the number of runs."""
    whole = [c for c in countings(runs=runs).values() if c.counted.whole_dialogues]
    if not whole:
        return {}
    rows = (
        Dialogue.objects.filter(_counted_dialogues(whole))
        .values("run_id", "task_id", "first_correct_turn")
        .annotate(n=Count("id"))
        .order_by()
    )
    histograms: dict[int, dict[int, dict[int | None, int]]] = defaultdict(lambda: defaultdict(dict))
    for row in rows:
        histograms[row["run_id"]][row["task_id"]][row["first_correct_turn"]] = row["n"]
    max_turns = {c.run.pk: run_max_turns(c.run) for c in whole}
    return {
        run_id: {
            task_id: outcomes_from_histogram(histogram, max_turns[run_id])
            for task_id, histogram in tasks.items()
        }
        for run_id, tasks in histograms.items()
    }


def keyed_task_outcomes(*, runs: Sequence[Run]) -> dict[int, dict[str, TaskOutcomes]]:
    """``task_outcomes`` with tasks named by ``task_key`` (their prompt and reference), so that
    runs on different task sets or versions pair on the tasks they share."""
    outcomes = task_outcomes(runs=runs)
    keys = task_keys(task_ids={task for tasks in outcomes.values() for task in tasks})
    return {
        run_id: {keys[task]: result for task, result in tasks.items()}
        for run_id, tasks in outcomes.items()
    }


def runs_compared(*, baseline: Run, other: Run) -> list[Gap]:
    """``other`` against ``baseline`` after each turn, paired over the tasks both played: the
    method of every comparison page (``webapp.metrics.comparison``)."""
    outcomes = keyed_task_outcomes(runs=[baseline, other])
    turns = max(run_max_turns(baseline), run_max_turns(other))
    return compare_outcomes(outcomes.get(baseline.pk, {}), outcomes.get(other.pk, {}), turns)
