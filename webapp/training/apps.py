from __future__ import annotations

from django.apps import AppConfig

from webapp.core.queues import JobWaiting


class TrainingConfig(AppConfig):
    name = "webapp.training"
    label = "training"
    verbose_name = "Training"

    def interactive_jobs_waiting(self, limit: int) -> list[JobWaiting]:
        """Training previews no worker has taken yet, oldest first
        (``webapp.core.queues.interactive_jobs_waiting``)."""
        from webapp.training.selectors import previews_waiting

        previews = previews_waiting()
        return [
            JobWaiting(preview.base_model.name, "training preview", preview.created_at)
            for preview in previews.select_related("base_model").order_by("created_at")[:limit]
        ]

    def interactive_jobs_stalled(self, limit: int) -> list[JobWaiting]:
        """Training previews whose worker died
        (``webapp.core.queues.interactive_jobs_stalled``)."""
        from webapp.training.models import TrainingPreview

        previews = TrainingPreview.stalled().select_related("base_model").order_by("last_sign")
        return [
            JobWaiting(preview.base_model.name, "training preview", preview.last_seen_at)
            for preview in previews[:limit]
        ]
