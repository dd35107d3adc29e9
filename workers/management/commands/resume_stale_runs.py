"""Send again the evaluation runs, imports, Try it checks and previews that no worker will
otherwise finish (see workers.recovery)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from workers.recovery import (
    expire_person_turns,
    recover_imports,
    recover_interactive_jobs,
    recover_runs,
    resend_interactive_jobs,
    sooner,
)


class Command(BaseCommand):
    help = (
        "Resume runs whose worker died (running, heartbeat older than three heartbeats) and send "
        "queued runs that never reached the broker; send again the task imports whose worker "
        "is gone, and the Try it checks and training previews whose worker died; end the "
        "dialogues whose turn waited for a person past its deadline. Safe to run at any time, "
        "e.g. from cron: a run or an import can only be claimed by one worker."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--all-queued",
            action="store_true",
            help="Send every queued run again, and every interactive job no worker has taken "
            "(imports, Try it checks, training previews), e.g. after the broker lost its "
            "messages (a Redis restart without persistence). Duplicates are harmless.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        imports = recover_imports()
        self.stdout.write(f"sent again {len(imports)} import(s) whose worker is gone {imports}")
        jobs = recover_interactive_jobs()
        self.stdout.write(
            f"sent again {len(jobs.sent)} Try it check(s) or preview(s) whose worker died "
            f"{jobs.sent}; failed {len(jobs.failed)} {jobs.failed}"
        )
        if options["all_queued"]:
            waiting = resend_interactive_jobs()
            self.stdout.write(f"sent again {len(waiting)} waiting interactive job(s) {waiting}")
        expired = expire_person_turns()
        self.stdout.write(f"ended {expired} dialogue(s) whose person did not answer in time")
        recovery = recover_runs(all_queued=options["all_queued"])
        self.stdout.write(
            f"dispatched {len(recovery.dispatched)} run(s) {recovery.dispatched}; "
            f"failed {len(recovery.failed)} {recovery.failed}; "
            f"closed as cancelled {len(recovery.cancelled)} {recovery.cancelled}"
        )
        next_check_in = sooner(recovery.next_check_in, jobs.next_check_in)
        if next_check_in is not None:
            self.stdout.write(
                "some jobs are still running with a fresh heartbeat; run this again in "
                f"{next_check_in.total_seconds():.0f} s if their worker is gone"
            )
