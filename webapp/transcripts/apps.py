from django.apps import AppConfig


class TranscriptsConfig(AppConfig):
    name = "webapp.transcripts"
    label = "transcripts"
