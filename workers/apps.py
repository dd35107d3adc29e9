from django.apps import AppConfig


class WorkersConfig(AppConfig):
    """Registered with Django only for the management commands that need model code."""

    name = "workers"
    label = "workers"
