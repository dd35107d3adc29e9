"""Mounted at task-sets/ (next to webapp.tasks.urls): imports and the JSONL export."""

from django.urls import path

from webapp.tasks import import_views

urlpatterns = [
    path("imports/new/", import_views.task_import_start, name="task_import_start"),
    path("imports/<int:pk>/", import_views.task_import_detail, name="task_import_detail"),
    path("imports/<int:pk>/map/", import_views.task_import_map, name="task_import_map"),
    path("imports/<int:pk>/live/", import_views.task_import_live, name="task_import_live"),
    path("<int:pk>/export.jsonl", import_views.task_set_export, name="task_set_export"),
]
