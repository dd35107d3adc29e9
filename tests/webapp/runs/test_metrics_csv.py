"""The metrics CSV: tidy long format, the same numbers as the page, researchers only."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from django.urls import reverse

from tests.factories import TaskSetFactory
from tests.transcript_builders import make_run
from webapp.metrics.export import CSV_COLUMNS
from webapp.runs.models import Run

pytestmark = pytest.mark.django_db


def download(client: Any, run: Run) -> list[dict[str, str]]:
    response = client.get(reverse("run_metrics_csv", args=[run.pk]))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert response["Content-Disposition"] == f'attachment; filename="run-{run.pk}-metrics.csv"'
    reader = csv.DictReader(io.StringIO(response.content.decode()))
    assert tuple(reader.fieldnames or ()) == CSV_COLUMNS
    return list(reader)


def find(rows: list[dict[str, str]], metric: str, **where: str) -> list[dict[str, str]]:
    return [r for r in rows if r["metric"] == metric and all(r[k] == v for k, v in where.items())]


def test_csv_holds_accuracy_by_turn_and_the_other_metrics(researcher_client, corpus) -> None:  # type: ignore[no-untyped-def]
    Run.objects.filter(pk=corpus["run_a"].pk).update(accounting={"teacher_calls": 3})
    rows = download(researcher_client, corpus["run_a"])
    by_turn = find(rows, "accuracy_after_turn")
    assert [r["k"] for r in by_turn] == ["1", "2", "3", "4", "5"]
    assert [(r["successes"], r["n"]) for r in by_turn] == [("1", "3"), ("1", "3"), ("2", "3"),
                                                           ("2", "3"), ("2", "3")]  # fmt: skip
    third = by_turn[2]
    assert float(third["value"]) == pytest.approx(2 / 3, abs=1e-6)
    assert float(third["low"]) == pytest.approx(0.2077, abs=1e-4)  # Wilson 2/3
    assert float(third["high"]) == pytest.approx(0.9385, abs=1e-4)
    assert find(rows, "single_turn_accuracy", k="1")[0]["successes"] == "1"
    assert [(r["k"], r["value"], r["n"], r["low"]) for r in find(rows, "pass_at_k")] == [
        ("1", "0.5", "2", ""),
    ], "one sample per task asked for"
    assert find(rows, "partial")[0]["value"] == "1", "the corpus runs are queued"
    assert (
        find(rows, "counted_dialogues")[0]["value"],
        find(rows, "counted_dialogues")[0]["n"],
    ) == ("3", "3")
    [turns] = find(rows, "mean_turns_to_solve")
    assert (turns["value"], turns["n"]) == ("2.0", "2")
    [leak] = find(rows, "leak_rate")
    assert (leak["successes"], leak["n"]) == ("1", "3")
    assert find(rows, "question_rate_per_student_turn")[0]["n"] == "6"
    assert find(rows, "dialogues_with_a_question")[0]["successes"] == "1"
    assert not find(rows, "premature_attempt_rate"), "not a sharded run"
    [domain] = find(rows, "accuracy_by_domain")
    assert (domain["group"], domain["successes"], domain["n"]) == ("arithmetic", "2", "3")
    assert find(rows, "accuracy_by_difficulty", group="(none)")
    assert find(rows, "accounting", group="teacher_calls")[0]["value"] == "3"


def test_csv_of_a_run_without_dialogues_has_empty_values(researcher_client) -> None:  # type: ignore[no-untyped-def]
    rows = download(researcher_client, make_run("empty", TaskSetFactory()))
    by_turn = find(rows, "accuracy_after_turn")
    assert len(by_turn) == 5 and all(r["value"] == "" and r["n"] == "" for r in by_turn)
    assert find(rows, "counted_dialogues")[0]["value"] == "0"
    assert not find(rows, "pass_at_k") and not find(rows, "mean_turns_to_solve")


def test_the_run_page_links_to_its_csv(researcher_client, corpus) -> None:  # type: ignore[no-untyped-def]
    html = researcher_client.get(reverse("run_detail", args=[corpus["run_a"].pk])).content.decode()
    assert f'href="{reverse("run_metrics_csv", args=[corpus["run_a"].pk])}"' in html


def test_annotators_cannot_download_metrics(annotator_client, corpus) -> None:  # type: ignore[no-untyped-def]
    response = annotator_client.get(reverse("run_metrics_csv", args=[corpus["run_a"].pk]))
    assert response.status_code == 403
    assert b"accuracy_after_turn" not in response.content
