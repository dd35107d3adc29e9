from django.apps import AppConfig


class DemoConfig(AppConfig):
    """Registered for the ``demo_project`` management command."""

    name = "webapp.demo"
    label = "demo"
