from django.apps import AppConfig


class ForksConfig(AppConfig):
    name = "webapp.forks"
    label = "forks"
