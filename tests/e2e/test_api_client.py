"""A notebook's loop through the Python client, against a live server and a real Celery worker:
make a task set, launch a small grid of evaluations on it, wait for them, read their figures
(which equal the run page's metrics CSV) and compare them (as the compare page does)."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from dialab_client import Dialab, DialabError
from django.test import Client
from django.urls import reverse

from tests.factories import (
    ProtocolFactory,
    StudentFactory,
    TeacherFactory,
    UserFactory,
)
from webapp.api import tokens
from webapp.dialogues.models import Dialogue
from webapp.experiments.comparison import compare, selected_runs

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_a_grid_launched_from_the_client_plays_and_reads_as_its_pages(
    worker: Any, live_server: Any
) -> None:
    student, teacher = StudentFactory(), TeacherFactory()
    protocols = [ProtocolFactory(max_turns=2), ProtocolFactory(max_turns=4)]
    researcher = UserFactory(role="researcher")
    with Dialab(live_server.url, tokens.issue_token(user=researcher, name="grid")[1]) as lab:
        assert {p.id for p in lab.protocols.list()} == {p.pk for p in protocols}
        task_set = lab.task_sets.create("Sums from a notebook")
        sums = [
            {"prompt": f"What is {n} + {n}?", "reference": {"answer": str(2 * n)}} for n in range(4)
        ]
        lab.task_sets.add(task_set.id, sums)
        with pytest.raises(DialabError) as refused:  # the protocol needs a teacher
            lab.runs.launch(task_set=task_set.id, protocol=protocols[0].pk, student=student.pk)
        assert "teacher" in refused.value.problems
        launched = [
            lab.runs.launch(
                task_set=task_set.id,
                protocol=protocol.pk,
                student=student.pk,
                teacher=teacher.pk,
                seed=seed,
                name=f"grid {protocol.max_turns} turns, seed {seed}",
            )
            for protocol in protocols
            for seed in (0, 1)
        ]
        runs = lab.runs.wait([run.id for run in launched], poll_seconds=0.5, timeout=120)
        assert [run.status for run in runs] == ["succeeded"] * 4, worker.output()
        figures = lab.runs.figures([run.id for run in runs])
        listed = list(lab.dialogues.iter(f"run={runs[0].id}"))
        compared = lab.runs.compare([run.id for run in runs])

    assert len(listed) == 4 == Dialogue.objects.filter(run_id=runs[0].id).count()
    page = Client()
    page.force_login(researcher)
    for run in runs:
        download = page.get(reverse("run_metrics_csv", args=[run.id])).content.decode()
        on_page = {
            int(row["k"]): float(row["value"])
            for row in csv.DictReader(io.StringIO(download))
            if row["metric"] == "accuracy_after_turn" and row["value"]
        }
        assert figures.accuracy_after_turn(run.id) == pytest.approx(on_page)
    table = figures.to_pandas()
    assert set(table.run) == {run.id for run in runs}
    # Two lines (a protocol each, its two seeds pooled), the second against the first, paired.
    on_compare_page = compare(
        selected_runs([run.id for run in runs]), baseline_run_id=None, by_seed=True
    )
    assert [line.runs for line in compared.lines] == [
        [run.pk for run in line.runs] for line in on_compare_page.lines
    ]
    (gaps,) = on_compare_page.gaps
    assert [gap.value for gap in compared.lines[1].gaps] == pytest.approx(
        [gap.value for gap in gaps.gaps]
    )
