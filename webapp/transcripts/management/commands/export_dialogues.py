"""Export transcripts with their turns, verdicts and labels.

    manage.py export_dialogues --format jsonl --out dialogues.jsonl       # "-" for stdout
    manage.py export_dialogues --format hf --out exports/unsolved \\
        --filter "outcome=unsolved&run=3" [--include-private]

``--filter`` is the transcript list's query string (copy it from the address bar, or from the
browser's export page). Unlike the list page, the command refuses a parameter it does not know
or cannot read, so a typing mistake never exports everything.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.transcripts import exporting


class Command(BaseCommand):
    help = (
        "Export transcripts (turns, verdicts, submitted labels) as JSONL or as a Hugging Face "
        "dataset saved to disk. Private context is left out unless --include-private."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--format", choices=("jsonl", "hf"), default="jsonl")
        parser.add_argument(
            "--out",
            required=True,
            help='A file for jsonl ("-": stdout), a new or empty directory for hf.',
        )
        parser.add_argument(
            "--filter",
            default="",
            help='The transcript list\'s query string, e.g. "outcome=unsolved&run=3".',
        )
        parser.add_argument(
            "--include-private",
            action="store_true",
            help="Include task references, private context and verifier details.",
        )
        parser.add_argument("--chunk-size", type=int, default=exporting.EXPORT_CHUNK)
        parser.add_argument("--no-progress", action="store_true", help="No progress bar.")

    def handle(self, *args: Any, **options: Any) -> None:
        query = options["filter"].lstrip("?")
        unknown = exporting.unknown_params(query)
        if unknown:
            raise CommandError(f"Unknown filter parameter(s): {', '.join(unknown)}")
        form = exporting.filter_form(query)
        if form.notes:
            raise CommandError("Bad filter: " + "; ".join(form.notes))
        if options["chunk_size"] < 1:
            raise CommandError("--chunk-size must be at least 1")
        filters = form.filters()
        out = options["out"]
        if options["format"] == "hf" and out == "-":
            raise CommandError("--format hf needs a directory for --out")
        target = Path(out)
        occupied = target.exists() and (not target.is_dir() or any(target.iterdir()))
        if options["format"] == "hf" and occupied:
            raise CommandError(f"{out} exists and is not an empty directory")
        total = exporting.export_count(filters=filters)

        from tqdm import tqdm

        with tqdm(
            total=total,
            unit="dialogue",
            file=sys.stderr,
            disable=options["no_progress"] or None,  # None: off when stderr is not a terminal
            desc=f"exporting {options['format']}",
        ) as bar:
            count = self._export(options, filters, out, on_record=lambda: bar.update(1))
        where = "stdout" if out == "-" else out
        private = "with" if options["include_private"] else "without"
        self.stderr.write(f"Exported {count} dialogues to {where} ({private} private context).")

    def _export(self, options: dict[str, Any], filters: Any, out: str, on_record: Any) -> int:
        include_private, chunk_size = options["include_private"], options["chunk_size"]
        if options["format"] == "hf":
            return exporting.save_hf_dataset(
                filters=filters,
                path=out,
                include_private=include_private,
                chunk_size=chunk_size,
                on_record=on_record,
            )
        lines = exporting.jsonl_lines(
            filters=filters, include_private=include_private, chunk_size=chunk_size
        )
        count = 0
        if out == "-":
            for line in lines:
                self.stdout.write(line, ending="")
                count += 1
                on_record()
            return count
        # Written beside the target and renamed at the end: a failed export leaves no half file.
        target = Path(out)
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.partial")
        try:
            with partial.open("w", encoding="utf-8") as handle:
                for line in lines:
                    handle.write(line)
                    count += 1
                    on_record()
            partial.replace(target)
        finally:
            partial.unlink(missing_ok=True)
        return count
