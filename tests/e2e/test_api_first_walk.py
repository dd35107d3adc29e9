"""The docs' worked example (docs/examples/first_walk.py), run as a reader would run it: the
demo project on a live server, a real worker, the Python client with a researcher's token. Its
numbers are the pages' own."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
from dialab_client import Dialab

from webapp.api import tokens
from webapp.demo.services import demo_project_create
from webapp.experiments.comparison import compare, selected_runs

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "first_walk.py"


def load_example() -> Any:
    spec = importlib.util.spec_from_file_location("first_walk", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_docs_first_walk_runs_on_the_demo(
    worker: Any, live_server: Any, tmp_path: Path, capsys: Any
) -> None:
    demo = demo_project_create(task_count=5, launch_run=False)
    token = tokens.issue_token(user=demo.user, name="notebook")[1]
    with Dialab(live_server.url, token) as lab:
        walked = load_example().first_walk(lab, seeds=(0, 1), draw_to=str(tmp_path / "c.html"))
    out = capsys.readouterr().out
    assert "Acting as demo" in out and "Drew the comparison" in out
    assert (tmp_path / "c.html").read_text().count("accuracy after turn k") == 1
    runs = walked["runs"]
    assert len(runs) == 4 and {run.status for run in runs} == {"succeeded"}, worker.output()
    single_line, didactic_line = walked["comparison"].lines
    page = compare(
        selected_runs([run.id for run in runs]), baseline_run_id=runs[0].id, by_seed=True
    )
    assert [p.value for p in didactic_line.points] == [p.value for p in page.lines[1].points]
    (gaps,) = page.gaps
    assert [g.value for g in didactic_line.gaps] == [g.value for g in gaps.gaps]
    assert single_line.max_turns == 1 and didactic_line.max_turns == 5
