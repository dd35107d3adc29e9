"""Send again the evaluation runs that no worker will otherwise play (see workers.recovery)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from workers.recovery import recover_runs


class Command(BaseCommand):
    help = (
        "Resume runs whose worker died (running, heartbeat older than three heartbeats) and send "
        "queued runs that never reached the broker. Safe to run at any time, e.g. from cron: "
        "a run can only be claimed by one worker."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--all-queued",
            action="store_true",
            help="Send every queued run again, e.g. after the broker lost its messages "
            "(a Redis restart without persistence). Duplicates are harmless.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        recovery = recover_runs(all_queued=options["all_queued"])
        self.stdout.write(
            f"dispatched {len(recovery.dispatched)} run(s) {recovery.dispatched}; "
            f"failed {len(recovery.failed)} {recovery.failed}; "
            f"closed as cancelled {len(recovery.cancelled)} {recovery.cancelled}"
        )
        if recovery.next_check_in is not None:
            self.stdout.write(
                "some runs are still running with a fresh heartbeat; run this again in "
                f"{recovery.next_check_in.total_seconds():.0f} s if their worker is gone"
            )
