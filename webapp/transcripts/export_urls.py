"""Mounted at dialogues/export/: transcript exports."""

from django.urls import path

from webapp.transcripts import export_views

urlpatterns = [
    path("", export_views.export_options, name="dialogue_export"),
    path("download/", export_views.export_download, name="dialogue_export_download"),
]
