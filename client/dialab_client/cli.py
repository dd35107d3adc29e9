"""``dialab``: the client's everyday commands for shell scripts and CI.

    export DIALAB_URL=http://127.0.0.1:8000 DIALAB_TOKEN=dialab_...
    dialab runs list --status running
    run=$(dialab runs launch --task-set 3 --protocol 1 --student 2 --teacher 4 --seed 1)
    dialab runs wait 12 13 && dialab runs figures 12 13 --csv > figures.csv
    dialab dialogues list "run=12&outcome=unsolved"
    dialab dialogues export "run=12" > run-12.jsonl
    set=$(dialab tasks import questions.jsonl --name "Sums" --map prompt=question --map answer=a)
    dialab tasks generate guess_number --count 50 --knob high=100
    dialab tasks list

Exit status: 0 when done, 1 when the server refused (its reason on stderr), 2 when a waited-for
run failed or was cancelled.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from dialab_client.client import Dialab
from dialab_client.errors import DialabError
from dialab_client.models import FigureRow, Run

FIGURE_COLUMNS = [name for name in FigureRow.__dataclass_fields__]


def _print_runs(runs: Sequence[Run]) -> None:
    for run in runs:
        print(f"{run.id}\t{run.kind}\t{run.status}\t{run.progress_done}/{run.progress_total}"
              f"\t{run.name}")  # fmt: skip


def _runs(lab: Dialab, args: argparse.Namespace) -> int:
    if args.action == "list":
        _print_runs(lab.runs.list(kind=args.kind, status=args.status))
    elif args.action == "launch":
        run = lab.runs.launch(
            task_set=args.task_set, protocol=args.protocol, student=args.student,
            teacher=args.teacher, user_simulator=args.user_simulator, judge=args.judge,
            samples_per_task=args.samples, seed=args.seed, name=args.name,
        )  # fmt: skip
        print(run.id)
    elif args.action == "wait":
        runs = lab.runs.wait(args.ids, progress=not args.quiet, timeout=args.timeout)
        _print_runs(runs)
        return 0 if all(run.status == "succeeded" for run in runs) else 2
    elif args.action == "figures":
        rows = lab.runs.figures(args.ids).rows
        if args.csv:
            writer = csv.DictWriter(sys.stdout, FIGURE_COLUMNS)
            writer.writeheader()
            writer.writerows(asdict(row) for row in rows)
        else:
            print(json.dumps([asdict(row) for row in rows], indent=2))
    return 0


def _dialogues(lab: Dialab, args: argparse.Namespace) -> int:
    if args.action == "export":
        for record in lab.dialogues.export(args.filter, include_private=args.include_private):
            print(json.dumps(record, ensure_ascii=False))
        return 0
    for row in lab.dialogues.iter(args.filter):
        print(json.dumps(asdict(row)))
    return 0


def _pairs(values: Sequence[str], what: str) -> dict[str, str]:
    """``["prompt=question", ...]`` as a dict (a value may hold "=")."""
    pairs = {}
    for value in values:
        name, equals, column = value.partition("=")
        if not equals or not name:
            raise ValueError(f"--{what} takes name=value, not {value!r}")
        pairs[name.strip()] = column.strip()
    return pairs


def _knob_value(text: str) -> Any:
    """A knob's value as typed: a number or true/false as such, anything else as text (the
    server checks it against the knob's kind)."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _tasks(lab: Dialab, args: argparse.Namespace) -> int:
    if args.action == "list":
        for task_set in lab.task_sets.list(args.query):
            print(f"{task_set.id}\tv{task_set.version}\t{task_set.task_count}\t{task_set.name}")
        return 0
    if args.action == "import":
        job = lab.task_sets.import_file(
            args.file, name=args.name or Path(args.file).stem, file_format=args.format,
            mapping=_pairs(args.map, "map"), verifier_kind=args.verifier_kind,
            domain=args.domain, wait=not args.no_wait, timeout=args.timeout,
        )  # fmt: skip
    else:
        knobs = {name: _knob_value(value) for name, value in _pairs(args.knob, "knob").items()}
        job = lab.task_sets.generate(
            args.family, count=args.count, seed=args.seed, name=args.name, knobs=knobs,
            wait=not args.no_wait, timeout=args.timeout,
        )  # fmt: skip
    print(job.task_set if job.task_set is not None else f"job {job.id}: {job.status}")
    return 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="dialab", description=__doc__.splitlines()[0])
    top.add_argument("--url", help="The server (default: $DIALAB_URL).")
    top.add_argument("--token", help="A personal API token (default: $DIALAB_TOKEN).")
    kinds = top.add_subparsers(dest="command", required=True)

    runs = kinds.add_parser("runs", help="List runs, wait for them, read their figures.")
    actions = runs.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="Runs, newest first, one a line.")
    listing.add_argument("--kind", choices=["eval", "train", "generate"])
    listing.add_argument("--status")
    launch = actions.add_parser("launch", help="Queue an evaluation; prints its id.")
    for role in ("task-set", "protocol", "student"):
        launch.add_argument(f"--{role}", type=int, required=True, help="Its id.")
    for role in ("teacher", "user-simulator", "judge"):
        launch.add_argument(f"--{role}", type=int, help="Its id, where the protocol needs one.")
    launch.add_argument("--samples", type=int, default=1, help="Samples per task (K).")
    launch.add_argument("--seed", type=int, default=0)
    launch.add_argument("--name", default="")
    wait = actions.add_parser("wait", help="Wait until the runs finish.")
    wait.add_argument("ids", type=int, nargs="+")
    wait.add_argument("--timeout", type=float, help="Give up after this many seconds.")
    wait.add_argument("--quiet", action="store_true", help="No progress bar.")
    figures = actions.add_parser("figures", help="The runs' figures (as their metrics CSVs).")
    figures.add_argument("ids", type=int, nargs="+")
    figures.add_argument("--csv", action="store_true", help="CSV instead of JSON.")

    dialogues = kinds.add_parser("dialogues", help="Transcripts, one JSON line each.")
    dialogue_actions = dialogues.add_subparsers(dest="action", required=True)
    dialogue_list = dialogue_actions.add_parser(
        "list", help="Transcripts matching a filter, oldest first."
    )
    dialogue_list.add_argument(
        "filter", nargs="?", default="", help='As on the transcript page: "run=12&outcome=solved".'
    )
    export = dialogue_actions.add_parser(
        "export", help="Transcripts with their turns and labels, as the export page's JSONL."
    )
    export.add_argument("filter", nargs="?", default="", help="As for list.")
    export.add_argument(
        "--include-private", action="store_true", help="What the teacher privately saw, too."
    )

    tasks = kinds.add_parser("tasks", help="Task sets: list, import a file, generate.")
    task_actions = tasks.add_subparsers(dest="action", required=True)
    task_list = task_actions.add_parser("list", help="Task sets: id, version, tasks, name.")
    task_list.add_argument("query", nargs="?", default="", help="Search names and descriptions.")
    importing = task_actions.add_parser(
        "import", help="Import a file into a new task set; prints its id once imported."
    )
    importing.add_argument("file", help="JSONL, JSON or CSV, or Dialab's own JSONL export.")
    importing.add_argument("--name", default="", help="The new set's name (default: the file's).")
    importing.add_argument(
        "--format", default="", choices=["", "jsonl", "json", "csv", "dialab"],
        help="Default: from the file's name.",
    )  # fmt: skip
    importing.add_argument(
        "--map", action="append", default=[], metavar="FIELD=COLUMN",
        help="Which key or column fills a task field (repeat): --map prompt=question "
        "--map answer=solution. Default: the import page's guess.",
    )  # fmt: skip
    importing.add_argument("--verifier-kind", default="", help="For records without one.")
    importing.add_argument("--domain", default="", help="For records without one.")
    generating = task_actions.add_parser(
        "generate", help="Generate a task set from a procedural family; prints its id."
    )
    generating.add_argument("family", help="e.g. guess_number, arithmetic, maze.")
    generating.add_argument("--count", type=int, default=100)
    generating.add_argument("--seed", type=int, default=0)
    generating.add_argument("--name", default="")
    generating.add_argument(
        "--knob", action="append", default=[], metavar="NAME=VALUE",
        help="A family setting (repeat); the others take their defaults.",
    )  # fmt: skip
    for command in (importing, generating):
        command.add_argument("--no-wait", action="store_true", help="Print the job, not the set.")
        command.add_argument("--timeout", type=float, help="Give up waiting after this long.")
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    commands: dict[str, Any] = {"runs": _runs, "dialogues": _dialogues, "tasks": _tasks}
    try:
        with Dialab(args.url, args.token) as lab:
            status: int = commands[args.command](lab, args)
    except (DialabError, ValueError, OSError) as error:
        print(f"dialab: {error}", file=sys.stderr)
        return 1
    return status


if __name__ == "__main__":
    sys.exit(main())
