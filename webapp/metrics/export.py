"""A run's figures in the tidy long form of its metrics CSV: one row per number."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from webapp.metrics.figures import RunMetrics
from webapp.metrics.stats import Proportion, wilson_interval

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
    """The run's figures, columns CSV_COLUMNS. Empty cells mean "not applicable" or "not known
    yet" (no interval for pass@k, no k for a rate, a turn the counted dialogues have not
    reached). The first rows say what the figures count."""
    counted = metrics.counted
    yield {"metric": "partial", "value": int(counted.partial)}
    yield {"metric": "counted_dialogues", "value": counted.dialogues, "n": counted.expected}
    yield {"metric": "counted_through_turn", "value": counted.through_turn}
    yield {"metric": "stored_not_counted", "value": counted.stored_not_counted}
    for point in metrics.accuracy_by_turn:
        if point.accuracy is None:
            yield {"metric": "accuracy_after_turn", "k": point.turn}
        else:
            yield _proportion_row("accuracy_after_turn", point.accuracy, k=point.turn)
    if metrics.single_turn_accuracy is not None:
        yield _proportion_row("single_turn_accuracy", metrics.single_turn_accuracy, k=1)
    for estimate in metrics.pass_at_k:
        yield {"metric": "pass_at_k", "k": estimate.k, "value": estimate.value, "n": estimate.tasks}
    if counted.whole_dialogues:  # the rest needs whole dialogues
        yield from _whole_dialogue_rows(metrics)
    for key, value in metrics.accounting.to_json().items():
        yield {"metric": "accounting", "group": key, "value": value}


def _whole_dialogue_rows(metrics: RunMetrics) -> Iterable[dict[str, Any]]:
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
    for point in metrics.feedback_use:
        yield _proportion_row("valid_move_share", point.valid_share, k=point.turn)
        if point.later:  # no move at turn 1 has earlier feedback to agree with
            yield _proportion_row("consistent_move_share", point.consistent_share, k=point.turn)
            yield {
                "metric": "consistent_move_chance", "k": point.turn, "value": point.chance,
                "n": point.chance_counted,
            }  # fmt: skip


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
