from django.apps import AppConfig


class DialoguesConfig(AppConfig):
    name = "webapp.dialogues"
    label = "dialogues"
