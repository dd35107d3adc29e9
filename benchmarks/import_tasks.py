"""Benchmark task imports: throughput, and memory that stays flat as files grow.

    .venv/bin/python benchmarks/import_tasks.py                     # SQLite (a throwaway file)
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/dialab \
        .venv/bin/python benchmarks/import_tasks.py

It writes 10,000- and 100,000-task JSONL files to a temporary folder and imports each through
the real code path (webapp.tasks.imports: streaming reader, mapping, validation, batched
bulk_create in one transaction; no Celery), into a throwaway database the script creates and
drops. The baseline, measured in the same run, is the least an import can do: json.loads of
every line and bulk_create of the same tasks in the same batches, with no mapping or checks.
Peak memory is tracemalloc's peak during a second, traced run (tracing slows Python down, so
timings come from the untraced run).
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

from django.db import connection, transaction  # noqa: E402
from django.test.utils import setup_databases, teardown_databases  # noqa: E402

from webapp.tasks.imports.mapping import FieldMapping  # noqa: E402
from webapp.tasks.imports.services import BATCH_SIZE, import_into_task_set  # noqa: E402
from webapp.tasks.imports.sources import file_source  # noqa: E402
from webapp.tasks.models import Task, TaskSet  # noqa: E402

MAPPING = FieldMapping(
    {"prompt": "question", "answer": "answer", "difficulty": "level", "tags": "tags",
     "external_id": "id"},
    {"verifier_kind": "numeric", "domain": "arithmetic"},
)  # fmt: skip


def write_tasks(path: Path, count: int) -> None:
    with path.open("w", encoding="utf-8") as out:
        for n in range(count):
            record = {
                "id": f"bench-{n}",
                "question": f"What is {n} + {n + 1}? Answer with a number.",
                "answer": str(2 * n + 1),
                "level": n % 5,
                "tags": ["bench", "sum"],
            }
            out.write(json.dumps(record) + "\n")


def import_dialab(path: Path) -> int:
    with path.open("rb") as stream:
        source = file_source(stream, file_format="jsonl", mapping=MAPPING)
        task_set = import_into_task_set(source=source, task_set_name=path.stem)
    return task_set.tasks.count()


def import_baseline(path: Path) -> int:
    """json.loads + bulk_create, nothing else."""
    with transaction.atomic(), path.open("rb") as stream:
        task_set = TaskSet.objects.create(name="baseline")
        batch: list[Task] = []
        for index, line in enumerate(stream):
            record = json.loads(line)
            batch.append(
                Task(task_set=task_set, position=index, prompt=record["question"],
                     reference={"answer": record["answer"]})
            )  # fmt: skip
            if len(batch) >= BATCH_SIZE:
                Task.objects.bulk_create(batch)
                batch = []
        Task.objects.bulk_create(batch)
    return task_set.tasks.count()


def measure(run: Callable[[Path], int], path: Path, *, traced: bool) -> tuple[float, int, int]:
    if traced:
        tracemalloc.start()
    started = time.perf_counter()
    count = run(path)
    seconds = time.perf_counter() - started
    peak = 0
    if traced:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    Task.objects.all().delete()
    TaskSet.objects.all().delete()
    return seconds, peak, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]

    folder = Path(tempfile.mkdtemp(prefix="dialab-bench-"))
    test_settings = connection.settings_dict.setdefault("TEST", {})
    test_settings["NAME"] = (
        str(folder / "bench.sqlite3")
        if connection.vendor == "sqlite"
        else f"dialab_bench_{os.getpid()}"
    )
    databases = setup_databases(verbosity=0, interactive=False)
    try:
        print(f"database: {connection.vendor} · batch size {BATCH_SIZE}")
        header = f"{'tasks':>8} {'path':<9} {'wall s':>8} {'tasks/s':>9} {'peak MiB':>9}"
        print(header)
        print("-" * len(header))
        results: dict[tuple[str, int], tuple[float, int]] = {}
        for size in sizes:
            path = folder / f"tasks-{size}.jsonl"
            write_tasks(path, size)
            for name, run in (("baseline", import_baseline), ("dialab", import_dialab)):
                seconds, _, count = measure(run, path, traced=False)
                assert count == size, (name, count)
                _, peak, _ = measure(run, path, traced=True)
                results[(name, size)] = (seconds, peak)
                print(
                    f"{size:>8} {name:<9} {seconds:>8.2f} {size / seconds:>9.0f} "
                    f"{peak / 2**20:>9.1f}"
                )
        small, large = min(sizes), max(sizes)
        print()
        for name in ("baseline", "dialab"):
            ratio = results[(name, large)][1] / results[(name, small)][1]
            growth = f"x{ratio:.2f} (file x{large // small})"
            print(f"{name}: peak memory {large} vs {small} tasks: {growth}")
        for size in sizes:
            slowdown = results[("dialab", size)][0] / results[("baseline", size)][0]
            print(f"dialab vs baseline time at {size} tasks: x{slowdown:.2f}")
        print(f"ru_maxrss of the whole run: {_maxrss_mib():.0f} MiB")
    finally:
        teardown_databases(databases, verbosity=0)


def _maxrss_mib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


if __name__ == "__main__":
    main()
