from __future__ import annotations

from django.apps import AppConfig

from webapp.core.queues import JobWaiting


class TasksConfig(AppConfig):
    name = "webapp.tasks"
    label = "tasks"

    def interactive_jobs_waiting(self, limit: int) -> list[JobWaiting]:
        """Imports, generations and Try it checks no worker has taken yet, oldest first
        (``webapp.core.queues.interactive_jobs_waiting``)."""
        from webapp.tasks.models import TaskImport
        from webapp.tasks.selectors import probes_waiting

        imports = TaskImport.objects.filter(status=TaskImport.Status.PENDING)
        probes = probes_waiting()
        return [
            JobWaiting(job.task_set_name, job.get_source_display(), job.created_at)
            for job in imports.order_by("created_at")[:limit]
        ] + [
            JobWaiting(f"{probe.task} of {probe.task.task_set}", "Try it", probe.created_at)
            for probe in probes.select_related("task__task_set").order_by("created_at")[:limit]
        ]

    def interactive_jobs_stalled(self, limit: int) -> list[JobWaiting]:
        """Try it checks whose worker died (``webapp.core.queues.interactive_jobs_stalled``)."""
        from webapp.tasks.models import VerifierProbe

        probes = VerifierProbe.stalled().select_related("task__task_set").order_by("last_sign")
        return [
            JobWaiting(f"{probe.task} of {probe.task.task_set}", "Try it", probe.last_seen_at)
            for probe in probes[:limit]
        ]
