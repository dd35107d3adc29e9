"""The comparison page: seeds as lines, the paired gap with its interval and test, the
configuration diff, tasks matched across task set versions, and every figure as a file."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from tests.factories import (
    ProtocolFactory,
    StudentFactory,
    TaskFactory,
    TaskSetFactory,
    frozen_run,
)
from tests.transcript_builders import NAMES, attempt, feedback, move, store
from tests.webapp.experiments.builders import base_and_trained_seeds, play
from webapp.experiments.comparison import compare, selected_runs
from webapp.runs.models import Protocol

pytestmark = pytest.mark.django_db


def _url(runs, **extra) -> str:  # type: ignore[no-untyped-def]
    return "/experiments/compare/?" + urlencode(
        [("runs", run.pk) for run in runs] + list(extra.items())
    )


def test_seeds_become_one_line_each_and_the_trained_gap_is_significant() -> None:
    runs = base_and_trained_seeds()
    result = compare(
        runs["base"] + runs["trained"], baseline_run_id=runs["base"][0].pk, by_seed=True
    )
    base, trained = result.lines
    assert result.baseline is base
    assert base.seeds == [0, 1, 2] and len(trained.runs) == 3
    assert "3 seeds" in base.label and base.interval_name == "95% t interval over 3 seeds"
    final = base.points[-1]
    assert final.n == 3 and final.low < final.value < final.high
    (gap,) = result.gaps
    assert gap.line is trained
    assert gap.final.tasks == 30
    assert gap.final.value > 0.2 and gap.final.low > 0 and gap.final.p_value < 0.01
    # Both lines ran seeds 0, 1 and 2: only the student differs.
    assert [name for name, _ in result.config_diff] == ["student.id", "student.name"]


def test_without_seed_grouping_each_run_is_a_line_with_wilson_intervals() -> None:
    runs = base_and_trained_seeds(tasks=10)
    result = compare(runs["base"], baseline_run_id=None, by_seed=False)
    assert len(result.lines) == 3 and len(result.gaps) == 2
    assert result.lines[0].interval_name.startswith("95% Wilson")
    assert result.lines[0].points[0].n == 10


def test_runs_on_two_versions_pair_only_the_tasks_both_hold() -> None:
    old = TaskSetFactory(name="sums", version=1)
    new = TaskSetFactory(name="sums", version=2)
    shared = ["1 + 1 = ?", "2 + 2 = ?", "3 + 3 = ?"]
    old_tasks = [TaskFactory(task_set=old, prompt=p, reference={"answer": "x"}) for p in shared]
    new_tasks = [TaskFactory(task_set=new, prompt=p, reference={"answer": "x"}) for p in shared]
    new_tasks.append(TaskFactory(task_set=new, prompt="new task", reference={"answer": "y"}))
    first = frozen_run(name="on v1", task_set=old)
    second = frozen_run(name="on v2", task_set=new)
    play(first, {task.pk: None for task in old_tasks})
    play(second, {task.pk: 1 for task in new_tasks})
    result = compare([first, second], baseline_run_id=first.pk, by_seed=True)
    assert result.gaps[0].final.tasks == 3
    assert result.gaps[0].final.value == pytest.approx(1.0)
    assert "different task sets or versions" in result.notes[0]
    assert "sums v1 (3 tasks); sums v2 (4 tasks)" in result.notes[0]


def test_the_page_shows_the_gap_its_interval_and_its_test(researcher_client) -> None:  # type: ignore[no-untyped-def]
    runs = base_and_trained_seeds()
    response = researcher_client.get(_url(runs["base"] + runs["trained"]))
    assert response.status_code == 200
    page = response.content.decode()
    assert 'id="gap-table"' in page and "pts" in page and "significant at 5%" in page
    assert "95% t interval over 3 seeds" in page
    assert page.count('data-format="svg"') == 2  # the curves and the differences


def test_an_empty_selection_says_how_to_make_one(researcher_client) -> None:  # type: ignore[no-untyped-def]
    response = researcher_client.get("/experiments/compare/?runs=999")
    assert 'id="no-comparison"' in response.content.decode()
    assert selected_runs([999]) == []


@pytest.mark.parametrize(
    ("file_format", "start", "content_type"),
    [("svg", b"<?xml", "image/svg+xml"), ("png", b"\x89PNG", "image/png"),
     ("pdf", b"%PDF", "application/pdf"), ("csv", b"series,x,y,low,high", "text/csv")],
)  # fmt: skip
def test_each_figure_downloads_as_a_file(
    researcher_client, file_format, start, content_type
) -> None:  # type: ignore[no-untyped-def]
    runs = base_and_trained_seeds(tasks=8)
    response = researcher_client.get(
        _url(runs["base"] + runs["trained"], figure="difference", download=file_format)
    )
    assert response.status_code == 200
    assert response["Content-Type"].startswith(content_type)
    assert response.content.startswith(start)
    assert f'filename="comparison-difference.{file_format}"' in response["Content-Disposition"]


def test_an_unknown_format_or_figure_is_not_found(researcher_client) -> None:  # type: ignore[no-untyped-def]
    runs = base_and_trained_seeds(tasks=4)
    assert researcher_client.get(_url(runs["base"], download="gif")).status_code == 404
    assert (
        researcher_client.get(_url(runs["base"], figure="nope", download="svg")).status_code == 404
    )


def test_a_single_turn_baseline_is_compared_at_every_turn_as_it_stood_after_its_one() -> None:
    task_set = TaskSetFactory(name="sums")
    tasks = [TaskFactory(task_set=task_set).pk for _ in range(10)]
    one_turn = frozen_run(
        name="one turn", task_set=task_set,
        protocol=ProtocolFactory(mode=Protocol.Mode.SINGLE_TURN, max_turns=1),
    )  # fmt: skip
    taught = frozen_run(name="taught", task_set=task_set, protocol=ProtocolFactory(max_turns=3))
    play(one_turn, {task: 1 if task in tasks[:3] else None for task in tasks})
    play(taught, {task: 1 if task in tasks[:3] else 3 for task in tasks})
    (gap,) = compare([one_turn, taught], baseline_run_id=one_turn.pk, by_seed=True).gaps
    assert [round(point.value, 6) for point in gap.gaps] == [0.0, 0.0, 0.7]
    assert gap.final.turn == 3 and gap.final.p_value < 0.05


def _guessing(run, task, consistent: list[bool]) -> None:  # type: ignore[no-untyped-def]
    """One dialogue per entry: a first guess, "too high", then a consistent guess or not."""
    for sample, agrees in enumerate(consistent):
        store(run, task.pk, sample, NAMES[sample], [
            move("50", valid=True), feedback("Too high."),
            move("20" if agrees else "70", valid=True, consistent=agrees, chance=0.5),
        ])  # fmt: skip


def test_feedback_use_stands_beside_accuracy_for_each_line(researcher_client) -> None:  # type: ignore[no-untyped-def]
    task = TaskFactory(domain="guess_number")
    student, protocol = StudentFactory(), ProtocolFactory(max_turns=3)
    reader = frozen_run(name="reads", task_set=task.task_set, student=student, protocol=protocol)
    rereads = frozen_run(
        name="reads again", task_set=task.task_set, student=student, protocol=protocol, seed=1
    )
    guesser = frozen_run(name="guesses", task_set=task.task_set, protocol=protocol)
    unchecked = frozen_run(name="before", task_set=task.task_set, protocol=protocol)
    _guessing(reader, task, [True, True])
    _guessing(rereads, task, [True, False])
    _guessing(guesser, task, [False, False])
    store(unchecked, task.pk, 0, "a_first", [attempt("50", "50", False)])
    runs = [reader, rereads, guesser, unchecked]

    result = compare(runs, baseline_run_id=None, by_seed=False)
    assert result.feedback_turns == [2], "consistency needs earlier feedback: from turn 2"
    *recorded, before = [row for _, row in result.feedback_use]
    shares = [row.cells[0].consistent_share for row in recorded]
    assert [(s.successes, s.total) for s in shares] == [(2, 2), (1, 2), (0, 2)]
    assert not before.recorded and recorded[0].cells[0].chance == 0.5

    seeds = compare(runs, baseline_run_id=None, by_seed=True)
    line, pooled = seeds.feedback_use[0]
    assert len(line.runs) == 2 and pooled.cells[0].consistent_share.successes == 3
    assert pooled.cells[0].consistent_share.total == 4

    page = researcher_client.get(_url(runs, seeds="0")).content.decode()
    table = page.split('id="feedback-use-table"')[1].split("</table>")[0]
    assert "100.0%" in table and "[34.2–100.0%]" in table and "chance 50.0%" in table
    assert "played before feedback use was measured" in table


def test_no_feedback_use_section_when_no_line_has_checked_moves(researcher_client) -> None:  # type: ignore[no-untyped-def]
    runs = base_and_trained_seeds(tasks=4)
    result = compare(runs["base"] + runs["trained"], baseline_run_id=None, by_seed=True)
    assert result.feedback_turns == [] and result.feedback_use == []
    page = researcher_client.get(_url(runs["base"] + runs["trained"])).content.decode()
    assert 'id="feedback-use"' not in page
