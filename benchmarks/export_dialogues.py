"""Benchmark transcript exports: peak memory stays flat as the export grows.

    .venv/bin/python benchmarks/export_dialogues.py                      # SQLite (throwaway)
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/dialab \\
        .venv/bin/python benchmarks/export_dialogues.py --sizes 2000 20000

Into a throwaway database the script creates and drops, it stores N dialogues of 6 turns with a
turn label and a dialogue label each, then writes the JSONL export (webapp.transcripts.exporting,
the code path of the download and the command) to /dev/null, and the Hugging Face dataset to a
temporary folder. The baseline, measured in the same run, is the naive export: every dialogue
with its turns and labels loaded at once (``list(...prefetch_related(...))``), then written.
Peak memory is tracemalloc's peak (Python objects; Arrow's own buffers are not counted) during
a traced run; timings come from an untraced run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

import django

django.setup()

from django.db import connection  # noqa: E402
from django.test.utils import setup_databases, teardown_databases  # noqa: E402

from webapp.accounts.models import User  # noqa: E402
from webapp.annotations.models import Annotation, LabelQuestion, LabelSchema  # noqa: E402
from webapp.dialogues.models import Dialogue, Turn  # noqa: E402
from webapp.models_registry.models import ModelSpec  # noqa: E402
from webapp.runs.models import Protocol, Run  # noqa: E402
from webapp.tasks.models import Task, TaskSet  # noqa: E402
from webapp.transcripts import exporting  # noqa: E402
from webapp.transcripts.filters import DialogueFilters  # noqa: E402

TURNS = 6


def populate(count: int) -> None:
    """Add dialogues until there are ``count`` (bulk inserts, 2,000 at a time)."""
    have = Dialogue.objects.count()
    if have >= count:
        return
    run = Run.objects.first()
    if run is None:
        task_set = TaskSet.objects.create(name="bench")
        run = Run.objects.create(
            name="bench", task_set=task_set,
            student=ModelSpec.objects.create(name="s", backend="scripted", location="x"),
            protocol=Protocol.objects.create(name="p"), config={}, config_hash="0" * 64,
        )  # fmt: skip
        schema = LabelSchema.objects.create(name="bench")
        LabelQuestion.objects.create(schema=schema, key="q", text="q", kind="rating",
                                     target="teacher_turn", options=[1, 5])  # fmt: skip
        User.objects.create(username="bench")
    question, author = LabelQuestion.objects.first(), User.objects.first()
    for start in range(have, count, 2000):
        size = min(2000, count - start)
        tasks = Task.objects.bulk_create(
            Task(task_set=run.task_set, position=start + n, prompt=f"What is {start + n}?",
                 reference={"answer": str(start + n)})
            for n in range(size)
        )  # fmt: skip
        dialogues = Dialogue.objects.bulk_create(
            Dialogue(run=run, task=task, seed=n, outcome="unsolved", num_turns=TURNS // 2,
                     end_reason="max_turns")
            for n, task in enumerate(tasks)
        )  # fmt: skip
        turns = Turn.objects.bulk_create(
            Turn(dialogue=d, index=i, round=i // 2 + 1, role=("student", "teacher")[i % 2],
                 kind=("attempt", "feedback")[i % 2], text="words " * 40,
                 private_context={"reference": "x" * 50}, verdict_details={"expected": "1"})
            for d in dialogues
            for i in range(TURNS)
        )  # fmt: skip
        Annotation.objects.bulk_create(
            [Annotation(question=question, dialogue_id=t.dialogue_id, turn=t, author=author,
                        value=3) for t in turns if t.index == 1]
            + [Annotation(question=question, dialogue=d, author=author, value="ok")
               for d in dialogues]
        )  # fmt: skip


def export_jsonl() -> int:
    count = 0
    with open(os.devnull, "w", encoding="utf-8") as out:
        for line in exporting.jsonl_lines(filters=DialogueFilters()):
            out.write(line)
            count += 1
    return count


def export_hf() -> int:
    with tempfile.TemporaryDirectory() as folder:
        return exporting.save_hf_dataset(filters=DialogueFilters(), path=Path(folder) / "ds")


def export_naive() -> int:
    """Everything in memory at once."""
    dialogues = list(
        Dialogue.objects.select_related("run", "task").prefetch_related(
            "turns", "annotations__question", "annotations__author"
        )
    )
    with open(os.devnull, "w", encoding="utf-8") as out:
        for d in dialogues:
            record = {
                "id": d.pk,
                "turns": [{"index": t.index, "text": t.text} for t in d.turns.all()],
                "labels": [{"value": a.value} for a in d.annotations.all()],
            }
            out.write(json.dumps(record) + "\n")
    return len(dialogues)


def measure(function: Callable[[], int]) -> tuple[int, float, float]:
    started = time.perf_counter()
    count = function()
    wall = time.perf_counter() - started
    tracemalloc.start()
    function()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return count, wall, peak / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 20000])
    sizes = sorted(parser.parse_args().sizes)
    databases = setup_databases(verbosity=0, interactive=False)
    try:
        print(f"database: {connection.vendor} · chunk {exporting.EXPORT_CHUNK} · {TURNS} turns")
        print(f"{'dialogues':>9} {'path':<14} {'wall s':>8} {'dialogues/s':>12} {'peak MiB':>9}")
        for size in sizes:
            populate(size)
            for name, function in (
                ("jsonl", export_jsonl),
                ("hf dataset", export_hf),
                ("naive baseline", export_naive),
            ):
                count, wall, peak = measure(function)
                print(f"{count:>9} {name:<14} {wall:>8.2f} {count / wall:>12.0f} {peak:>9.1f}")
    finally:
        teardown_databases(databases, verbosity=0)


if __name__ == "__main__":
    main()
