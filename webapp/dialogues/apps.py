from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_save


class DialoguesConfig(AppConfig):
    name = "webapp.dialogues"
    label = "dialogues"

    def ready(self) -> None:
        from webapp.models_registry.models import ModelSpec

        post_save.connect(_copy_student_name, sender=ModelSpec, dispatch_uid="student_name_copy")


def _copy_student_name(sender: Any, instance: Any, created: bool, **kwargs: Any) -> None:
    """Keep the copy of a student model's name on its dialogues (the list sorts on it) right if
    a model is ever renamed; the pages offer no rename, so this is a guard."""
    if created:
        return
    from webapp.dialogues.models import Dialogue

    Dialogue.objects.filter(run__student=instance).exclude(student_name=instance.name).update(
        student_name=instance.name
    )
